"""WGSL helper functions emitted (once, before the entry point) by kernels that need them. (Signed %,
float -> int, fmod, pow, the log of subnormals and float division never by a +0.0 are written on the IR
before:
passes/legalize_numerics.py.)"""
from __future__ import annotations

# WGSL's fma() only promises the accuracy of ``a * b + c`` (two roundings; lavapipe really
# rounds twice), while the kernel language's fma is fused like C's fmaf. The helper computes
# the product exactly as p + e (Dekker: a bit-mask split, which no multiply-add contraction
# can disturb, makes every partial product exact), adds c with Knuth's TwoSum and rounds
# once at the end. Where that scheme could overflow or underflow, it uses fma().
FMA_F32 = """\
fn pk_fma(a: f32, b: f32, c: f32) -> f32 {
    let p = a * b;
    let ah = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
    let bh = bitcast<f32>(bitcast<u32>(b) & 0xfffff000u);
    let al = a - ah;
    let bl = b - bh;
    let e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    let s = p + c;
    let v = s - p;
    let t = (p - (s - v)) + (c - v);
    let ok = abs(p) < 1.0e38f && abs(p) > 1.0e-20f && abs(c) < 1.0e38f;
    return select(fma(a, b, c), s + (t + e), ok);
}
"""

# Signed abs wrapping (abs(MIN) == MIN) as 0 - x in u32: NVIDIA's Vulkan driver took naga's SAbs as
# never negative and gave abs(MIN) % 25 = 23, not -23 (fuzz case fz1000416).
ABS_I32 = """\
fn pk_abs_i32(x: i32) -> i32 {
    return bitcast<i32>(select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0i));
}
"""

HELPERS = {"pk_abs_i32": ABS_I32, "pk_fma": FMA_F32}
