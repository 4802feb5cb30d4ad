"""bf16 in LLVM IR: values are ``i16`` bits (in registers and memory).

LLVM's ``bfloat`` type is not used: its ``fptrunc`` lowers to a libcall (``__truncsfbf2``) on targets
without bf16 conversion instructions, and the rounding must be exactly docs/language.md's "bf16" rule
on every target: kernels' conversions are written on the bits by passes/legalize_f16.py. The matrix
lowering (cpu/matrix.py) widens fragment elements itself, with ``bf16_to_f32``.
"""
from __future__ import annotations

from llvmlite import ir as ll

I32 = ll.IntType(32)


def bf16_to_f32(b: ll.IRBuilder, v: ll.Value) -> ll.Value:
    """Exact: the 16 bits become the upper half of the f32."""
    return b.bitcast(b.shl(b.zext(v, I32), ll.Constant(I32, 16)), ll.FloatType())
