"""The launch ABI of a polykern WGSL shader: bindings and the scalar-argument block.

Shared by the code generator (which writes it into ``FunctionInfo.attrs``) and
the runtime (which reads it back from the artifact, never from the compiler).

- Bind group 0. The k-th *buffer* argument (counting buffers only, in argument
  order) is ``@binding(k)``: ``var<storage, read>`` if readonly, else
  ``var<storage, read_write>``.
- All scalar arguments live in one uniform struct ``PkArgs`` at
  ``@binding(<number of buffers>)``; absent when the kernel has no scalars.
  Every scalar takes one 4-byte slot, in argument order, at offset 4*slot.
  Host encodings: i32 -> i32, u32 -> u32, f32 -> f32, bool -> u32 (0/1),
  f16 -> f32 (widened on the host; converted back exactly in the shader).
  The block is padded to a multiple of 16 bytes (uniform buffer rule).
- Kernels that use global_id, group_id or num_groups also read a uniform
  ``PkLaunch { group_base: vec4<u32>, grid: vec4<u32> }`` (32 bytes) at the
  binding after the scalar block (``launch_binding``). ``grid`` is the whole
  launch grid; ``group_base`` is the first workgroup of this dispatch. Grids
  beyond the device's per-dimension dispatch limit (65535 by default) run as
  several dispatches, each with its own group_base, so the CUDA grid semantics
  (up to 2**31-1 groups per dimension) hold: group_id = group_base +
  workgroup_id, global_id = group_id * block + local_id.
- Block dimensions are the pipeline-overridable constants
  ``pk_block_x/y/z`` (``@workgroup_size(pk_block_x, pk_block_y, pk_block_z)``);
  the runtime builds one pipeline per (kernel, block).

attrs keys: ``entry``, ``buffer_bindings`` ("name:binding,..."),
``params_binding``, ``params_layout`` ("name:hosttype:offset,..."),
``params_size``, ``launch_binding``, ``workgroup_size`` ("override:pk_block_x,pk_block_y,pk_block_z"),
``atomic_buffers``, ``features`` (comma list of WebGPU device features).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Dict, List, Sequence

BLOCK_OVERRIDES = ("pk_block_x", "pk_block_y", "pk_block_z")
#: The pipeline override sizing a pk.shared_dynamic array (polykern/ir/dynamic_shared.py).
SHARED_SIZE_OVERRIDE = "pk_shared_size"
PARAMS_STRUCT = "PkArgs"
PARAMS_VAR = "pk_args"
LAUNCH_STRUCT = "PkLaunch"
LAUNCH_VAR = "pk_launch"
LAUNCH_SIZE = 32

# scalar type name -> host slot type in the uniform block
HOST_SLOT = {"i32": "i32", "u32": "u32", "f32": "f32", "bool": "u32", "f16": "f32"}
_PACK = {"i32": "<i", "u32": "<I", "f32": "<f"}


@dataclass(frozen=True)
class Slot:
    name: str  # the argument's (source) name
    arg_index: int  # position in the kernel's argument list
    host: str  # "i32" | "u32" | "f32"
    offset: int


def uniform_size(nslots: int) -> int:
    return ((4 * nslots + 15) // 16) * 16


def layout_attrs(arg_names: Sequence[str], arg_is_buffer: Sequence[bool],
                 arg_scalar_type: Sequence[str], needs_launch: bool) -> Dict[str, str]:
    """The ABI attrs of a kernel, from its argument list."""
    bindings: List[str] = []
    slots: List[str] = []
    nbuf = 0
    for name, is_buf, ty in zip(arg_names, arg_is_buffer, arg_scalar_type):
        if is_buf:
            bindings.append(f"{name}:{nbuf}")
            nbuf += 1
        else:
            slots.append(f"{name}:{HOST_SLOT[ty]}:{4 * len(slots)}")
    attrs = {"buffer_bindings": ",".join(bindings)}
    if slots:
        attrs["params_binding"] = str(nbuf)
        attrs["params_layout"] = ",".join(slots)
        attrs["params_size"] = str(uniform_size(len(slots)))
    if needs_launch:
        attrs["launch_binding"] = str(nbuf + bool(slots))
    return attrs


def pack_launch(group_base: Sequence[int], grid: Sequence[int]) -> bytes:
    return struct.pack("<8I", *group_base, 0, *grid, 0)


def parse_slots(attrs: Dict[str, str], scalar_arg_indices: Sequence[int]) -> List[Slot]:
    """Read ``params_layout`` back; ``scalar_arg_indices`` are the argument
    positions of the scalar arguments, in order. Raises ValueError if the
    recorded layout does not match the argument list."""
    text = attrs.get("params_layout", "")
    entries = [e for e in text.split(",") if e]
    if len(entries) != len(scalar_arg_indices):
        raise ValueError(f"params_layout lists {len(entries)} scalars, the kernel has "
                         f"{len(scalar_arg_indices)}")
    out = []
    for entry, idx in zip(entries, scalar_arg_indices):
        name, host, off = entry.rsplit(":", 2)
        if host not in _PACK or not off.isdigit():
            raise ValueError(f"bad params_layout entry {entry!r}")
        out.append(Slot(name, idx, host, int(off)))
    return out


def pack_scalars(slots: Sequence[Slot], values: Sequence, size: int) -> bytes:
    """Pack scalar argument values (already range-checked) into the uniform block."""
    buf = bytearray(size)
    for slot, value in zip(slots, values):
        if slot.host == "f32":
            v = float(value)
        else:
            v = int(value)
            if slot.host == "u32":
                v &= 0xFFFFFFFF
        struct.pack_into(_PACK[slot.host], buf, slot.offset, v)
    return bytes(buf)
