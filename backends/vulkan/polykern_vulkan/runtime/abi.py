"""The launch ABI of one kernel, read from ``FunctionInfo.attrs`` and its SPIR-V binary.

See the backend README ("Launch ABI"). Everything here is checked when a module is created or
loaded, so a malformed artifact is an :class:`ArtifactError` before any Vulkan call:
``entry``, ``bindings`` (every buffer argument once, bindings 0..n-1), ``push_constants``
(every scalar argument, aligned slots inside ``push_constant_size``), a SPIR-V binary with the
right magic and a whole number of words, whose capabilities (scanned from the binary, the
truth for what the device must support) are known.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Dict, FrozenSet, Sequence, Tuple

from polykern.errors import ArtifactError
from polykern.module import FunctionInfo

from ..spirv_spec import CAPABILITY, EXECUTION_MODE, MAGIC, Op
from .coopmat import needs_of

__all__ = ["KernelABI", "SLOT_FORMATS"]

#: push-constant slot type -> struct format (little-endian)
SLOT_FORMATS = {"i32": "<i", "u32": "<I", "f32": "<f", "i64": "<q", "u64": "<Q", "f64": "<d"}
_CAP_NAMES = {v: k for k, v in CAPABILITY.items()}


def _pairs(text: str, what: str, kernel: str):
    for item in filter(None, text.split(",")):
        if "=" not in item:
            raise ArtifactError(f"vulkan kernel '{kernel}': malformed {what} entry {item!r}")
        yield item.split("=", 1)


def _instructions(binary: bytes, kernel: str):
    """(opcode, operand words) of every instruction (raises ArtifactError for a malformed binary)."""
    if len(binary) < 20 or len(binary) % 4:
        raise ArtifactError(f"vulkan kernel '{kernel}': the SPIR-V binary has {len(binary)} bytes "
                            "(not a whole number of 32-bit words with a header)")
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    if words[0] != MAGIC:
        raise ArtifactError(f"vulkan kernel '{kernel}': not a little-endian SPIR-V binary (magic {words[0]:#010x})")
    i = 5
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or i + count > len(words):
            raise ArtifactError(f"vulkan kernel '{kernel}': truncated SPIR-V instruction at word {i}")
        yield opcode, words[i + 1:i + count]
        i += count


def scan_capabilities(binary: bytes, kernel: str) -> FrozenSet[str]:
    """Capabilities declared by a SPIR-V module (raises ArtifactError for a malformed binary)."""
    caps = set()
    for opcode, ops in _instructions(binary, kernel):
        if opcode == Op.Capability:
            if not ops or ops[0] not in _CAP_NAMES:
                raise ArtifactError(f"vulkan kernel '{kernel}': unknown SPIR-V capability {ops[:1]}")
            caps.add(_CAP_NAMES[ops[0]])
    return frozenset(caps)


def scan_preserved_widths(binary: bytes, kernel: str) -> Tuple[int, ...]:
    """Float widths the module asks NaN/inf/-0 preservation for (SignedZeroInfNanPreserve modes)."""
    mode = EXECUTION_MODE["SignedZeroInfNanPreserve"]
    widths = set()
    for opcode, ops in _instructions(binary, kernel):
        if opcode == Op.ExecutionMode and len(ops) >= 2 and ops[1] == mode:
            if len(ops) != 3 or ops[2] not in (16, 32, 64):
                raise ArtifactError(f"vulkan kernel '{kernel}': malformed SignedZeroInfNanPreserve mode {list(ops)}")
            widths.add(ops[2])
    return tuple(sorted(widths))


def _matrix_needs(kernel: str, attrs) -> Tuple:
    try:
        return tuple(needs_of(attrs))
    except ValueError:
        raise ArtifactError(f"vulkan kernel '{kernel}': bad cooperative_matrix attribute "
                            f"{attrs.get('cooperative_matrix')!r}") from None


@dataclass(frozen=True)
class KernelABI:
    name: str
    entry: str
    spirv_version: Tuple[int, int]
    bindings: Tuple[int, ...]  # per argument: binding, or -1 for a scalar
    push: Tuple[Tuple[int, int, str], ...]  # (argument index, byte offset, slot type)
    push_size: int
    capabilities: FrozenSet[str]
    shared_bytes: int
    preserved_widths: Tuple[int, ...] = ()  # float widths whose NaN/inf/-0 the shader needs kept
    matrix: Tuple = ()  # (M, N, K, (A, B, C, result)) of its matrix fragments (runtime/coopmat.py)
    fma_fused_spec: bool = False  # specialization constant 4 picks GLSL Fma over the f64 fma (lower_arith.py)

    @property
    def buffer_count(self) -> int:
        return sum(1 for b in self.bindings if b >= 0)

    @classmethod
    def parse(cls, info: FunctionInfo, binary: bytes) -> "KernelABI":
        k, a = info.name, info.attrs
        missing = [key for key in ("entry", "bindings", "push_constants", "push_constant_size", "spirv")
                   if key not in a]
        if missing:
            raise ArtifactError(f"vulkan kernel '{k}': launch ABI attributes missing: {', '.join(missing)}")
        index = {arg.name: i for i, arg in enumerate(info.args)}
        bindings = [-1] * len(info.args)
        for name, b in _pairs(a["bindings"], "bindings", k):
            if name not in index or not info.args[index[name]].is_buffer or not b.isdigit():
                raise ArtifactError(f"vulkan kernel '{k}': bad binding {name}={b}")
            bindings[index[name]] = int(b)
        buffers = [i for i, arg in enumerate(info.args) if arg.is_buffer]
        if sorted(bindings[i] for i in buffers) != list(range(len(buffers))) or any(bindings[i] < 0 for i in buffers):
            raise ArtifactError(f"vulkan kernel '{k}': bindings {a['bindings']!r} do not cover the buffer arguments")
        try:
            size = int(a["push_constant_size"])
        except ValueError:
            raise ArtifactError(f"vulkan kernel '{k}': bad push_constant_size {a['push_constant_size']!r}") from None
        push = []
        for item in filter(None, a["push_constants"].split(",")):
            try:
                name, rest = item.split("@")
                off_text, slot = rest.split(":")
                off = int(off_text)
            except ValueError:
                raise ArtifactError(f"vulkan kernel '{k}': malformed push constant {item!r}") from None
            width = int(slot[1:]) // 8 if slot in SLOT_FORMATS else 0
            if name not in index or info.args[index[name]].is_buffer or not width or off % width \
                    or not 0 <= off <= size - width:
                raise ArtifactError(f"vulkan kernel '{k}': bad push constant {item!r} (size {size})")
            push.append((index[name], off, slot))
        if sorted(i for i, _, _ in push) != [i for i, arg in enumerate(info.args) if not arg.is_buffer]:
            raise ArtifactError(f"vulkan kernel '{k}': push constants {a['push_constants']!r} do not cover the "
                                "scalar arguments")
        try:
            major, minor = (int(x) for x in a["spirv"].split("."))
        except ValueError:
            raise ArtifactError(f"vulkan kernel '{k}': bad spirv version {a['spirv']!r}") from None
        return cls(k, a["entry"], (major, minor), tuple(bindings), tuple(push), size,
                   scan_capabilities(binary, k), info.shared_bytes, scan_preserved_widths(binary, k),
                   _matrix_needs(k, a), "fma_fused=4" in a.get("spec_ids", "").split(","))

    def pack_push_constants(self, values: Sequence) -> bytes:
        """Scalars (NumPy scalars of the declared types, in argument order) -> the push block.
        i8/i16 travel sign-extended as i32, u8/u16/bool as u32, f16 as f32 (exact)."""
        data = bytearray(self.push_size)
        for i, off, slot in self.push:
            v = values[i]
            struct.pack_into(SLOT_FORMATS[slot], data, off, float(v) if slot[0] == "f" else int(v))
        return bytes(data)


def parse_module(fmt: str, fmap: Dict[str, FunctionInfo], shaders: Dict[str, bytes]) -> Dict[str, KernelABI]:
    if fmt != "spirv":
        raise ArtifactError(f"vulkan module: payload format {fmt!r} is not 'spirv'")
    extra = sorted(set(shaders) - set(fmap))
    missing = sorted(set(fmap) - set(shaders))
    if missing or extra:
        raise ArtifactError(f"vulkan module: shaders and kernels differ (no shader for {missing}, "
                            f"no kernel for {extra})")
    return {name: KernelABI.parse(info, shaders[name]) for name, info in fmap.items()}
