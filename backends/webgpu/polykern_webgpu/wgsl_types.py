"""WGSL type names, literals, and the checks that refuse what WGSL cannot express.

WGSL has bool, i32, u32, f32 and (behind ``enable f16;``) f16. Everything else
in the kernel language (f64, i64, u64, i8, u8, i16, u16) is refused at compile
time with a :class:`KernelTypeError` that names webgpu and the feature and, when
the IR carries one, points at the user's source.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from polykern.errors import KernelTypeError, SourceLoc
from polykern.ir import nodes as ir
from polykern.ir.types import ArrayType, BufferType, ScalarType

WGSL_TYPE = {"bool": "bool", "i32": "i32", "u32": "u32", "f32": "f32", "f16": "f16"}

_WHY = {
    "f64": "WGSL has no 64-bit floating-point type; use f32",
    "i64": "WGSL has no 64-bit integer types; use i32",
    "u64": "WGSL has no 64-bit integer types; use u32",
    "i8": "WGSL has no 8-bit integer types; use i32",
    "u8": "WGSL has no 8-bit integer types; use u32",
    "i16": "WGSL has no 16-bit integer types; use i32",
    "u16": "WGSL has no 16-bit integer types; use u32",
    "bf16": "WGSL has no bfloat16 type and no 16-bit integers to hold its bits; use f32 (or two bf16 "
            "packed in a u32)",
}

F16_HINT = ("f16 needs the WGSL 'shader-f16' extension: compile for target "
            "'webgpu -shader_f16=true' (the device must offer the 'shader-f16' feature)")


def refuse(feature: str, why: str, loc: Optional[SourceLoc]) -> KernelTypeError:
    return KernelTypeError(f"webgpu does not support {feature}: {why}", loc)


def check_scalar(t: ScalarType, what: str, loc: Optional[SourceLoc], f16_ok: bool) -> None:
    if t.name in _WHY:
        raise refuse(f"{t.name} ({what})", _WHY[t.name], loc)
    if t.name == "f16" and not f16_ok:
        raise refuse(f"f16 ({what})", F16_HINT, loc)
    if t.name not in WGSL_TYPE:  # vector lanes or a type added later
        raise refuse(f"{t} ({what})", "no WGSL equivalent", loc)


def check_function(fn: ir.Function, f16_ok: bool) -> None:
    """Raise KernelTypeError for the first construct WGSL cannot express."""
    for p in fn.params:
        if isinstance(p.type, BufferType):
            check_scalar(p.type.elem, f"buffer argument '{p.name}'", fn.loc, f16_ok)
            if p.type.elem.is_bool:
                raise refuse(f"bool buffers (argument '{p.name}')",
                             "bool is not host-shareable in WGSL storage buffers; use Buffer[u32]",
                             fn.loc)
        else:
            check_scalar(p.type, f"argument '{p.name}'", fn.loc, f16_ok)
    for name, t in fn.locals.items():
        check_scalar(t, f"variable '{name}'", _first_assign_loc(fn, name) or fn.loc, f16_ok)
    for name, a in fn.arrays.items():
        check_scalar(a.elem, f"{a.scope} array '{name}'", fn.loc, f16_ok)
    for s in ir.walk_stmts(fn.body):
        for top in ir.stmt_exprs(s):
            for e in ir.walk_expr(top):
                loc = e.loc or s.loc or fn.loc
                if isinstance(e.type, ScalarType):
                    check_scalar(e.type, "expression", loc, f16_ok)
                if isinstance(e, ir.Atomic):
                    _check_atomic(e, fn, loc)


def _check_atomic(e: ir.Atomic, fn: ir.Function, loc) -> None:
    t = e.base.type
    elem = t.elem
    what = f"atomic_{e.op} on {elem} {'buffer' if isinstance(t, BufferType) else 'array'} '{e.base.name}'"
    if isinstance(t, BufferType) and t.readonly:
        raise KernelTypeError(f"{what}: the buffer is declared readonly", loc)
    if isinstance(t, ArrayType) and t.scope == "local":
        return  # private memory: emitted as a plain read-modify-write
    if elem.name in ("i32", "u32"):
        return
    if elem.name == "f32":
        return  # emulated with a compare-exchange loop on the bits (atomic<u32>)
    raise refuse(what, "WGSL atomics are atomic<i32>/atomic<u32> (f32 is emulated); "
                 f"there is no way to update {elem} atomically", loc)


def _first_assign_loc(fn: ir.Function, name: str) -> Optional[SourceLoc]:
    for s in ir.walk_stmts(fn.body):
        if (isinstance(s, ir.Assign) and s.name == name) or (isinstance(s, ir.For) and s.var == name):
            return s.loc
    return None


# ---------------------------------------------------------------- literals

_F32_SPECIAL = {"inf": "0x7f800000u", "-inf": "0xff800000u", "nan": "0x7fc00000u"}


def _float_text(x) -> str:
    if x == 0 or 1e-4 <= abs(float(x)) < 1e16:
        return np.format_float_positional(x, unique=True, trim="0")
    return np.format_float_scientific(x, unique=True, trim="0")


def literal(value, t: ScalarType) -> str:
    """A WGSL literal of type ``t`` with exactly the value C would hold."""
    if t.is_bool:
        return "true" if value else "false"
    if t.name == "i32":
        v = int(value)
        v = (v + 2**31) % 2**32 - 2**31
        return "(-2147483647i - 1i)" if v == -2**31 else f"{v}i"
    if t.name == "u32":
        return f"{int(value) % 2**32}u"
    if t.name in ("f32", "f16"):
        with np.errstate(over="ignore"):
            x = (np.float32 if t.name == "f32" else np.float16)(float(value))
        if not np.isfinite(x):
            key = "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
            bits = f"bitcast<f32>({_F32_SPECIAL[key]})"
            return bits if t.name == "f32" else f"f16({bits})"
        return _float_text(x) + ("f" if t.name == "f32" else "h")
    raise refuse(str(t), "no WGSL literal form", None)
