"""What a launchable kernel looks like to a runtime: :class:`FunctionInfo` and its :class:`ArgInfo`.

A leaf module (it imports only the IR's types and nodes): the byte format (``wire``), the
modules (``module``) and the runtimes all describe kernels with these, without importing
each other. ``wire`` encodes them (docs/internals.md "Byte format"); ``function_schema``
says which launch tags and attributes a reader accepts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Tuple

from ..ir import nodes
from ..ir.types import BufferType, ScalarType, scalar_from_code

__all__ = ["ArgInfo", "FunctionInfo", "ARG_KINDS"]

#: An argument's kind, by its code in the byte format (0 scalar, 1 buffer).
ARG_KINDS = ("scalar", "buffer")


@dataclass(frozen=True)
class ArgInfo:
    """One kernel parameter: a scalar or a 1-D buffer of a DLPack-coded element type."""

    name: str
    kind: str  # "scalar" | "buffer"
    code: int
    bits: int
    lanes: int = 1
    readonly: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"argument names are non-empty strings, got {self.name!r}")
        if self.kind not in ARG_KINDS:
            raise ValueError(f"argument {self.name!r}: kind must be 'scalar' or 'buffer', got {self.kind!r}")
        scalar_from_code(self.code, self.bits)  # ValueError for unknown types
        if not isinstance(self.lanes, int) or not 1 <= self.lanes <= 0xFFFF:
            raise ValueError(f"argument {self.name!r}: lanes must be in 1..65535, got {self.lanes!r}")
        if not isinstance(self.readonly, bool):
            raise ValueError(f"argument {self.name!r}: readonly must be a bool")
        if self.readonly and self.kind != "buffer":
            raise ValueError(f"argument {self.name!r}: only buffers can be readonly")

    @property
    def dtype(self) -> ScalarType:
        """The scalar type (of the value, or of a buffer's elements)."""
        return scalar_from_code(self.code, self.bits)

    @property
    def is_buffer(self) -> bool:
        return self.kind == "buffer"

    @property
    def type_str(self) -> str:
        return str(BufferType(self.dtype, self.readonly)) if self.is_buffer else str(self.dtype)

    @classmethod
    def scalar(cls, name: str, dtype: ScalarType) -> "ArgInfo":
        return cls(name, "scalar", dtype.code, dtype.bits)

    @classmethod
    def buffer(cls, name: str, dtype: ScalarType, readonly: bool = False) -> "ArgInfo":
        return cls(name, "buffer", dtype.code, dtype.bits, 1, readonly)

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "type": self.type_str, "code": self.code,
                "bits": self.bits, "lanes": self.lanes, "readonly": self.readonly}


@dataclass(frozen=True)
class FunctionInfo:
    """Everything a runtime needs to launch a kernel without the compiler."""

    name: str
    args: Tuple[ArgInfo, ...] = ()
    launch_tags: Tuple[str, ...] = ()
    shared_bytes: int = 0
    attrs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"function names are non-empty strings, got {self.name!r}")
        args = tuple(self.args)
        if not all(isinstance(a, ArgInfo) for a in args):
            raise ValueError(f"function {self.name!r}: args must be ArgInfo instances")
        names = [a.name for a in args]
        if len(set(names)) != len(names):
            raise ValueError(f"function {self.name!r}: duplicate argument names {names}")
        tags = tuple(self.launch_tags)
        if not all(isinstance(t, str) and t for t in tags):
            raise ValueError(f"function {self.name!r}: launch tags are non-empty strings")
        if not isinstance(self.shared_bytes, int) or not 0 <= self.shared_bytes < (1 << 64):
            raise ValueError(f"function {self.name!r}: shared_bytes must be a u64, got {self.shared_bytes!r}")
        attrs = dict(self.attrs)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in attrs.items()):
            raise ValueError(f"function {self.name!r}: attrs map str -> str")
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "launch_tags", tuple(sorted(set(tags))))
        object.__setattr__(self, "attrs", dict(sorted(attrs.items())))

    def __hash__(self) -> int:
        return hash((self.name, self.args, self.launch_tags, self.shared_bytes, tuple(self.attrs.items())))

    def signature(self) -> str:
        return f"{self.name}({', '.join(f'{a.name}: {a.type_str}' for a in self.args)})"

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "signature": self.signature(), "args": [a.to_dict() for a in self.args],
                "launch_tags": list(self.launch_tags), "shared_bytes": self.shared_bytes,
                "attrs": dict(self.attrs)}

    @classmethod
    def from_ir(cls, fn) -> "FunctionInfo":
        """Describe an ``ir.Function``: parameters, special registers used, shared memory, barrier use."""
        args = []
        for p in fn.params:
            if isinstance(p.type, BufferType):
                args.append(ArgInfo.buffer(p.name, p.type.elem, p.type.readonly))
            elif isinstance(p.type, ScalarType):
                args.append(ArgInfo.scalar(p.name, p.type))
            else:
                raise ValueError(f"function {fn.name!r}: parameter {p.name!r} has unsupported type {p.type}")
        tags = set()
        atomics = False
        for e in nodes.walk_all_exprs(fn.body):
            if isinstance(e, nodes.SpecialReg):
                tags.add(f"{e.kind}.{e.dim}")
            elif isinstance(e, nodes.Atomic):
                atomics = True
        shared = sum(a.elem.nbytes * a.size for a in fn.shared_arrays.values())
        attrs = dict(fn.attrs)
        if nodes.uses_barrier(fn):
            attrs["uses_barrier"] = "1"
        if atomics:
            attrs["uses_atomics"] = "1"
        if any(isinstance(s, nodes.Print) for s in nodes.walk_stmts(fn.body)):
            attrs["uses_print"] = "1"  # pk.debug_print: a runtime flushes what the kernel printed
        return cls(fn.name, tuple(args), tuple(sorted(tags)), shared, attrs)
