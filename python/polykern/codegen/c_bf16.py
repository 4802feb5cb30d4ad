"""bf16 in the C-like dialects (CUDA C, OpenCL C, MSL): values are their 16 bits in an unsigned short,
converted to and from float by two helper functions built on the dialect's f32 <-> u32 bit casts.

After passes/widen_bf16.py these conversions are the only bf16 operations; the rounding is
docs/language.md's "bf16" rule (ir/bfloat16.py): round to nearest even on the bits, a NaN (tested on
the bits, so fast-math or flushing cannot hide it) keeps its sign and upper payload with the quiet bit set.
"""
from __future__ import annotations

from typing import Tuple

TO_BF16 = "pk_f2bf"
FROM_BF16 = "pk_bf2f"


def helper_sources(fn_qualifier: str, ushort: str, uint: str, f32_as_u32: str, u32_as_f32: str
                   ) -> Tuple[Tuple[str, str], Tuple[str, str]]:
    """((name, source) of float -> bf16 bits, (name, source) of bf16 bits -> float); ``f32_as_u32`` and
    ``u32_as_f32`` are the dialect's bit casts with ``{}`` for the operand."""
    to_src = (f"// f32 -> bf16: round to nearest even on the bits; NaN stays NaN (quiet bit set)\n"
              f"{fn_qualifier} {ushort} {TO_BF16}(float x) {{\n"
              f"    {uint} b = {f32_as_u32.format('x')};\n"
              f"    return ({ushort})((b & 0x7FFFFFFFu) > 0x7F800000u ? (b >> 16) | 0x40u\n"
              f"                      : (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);\n}}")
    from_src = (f"// bf16 -> f32: exact (the bits are the upper half)\n"
                f"{fn_qualifier} float {FROM_BF16}({ushort} h) {{ return {u32_as_f32.format(f'(({uint})h << 16)')}; }}")
    return (TO_BF16, to_src), (FROM_BF16, from_src)
