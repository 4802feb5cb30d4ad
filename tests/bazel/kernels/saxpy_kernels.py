"""Kernels compiled by //tests:cross_compile with the CPU-only compiler (--config=cpu, via a
configuration transition)."""
import polykern as pk
from polykern import Buffer, f32, i32


@pk.kernel
def saxpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@pk.kernel
def scale(n: i32, s: f32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = y[i] * s
