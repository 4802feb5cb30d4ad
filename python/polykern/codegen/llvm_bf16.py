"""bf16 in LLVM IR: values are ``i16`` bits (in registers and memory), converted with integer code.

LLVM's ``bfloat`` type is not used: its ``fptrunc`` lowers to a libcall (``__truncsfbf2``) on targets
without bf16 conversion instructions, and the rounding must be exactly docs/language.md's "bf16" rule
on every target. After passes/widen_bf16.py the only bf16 operations left are these two conversions.
"""
from __future__ import annotations

from llvmlite import ir as ll

I16, I32 = ll.IntType(16), ll.IntType(32)


def bf16_to_f32(b: ll.IRBuilder, v: ll.Value) -> ll.Value:
    """Exact: the 16 bits become the upper half of the f32."""
    return b.bitcast(b.shl(b.zext(v, I32), ll.Constant(I32, 16)), ll.FloatType())


def f32_to_bf16(b: ll.IRBuilder, v: ll.Value) -> ll.Value:
    """Round to nearest, ties to even, on the bits; a NaN keeps its sign and upper payload, made quiet."""
    bits = b.bitcast(v, I32)
    upper = b.lshr(bits, ll.Constant(I32, 16))
    lsb = b.and_(upper, ll.Constant(I32, 1))
    rounded = b.lshr(b.add(b.add(bits, ll.Constant(I32, 0x7FFF)), lsb), ll.Constant(I32, 16))
    quiet = b.or_(upper, ll.Constant(I32, 0x40))
    return b.trunc(b.select(b.fcmp_unordered("uno", v, v), quiet, rounded), I16)
