"""Kernels written under ``from __future__ import annotations`` (every annotation is a string), for
tests/test_specialize.py: pk.dtype names in strings resolve the same way."""
from __future__ import annotations

import polykern as pk
from polykern import Buffer, i32


@pk.func
def twice(T: pk.dtype, v: T) -> T:
    return v + v


@pk.kernel
def future_scale(T: pk.dtype, K: pk.constexpr, n: i32, x: Buffer["T", "readonly"], y: Buffer[T]):
    i = pk.global_id(0)
    if i < n:
        acc: T = x[i] * T(K)
        y[i] = twice(T, acc)
