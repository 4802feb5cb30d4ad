"""Integer -> f16 conversions of values whose known bits look "exact" to LLVM but lie past f16's range.

Fuzz case fz1000427 (H100, nvptx; also hexagon here): ``pk.sin(f16(a[g] << 31))`` gave -0.595 where the
oracle gives NaN. ``a << 31`` is 0 or -2**31, which f16 rounds to 0 or -inf; LLVM's instcombine folded
``fpext(fptrunc(sitofp x))`` to ``sitofp x to float`` because x has one significant bit, ignoring that
f16's exponent stops at 15, so the f32 operation saw -2**31. The LLVM backends now clamp the value to
+-65520 before it becomes f16 (passes/legalize_f16.py "clamp"; nvptx converts with an inline cvt). These kernels widen the f16 result back to f32 at
once (the shape of the fold) on every runtime here, for signed and unsigned sources of 16 to 64 bits.
"""
import numpy as np
import pytest

import polykern as pk
from polykern import numerics
from polykern import Buffer, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from runtimes import conversion_specials_checked, runnable_targets

INF = float("inf")


@pk.kernel
def shl_i32(a: Buffer[i32, "readonly"], o: Buffer[f32]):
    g = pk.global_id(0)
    o[g] = f32(f16(a[g] << 31))


@pk.kernel
def shl_u32(a: Buffer[u32, "readonly"], o: Buffer[f32]):
    g = pk.global_id(0)
    o[g] = f32(f16(a[g] << u32(31)))


@pk.kernel
def shl_i64(a: Buffer[i64, "readonly"], o: Buffer[f32]):
    g = pk.global_id(0)
    o[g] = f32(f16(a[g] << i64(40)))


@pk.kernel
def shl_u64(a: Buffer[u64, "readonly"], o: Buffer[f32]):
    g = pk.global_id(0)
    o[g] = f32(f16(a[g] << u64(17)))


@pk.kernel
def sin_of_i32(a: Buffer[i32, "readonly"], o: Buffer[f16]):
    """The fuzz case's own shape: an f16 math function of the converted value."""
    g = pk.global_id(0)
    o[g] = pk.sin(f16(a[g] << 31))


@pk.kernel
def from_u16(a: Buffer[u16, "readonly"], o: Buffer[f32]):
    g = pk.global_id(0)
    o[g] = f32(f16(a[g]))


@pk.kernel
def neg_u8(a: Buffer[u8, "readonly"], o: Buffer[f32]):
    """Narrow sources need no clamp, and must not get one of their own width (65520 as a u8 constant is
    240: fuzz case fz2000041 on the H200, where f16(u8 241) came out 240)."""
    g = pk.global_id(0)
    o[g] = f32(f16(-a[g]))


@pk.kernel
def from_i8_i16(a: Buffer[i16, "readonly"], o: Buffer[f32]):
    g = pk.global_id(0)
    o[g] = f32(f16(i8(a[g]))) + f32(f16(a[g] * i16(-1)))


@pk.kernel
def via_f32(a: Buffer[i32, "readonly"], o: Buffer[f32]):
    """The integer converted to f32 first: the f32 -> f16 rounding is clamped too (passes/legalize_f16.py:
    clamped on llvm, hexagon and Metal, on the bits on Vulkan and WebGPU); without it llvm, hexagon and WebGPU gave -2**31."""
    g = pk.global_id(0)
    o[g] = f32(f16(f32(a[g] << 31)))


@pk.kernel
def via_f64(a: Buffer[i32, "readonly"], o: Buffer[f32]):
    g = pk.global_id(0)
    o[g] = f32(f16(f64(a[g] << 31)))


@pk.kernel
def scaled(a: Buffer[i32, "readonly"], o: Buffer[f32]):
    """LLVM turns f32(x) * 32.0 into f32(x * 32) (no overflow: x is 0 or 4096), then folds as above: a
    clamp only where an int conversion meets the f16 one in polykern's IR would miss it (llvm gave 131072)."""
    g = pk.global_id(0)
    o[g] = f32(f16(f32((a[g] & 1) << 12) * 32.0))


@pk.kernel
def select_of_casts(a: Buffer[i32, "readonly"], o: Buffer[f32]):
    """A select of two int -> f32 conversions becomes one conversion of a select (llvm gave 2**30)."""
    g = pk.global_id(0)
    x = f32(a[g] << 31) if a[g] > 2 else f32(a[g] << 30)
    o[g] = f32(f16(x))


@pk.kernel
def through_shared(a: Buffer[i32, "readonly"], o: Buffer[f32]):
    """The f32 conversion stored to shared memory and read back: LLVM forwards the store, so the value
    rounded to f16 is the int conversion again (llvm and hexagon gave -2**31 without the f32 clamp; the
    same through a pk.local array)."""
    t = pk.shared(f32, 4)
    g = pk.local_id(0)
    t[g] = f32(a[g] << 31)
    o[g] = f32(f16(t[g]))


@pk.kernel
def round_f32(a: Buffer[f32, "readonly"], o: Buffer[f32]):
    """A finite f32 rounded to f16 and widened back: NVIDIA's driver folded WebGPU's f16(x) round trip into
    nothing (2049.0 stayed 2049.0 on the H200); WGSL now rounds on the bits (passes/legalize_f16.py)."""
    g = pk.global_id(0)
    o[g] = f32(f16(a[g]))


@pk.kernel
def round_i32(a: Buffer[i32, "readonly"], o: Buffer[f32]):
    g = pk.global_id(0)
    o[g] = f32(f16(a[g]))


# kernel, input dtype, inputs, expected f32 outputs (f16 rounding: every magnitude >= 65520 is inf)
CASES = {
    "round_f32": (round_f32, np.float32, [2049.0, 1.0001, -0.1, 65519.0], [2048.0, 1.0, float(np.float32(np.float16(-0.1))),
                                                                       65504.0]),
    "round_i32": (round_i32, np.int32, [2049, 2051, -2049, 4097], [2048.0, 2052.0, -2048.0, 4096.0]),
    "shl_i32": (shl_i32, np.int32, [0, 1, 2, 3], [0.0, -INF, 0.0, -INF]),
    "shl_u32": (shl_u32, np.uint32, [0, 1, 2, 3], [0.0, INF, 0.0, INF]),
    "shl_i64": (shl_i64, np.int64, [0, 1, -1, 2], [0.0, INF, -INF, INF]),
    "shl_u64": (shl_u64, np.uint64, [0, 1, 2, 3], [0.0, INF, INF, INF]),
    "from_u16": (from_u16, np.uint16, [65504, 65519, 65520, 65535], [65504.0, 65504.0, INF, INF]),
    "neg_u8": (neg_u8, np.uint8, [15, 13, 0, 255], [241.0, 243.0, 0.0, 1.0]),
    # i8(a) + f16(-a): i8(-32768) = 0 and -(-32768) wraps; i8(32767) = -1 and f16(-32767) = -32768;
    # i8(2063) = 15 and f16(-2063) = -2064 (a tie, to even); -1 + 1
    "from_i8_i16": (from_i8_i16, np.int16, [-32768, 32767, 2063, -1], [-32768.0, -32769.0, -2049.0, 0.0]),
    "via_f32": (via_f32, np.int32, [0, 1, 2, 3], [0.0, -INF, 0.0, -INF]),
    "via_f64": (via_f64, np.int32, [0, 1, 2, 3], [0.0, -INF, 0.0, -INF]),
    "scaled": (scaled, np.int32, [0, 1, 2, 3], [0.0, INF, 0.0, INF]),
    "select_of_casts": (select_of_casts, np.int32, [0, 1, 2, 3], [0.0, INF, -INF, -INF]),
    "through_shared": (through_shared, np.int32, [0, 1, 2, 3], [0.0, -INF, 0.0, -INF]),
}
FEATURES = {"round_f32": "f16", "round_i32": "f16", "shl_i32": "f16", "shl_u32": "f16", "shl_i64": "i64", "shl_u64": "i64", "from_u16": "i16", "neg_u8": "i8",
            "from_i8_i16": "i16", "via_f32": "f16", "via_f64": "f64", "scaled": "f16", "select_of_casts": "f16",
            "through_shared": "f16"}


def _params():
    out = []
    for target, kind, skips in runnable_targets():
        for name in CASES:
            reason = skips.get(FEATURES[name]) or skips.get("f16")
            marks = [pytest.mark.skip(reason=f"{target}: {reason}")] if reason else []
            out.append(pytest.param(target, kind, name, id=f"{kind}-{name}", marks=marks))
    return out


@pytest.mark.parametrize("target,kind,name", _params())
def test_conversion_rounds_to_f16_before_widening(target, kind, name):
    kern, dtype, inputs, want = CASES[name]
    a = np.array(inputs, dtype=dtype)
    o = np.full(4, 7.0, np.float32)
    pk.build([kern], targets=[target]).on(kind)[kern.name](a, o, grid=1, block=4)
    want = np.array(want, np.float32)
    compared = np.isfinite(want) | conversion_specials_checked(kind)
    np.testing.assert_array_equal(o[compared], want[compared], err_msg=f"{name} on {target}")


@pytest.mark.parametrize("target,kind", [pytest.param(t, k, id=k, marks=[pytest.mark.skip(
    reason=f"{t}: {s['f16']}")] if s.get("f16") else []) for t, k, s in runnable_targets()])
def test_f16_math_of_a_converted_overflow_is_nan(target, kind):
    a = np.array([0, 1, 2, 13], np.int32)
    o = np.zeros(4, np.float16)
    pk.build([sin_of_i32], targets=[target]).on(kind)["sin_of_i32"](a, o, grid=1, block=4)
    assert o[0] == 0 and o[2] == 0, o
    if conversion_specials_checked(kind):
        assert np.isnan(o[1]) and np.isnan(o[3]), f"sin(f16(-2**31)) is sin(-inf), NaN, on {target}: got {o}"
