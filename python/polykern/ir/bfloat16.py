"""bfloat16 numbers on the host: the one definition of the rounding every backend reproduces.

A ``bf16`` is the upper half of an IEEE f32 (1 sign, 8 exponent, 7 fraction bits): every bf16 is exactly
an f32, and ``f32 -> bf16`` rounds to nearest, ties to even, on the f32's bits (docs/language.md
"bf16"): ``(bits + 0x7FFF + ((bits >> 16) & 1)) >> 16``; a NaN stays a NaN (its sign and upper payload
kept, the quiet bit set: ``(bits >> 16) | 0x0040``), overflow rounds to inf, subnormals round like any
other value (nothing is flushed). NumPy has no bfloat16, so a bf16 array is a view of ``uint16`` bits as
:data:`BF16_DTYPE` (a one-field record dtype: it compares unequal to ``uint16``, so neither is ever
taken for the other), or an ``ml_dtypes.bfloat16`` array (recognized by its name, not imported).
"""
from __future__ import annotations

import numpy as np

#: the NumPy dtype of bf16 arrays in polykern: the ``uint16`` bits as one record field named "bf16"
BF16_DTYPE = np.dtype([("bf16", "<u2")])
#: largest finite bf16 (0x7F7F)
BF16_MAX = float(np.uint32(0x7F7F0000).view(np.float32))
#: smallest normal bf16 (0x0080), the same as f32's
BF16_TINY = float(np.finfo(np.float32).tiny)


def is_bf16_dtype(dt) -> bool:
    """A dtype holding bf16 elements: :data:`BF16_DTYPE` or ``ml_dtypes.bfloat16``."""
    dt = np.dtype(dt)
    return dt == BF16_DTYPE or (dt.name == "bfloat16" and dt.itemsize == 2)  # ml_dtypes: optional


def f32_to_bits(x) -> np.ndarray:
    """f32 values (any float array or scalar, first rounded to f32) -> bf16 bits (uint16), RNE."""
    with np.errstate(over="ignore", invalid="ignore"):
        b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    rounded = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return np.where(nan, (b >> 16) | 0x0040, rounded).astype(np.uint16)


def bits_to_f32(bits) -> np.ndarray:
    """bf16 bits (uint16, or an ``ml_dtypes.bfloat16`` array) -> the exact f32 values."""
    a = np.asarray(bits)
    if a.dtype.itemsize != 2 or not (a.dtype.kind in "ui" or is_bf16_dtype(a.dtype)):
        raise TypeError(f"bf16 bits are 16-bit integers (or pk.BF16_DTYPE, ml_dtypes.bfloat16), got {a.dtype}")
    if not a.dtype.isnative:  # big-endian bits ('>u2'): the values, not the bytes
        a = a.astype(np.uint16)
    a = a if a.flags.c_contiguous else a.copy()
    return (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_value(x: float) -> float:
    """A Python float rounded to f32 (RNE) and then to bf16 (RNE): the bf16 that ``bf16(x)`` gives."""
    return float(bits_to_f32(f32_to_bits(np.float64(x)))[()])


def bf16_array(x) -> np.ndarray:
    """Make an array a launch accepts for ``Buffer[bf16]``: a ``uint16`` array (bf16 bits) or an
    ``ml_dtypes.bfloat16`` array is viewed as :data:`BF16_DTYPE` (no copy: kernel writes land in it); a
    float array is rounded (RNE, through f32) to new bits."""
    a = np.asarray(x)
    if a.dtype == np.uint16 or is_bf16_dtype(a.dtype):
        return a.view(BF16_DTYPE)
    if a.dtype.kind == "f":
        return f32_to_bits(a).view(BF16_DTYPE)
    raise TypeError(f"bf16_array() takes uint16 bits, a float array or an ml_dtypes.bfloat16 array, "
                    f"got {a.dtype}")


#: the f32 values of a bf16 array (:data:`BF16_DTYPE`, uint16 bits or ``ml_dtypes.bfloat16``)
bf16_to_f32 = bits_to_f32
