"""bf16 in SPIR-V: values and buffers are u16 bits (Int16, 16-bit storage), converted with 32-bit
integer ops on the f32's bits.

SPV_KHR_bfloat16's BFloat16KHR encoding is not used: few drivers have it, and the rounding must be
docs/language.md's "bf16" rule (ir/bfloat16.py) everywhere: round to nearest even on the bits, a NaN
(tested on the bits: lavapipe may flush and fold float compares) keeps its sign and upper payload with
the quiet bit set. After passes/widen_bf16.py these two conversions are the only bf16 operations.
"""
from __future__ import annotations

from polykern.ir.types import bool_, f32, u16, u32

from .spirv_spec import Op


def from_bf16(lw, h: int) -> int:
    """u16 bits -> the exact f32."""
    f = lw.f
    wide = f.val(Op.UConvert, lw.ty(u32), h)
    return f.val(Op.Bitcast, lw.ty(f32), f.val(Op.ShiftLeftLogical, lw.ty(u32), wide, lw.u32c(16)))


def to_bf16(lw, x: int) -> int:
    """f32 -> u16 bits, rounded to nearest even."""
    f = lw.f
    uid = lw.ty(u32)
    bits = f.val(Op.Bitcast, uid, x)
    upper = f.val(Op.ShiftRightLogical, uid, bits, lw.u32c(16))
    lsb = f.val(Op.BitwiseAnd, uid, upper, lw.u32c(1))
    rounded = f.val(Op.ShiftRightLogical, uid,
                    f.val(Op.IAdd, uid, f.val(Op.IAdd, uid, bits, lw.u32c(0x7FFF)), lsb), lw.u32c(16))
    is_nan = f.val(Op.UGreaterThan, lw.ty(bool_), f.val(Op.BitwiseAnd, uid, bits, lw.u32c(0x7FFFFFFF)),
                   lw.u32c(0x7F800000))
    quiet = f.val(Op.BitwiseOr, uid, upper, lw.u32c(0x40))
    return f.val(Op.UConvert, lw.ty(u16), f.val(Op.Select, uid, is_nan, quiet, rounded))
