"""WGSL helper functions emitted (once, before the entry point) by kernels that need them."""
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

# Signed % without naga's OpSRem/OpSMod (undefined for negative operands in Vulkan; NVIDIA computes
# an unsigned remainder): the remainder of the magnitudes (as u32, so |MIN| is exact) with the
# dividend's sign. x % 0 == 0 and MIN % -1 == 0 (polykern.numerics.int_rem).
REM_I32 = """\
fn pk_rem_i32(a: i32, b: i32) -> i32 {
    let ua = select(bitcast<u32>(a), 0u - bitcast<u32>(a), a < 0i);
    let ub = select(bitcast<u32>(b), 0u - bitcast<u32>(b), b < 0i);
    let r = select(ua % max(ub, 1u), 0u, ub == 0u);
    return bitcast<i32>(select(r, 0u - r, a < 0i));
}
"""

# Float -> int: WGSL's conversion saturates at the largest f32 below the bound (2147483520 for
# i32) and leaves NaN indeterminate; the language saturates exactly and sends NaN to 0
# (polykern.numerics.float_to_int). NaN is found from the bits (no optimizer may assume it away).
I32_FROM_F32 = """\
fn pk_i32_from_f32(x: f32) -> i32 {
    let nan = (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
    return select(select(i32(x), 2147483647i, x >= 2147483648.0f), 0i, nan);
}
"""

U32_FROM_F32 = """\
fn pk_u32_from_f32(x: f32) -> u32 {
    let nan = (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
    return select(select(u32(x), 4294967295u, x >= 4294967296.0f), 0u, nan);
}
"""

# pow with C99 Annex F special cases: WGSL's pow is undefined for x < 0 and for x == 0, y <= 0
# (lavapipe: pow(nan, 0.5) = 0, pow(-inf, 0.5) = nan). pow runs on |x|; zeros, infinities, NaN,
# negative x with an (odd) integer or a non-integer y, y == 0 and x == 1 are selected.
POW_F32 = """\
fn pk_pow_f32(x: f32, y: f32) -> f32 {
    let ax = abs(x);
    let inf = bitcast<f32>(0x7f800000u);
    let nan = bitcast<f32>(0x7fc00000u);
    let y_neg = y < 0.0f;
    let y_inf = (bitcast<u32>(y) & 0x7fffffffu) == 0x7f800000u;
    let x_inf = (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
    let any_nan = (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u || (bitcast<u32>(y) & 0x7fffffffu) > 0x7f800000u;
    var r = pow(ax, y);
    r = select(r, select(0.0f, inf, (ax < 1.0f) == y_neg), y_inf);
    r = select(r, select(0.0f, inf, y_neg), ax == 0.0f);
    r = select(r, select(inf, 0.0f, y_neg), x_inf);
    let y_int = floor(y) == y;
    let h = y * 0.5f;
    let y_odd = y_int && floor(h) != h;
    r = select(r, -r, (bitcast<u32>(x) & 0x80000000u) != 0u && y_odd);
    r = select(r, nan, x < 0.0f && !x_inf && !y_int);
    r = select(r, nan, any_nan);
    r = select(r, 1.0f, x == -1.0f && y_inf);
    return select(r, 1.0f, y == 0.0f || x == 1.0f);
}
"""

# Float % is C's fmod, exact (polykern.numerics); WGSL's % is x - y * trunc(x / y), which rounds
# (and gives NaN for x % inf). With t = |y| * 2^k the largest such t <= |x|, subtract t wherever it
# fits while halving t back down to |y|: every subtraction is exact (t <= r < 2t). Special cases
# are found from the bits. f16 uses it through f32 (exact: the remainder of two halves is a half).
FMOD_F32 = """\
fn pk_fmod_f32(x: f32, y: f32) -> f32 {
    let bx = bitcast<u32>(x) & 0x7fffffffu;
    let by = bitcast<u32>(y) & 0x7fffffffu;
    if bx >= 0x7f800000u || by > 0x7f800000u || by == 0u {
        return bitcast<f32>(0x7fc00000u);
    }
    if bx < by {
        return x;
    }
    let ax = bitcast<f32>(bx);
    let ay = bitcast<f32>(by);
    var t = ay;
    loop {
        let t2 = t + t;
        if t2 > ax {
            break;
        }
        t = t2;
    }
    var r = ax;
    loop {
        if r >= t {
            r = r - t;
        }
        if t == ay {
            break;
        }
        t = t * 0.5f;
    }
    return bitcast<f32>(bitcast<u32>(r) | (bitcast<u32>(x) & 0x80000000u));
}
"""

# log/log2 of an f32 subnormal: lavapipe keeps subnormals in arithmetic but not in its log
# (log(1e-40) = -88.02); such x is scaled by 2^24 first and 24 ln 2 (24) subtracted.
LOG_F32 = """\
fn pk_log_f32(x: f32) -> f32 {
    let small = x < 1.17549435e-38f;
    return select(log(x), log(x * 16777216.0f) - 16.635532f, small);
}
"""
LOG2_F32 = """\
fn pk_log2_f32(x: f32) -> f32 {
    let small = x < 1.17549435e-38f;
    return select(log2(x), log2(x * 16777216.0f) - 24.0f, small);
}
"""

# Signed abs wrapping (abs(MIN) == MIN) as 0 - x in u32: NVIDIA's Vulkan driver took naga's SAbs as
# never negative and gave abs(MIN) % 25 = 23, not -23 (fuzz case fz1000416).
ABS_I32 = """\
fn pk_abs_i32(x: i32) -> i32 {
    return bitcast<i32>(select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0i));
}
"""

# Float / with a divisor that is never +0.0: x / y = q = x / -|y| where y's sign bit is set, else -q.
# lavapipe (Mesa 22.3) dropped the store of x / y when it could derive y == +0.0 (a zero-initialized
# local) for a run-time x; it keeps x / -0.0. f16 divides in f32 (one rounding to f16 after it is exact).
DIV_F32 = """\
fn pk_div_f32(x: f32, y: f32) -> f32 {
    let q = x / -abs(y);
    return select(-q, q, bitcast<u32>(y) >= 0x80000000u);
}
"""

HELPERS = {"pk_abs_i32": ABS_I32, "pk_div_f32": DIV_F32, "pk_fma": FMA_F32, "pk_fmod_f32": FMOD_F32, "pk_log_f32": LOG_F32, "pk_log2_f32": LOG2_F32, "pk_rem_i32": REM_I32, "pk_i32_from_f32": I32_FROM_F32,
           "pk_u32_from_f32": U32_FROM_F32, "pk_pow_f32": POW_F32}
