"""The LLVM types of the IR's scalar types, as every LLVM emitter writes them: ``bool`` is ``i1`` in
registers and ``i8`` in memory and in kernel parameters; ``f16`` is LLVM ``half``; ``bf16`` is its 16
bits (passes/legalize_f16.py converts them)."""
from __future__ import annotations

from llvmlite import ir as ll

from ..ir.types import ScalarType, bf16

__all__ = ["I1", "I8", "I16", "I32", "I64", "VOID", "value_type", "mem_type", "type_suffix"]

I1, I8, I16, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(16), ll.IntType(32), ll.IntType(64)
VOID = ll.VoidType()
_FLOAT_TYPES = {16: ll.HalfType(), 32: ll.FloatType(), 64: ll.DoubleType()}


def value_type(st: ScalarType) -> ll.Type:
    """The LLVM type of a value of scalar type ``st`` in registers."""
    if st.is_bool:
        return I1
    if st == bf16:  # bits (passes/legalize_f16.py converts them)
        return ll.IntType(16)
    if st.is_float:
        return _FLOAT_TYPES[st.bits]
    return ll.IntType(st.bits)


def mem_type(st: ScalarType) -> ll.Type:
    """The LLVM type of ``st`` in memory (bool is a byte)."""
    return I8 if st.is_bool else value_type(st)


def type_suffix(st: ScalarType) -> str:
    """Overload suffix of an intrinsic: f16/f32/f64, i1/i8/.../i64."""
    if st.is_float:
        return f"f{st.bits}"
    return "i1" if st.is_bool else f"i{st.bits}"

