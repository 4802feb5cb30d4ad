"""Lowerings that must not depend on how a driver reads SPIR-V's gray areas (found on NVIDIA's driver,
which lavapipe does not reproduce):

- signed ``%``: the Vulkan environment leaves OpSRem/OpSMod undefined for negative operands (NVIDIA
  returns the unsigned remainder: -7 % 2 == 1). The emitted SPIR-V must contain neither opcode.
- narrowing to f16: NVIDIA folds an OpFConvert f32 -> f16 -> f32 pair into a no-op even when both
  are decorated NoContraction. The emitted SPIR-V must contain no OpFConvert producing a half, and
  the integer rounding that replaces it must be exact (ties to even, subnormals, overflow, NaN).

The opcode checks run everywhere; the exactness checks dispatch on a Vulkan device (lavapipe here).
"""
import struct

import numpy as np
import pytest

import polykern as pk
from polykern import backends
from polykern_vulkan.spirv_spec import Op
from polykern.testing import tier_skip

import vulkan_kernels as K

SIGNED = [pk.i8, pk.i16, pk.i32, pk.i64]
RUNTIME_REASON = backends.runtime_reason("vulkan")
needs_runtime = tier_skip.skipif("lavapipe", RUNTIME_REASON, reason=f"no Vulkan runtime here: {RUNTIME_REASON}")
OP_SMOD = 139


def instructions(binary: bytes):
    """[(opcode, operand words)] of a SPIR-V module."""
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    out, i = [], 5
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        assert count > 0, "malformed SPIR-V"
        out.append((opcode, words[i + 1:i + count]))
        i += count
    return out


def spirv(kernel, target="vulkan"):
    (binary,) = pk.build([kernel], targets=[target]).on("vulkan").payload.values()
    return instructions(binary)


def half_fconverts(insts):
    halves = {ops[0] for op, ops in insts if op == Op.TypeFloat and ops[1] == 16}
    return [ops for op, ops in insts if op == Op.FConvert and ops[0] in halves]


# ---------------------------------------------------------------- emitted SPIR-V


@pytest.mark.parametrize("T", SIGNED, ids=str)
def test_signed_remainder_emits_no_srem_or_smod(T):
    insts = spirv(K.make_divmod(T))
    opcodes = [op for op, _ in insts]
    assert Op.SRem not in opcodes and OP_SMOD not in opcodes
    assert Op.UMod in opcodes  # computed on the magnitudes
    assert Op.SDiv in opcodes  # `//` stays OpSDiv: Vulkan defines it for negative operands


def test_scan_sees_srem_in_a_module_that_has_it():
    """The check above can fail: turn the shader's OpUMod back into OpSRem and the scan finds it."""
    (binary,) = pk.build([K.make_divmod(pk.i32)], targets=["vulkan"]).on("vulkan").payload.values()
    words, i = list(struct.unpack(f"<{len(binary) // 4}I", binary)), 5
    while i < len(words):  # patch opcodes at instruction starts only
        if words[i] & 0xFFFF == Op.UMod:
            words[i] = (words[i] & 0xFFFF0000) | Op.SRem
        i += words[i] >> 16
    assert Op.SRem in [op for op, _ in instructions(struct.pack(f"<{len(words)}I", *words))]


@pytest.mark.parametrize("kernel,target", [
    (K.narrow_f16, "vulkan"), (K.narrow_f16, "vulkan -features=float16"),
    (K.narrow_f16_from_f64, "vulkan"), (K.make_casts(pk.f32), "vulkan"), (K.make_casts(pk.f64), "vulkan"),
    (K.make_arith(pk.f16), "vulkan"),  # f16 fma is computed in f32 and narrowed back
], ids=["f32", "f32_no_int16", "f64", "casts_f32", "casts_f64", "arith_f16"])
def test_narrowing_to_f16_emits_no_fconvert(kernel, target):
    insts = spirv(kernel, target)
    # the one exception: an f16 scalar argument, exact in its f32 push-constant slot
    pushed = sum(1 for p in kernel.ir.params if not p.is_buffer and p.type == pk.f16)
    assert len(half_fconverts(insts)) == pushed
    if "float16" in target:  # no Int16 needed: the bits go through a u32 bitcast to 2 x half
        assert 22 not in {ops[0] for op, ops in insts if op == Op.Capability}  # Int16
    # widening from f16 (exact) is still one OpFConvert
    assert any(op == Op.FConvert for op, _ in insts)


def test_widening_from_f16_keeps_fconvert():
    """Widening from f16 is exact and stays OpFConvert (to f32 and f64; an f16 -> int conversion widens to
    f32 first, passes/legalize_numerics.py), and nothing narrows to f16 with it."""
    insts = spirv(K.make_casts(pk.f16))
    halves = {ops[0] for op, ops in insts if op == Op.TypeFloat and ops[1] == 16}
    floats = {ops[0]: ops[1] for op, ops in insts if op == Op.TypeFloat}
    from_half = [ops for op, ops in insts if op == Op.FConvert]
    assert halves and {floats[ops[0]] for ops in from_half} == {32, 64} and half_fconverts(insts) == []


# ---------------------------------------------------------------- lavapipe (exact results)


def _c_rem(x, y):
    r = abs(x) % abs(y)
    return -r if x < 0 else r


def _c_div(x, y):
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


@needs_runtime
@pytest.mark.parametrize("T", SIGNED, ids=str)
def test_signed_divmod_every_sign(T):
    info = np.iinfo(T.numpy)
    lo, hi = int(info.min), int(info.max)
    pairs = [(-7, 2), (7, -2), (-7, -2), (7, 2), (-8, 2), (8, -2), (0, -3), (-1, 5), (1, -5), (-6, -6),
             (lo, 1), (lo, 3), (lo, lo), (lo, hi), (hi, lo), (-hi, hi), (hi, -1), (lo + 1, -1),
             (lo, 7), (lo, -7), (hi, 7), (hi, -7), (-5, lo), (5, lo)]
    rng = np.random.default_rng(5)
    a = np.concatenate([[p for p, _ in pairs], rng.integers(lo, hi, 200, endpoint=True)]).astype(T.numpy)
    b = np.concatenate([[r for _, r in pairs], rng.integers(lo, hi, 200, endpoint=True)]).astype(T.numpy)
    b[b == 0] = -3
    a[(a == lo) & (b == -1)] = lo + 1  # MIN // -1 overflows (undefined, as in C)
    n = len(a)
    q, r = np.zeros(n, T.numpy), np.zeros(n, T.numpy)
    mod = pk.build([K.make_divmod(T)], targets=["vulkan"]).on("vulkan")
    mod["divmod_"](n, a, b, q, r, grid=(n + 63) // 64, block=64)
    pa, pb = [int(v) for v in a], [int(v) for v in b]
    np.testing.assert_array_equal(r, np.array([_c_rem(x, y) for x, y in zip(pa, pb)], dtype=T.numpy))
    np.testing.assert_array_equal(q, np.array([_c_div(x, y) for x, y in zip(pa, pb)], dtype=T.numpy))


@needs_runtime
def test_min_remainder_minus_one_is_zero():
    """MIN % -1 is 0 (computed on magnitudes; OpSDiv-based a - (a/b)*b would overflow there)."""
    T = pk.i32
    a = np.array([np.iinfo(np.int32).min] * 2, np.int32)
    b = np.array([-1, 1], np.int32)
    q, r = np.zeros(2, np.int32), np.full(2, 99, np.int32)
    mod = pk.build([K.make_divmod(T)], targets=["vulkan"]).on("vulkan")
    mod["divmod_"](2, a, b, q, r, grid=1, block=2)
    np.testing.assert_array_equal(r, [0, 0])


def _special_f32():
    e = np.float32
    ulp16 = 2.0 ** -10
    sub = 2.0 ** -24  # smallest f16 subnormal
    vals = [
        0.0, -0.0, 1.0, -1.0, 65504.0, -65504.0,
        1 + ulp16 / 2, 1 + 3 * ulp16 / 2, -(1 + ulp16 / 2), 2048 + 1, 2048 + 3, 4096 + 2, 4096 + 6,  # ties
        np.nextafter(e(1 + ulp16 / 2), e(2)), np.nextafter(e(1 + ulp16 / 2), e(0)),
        65519.0, np.nextafter(e(65520), e(0)), 65520.0, -65520.0, 65536.0, 1e10, 3.4e38, np.inf, -np.inf,  # overflow
        # subnormals
        sub, -sub, sub / 2, 3 * sub / 2, 5 * sub / 2, np.nextafter(e(sub / 2), e(1)), sub / 4, 7 * sub / 4,
        2.0 ** -14, 2.0 ** -14 - sub / 2, 2.0 ** -14 - sub, np.nextafter(e(2.0 ** -14), e(0)), 1023.5 * sub,
        1e-8, 1e-30, 1e-40, -1e-45, np.finfo(np.float32).tiny,  # f32 subnormals round to zero
        np.nan, -np.nan, 953.3995361328125, -239.60853576660156,
    ]
    return np.array(vals, np.float32)


def _run_narrow(x, target="vulkan"):
    n = len(x)
    out, out_h = np.zeros(n, np.float32), np.zeros(n, np.float16)
    mod = pk.build([K.narrow_f16], targets=[target]).on("vulkan")
    mod["narrow_f16"](n, x, out, out_h, grid=(n + 255) // 256, block=256)
    return out, out_h


def _assert_f16_bits(got, x):
    with np.errstate(all="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(x)
    assert np.isnan(got[nan]).all(), "NaN must stay NaN"
    np.testing.assert_array_equal(np.signbit(got[nan]), np.signbit(x[nan]))
    np.testing.assert_array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


@needs_runtime
@pytest.mark.parametrize("target", ["vulkan", "vulkan -features=float16"])
def test_narrowing_to_f16_is_exact(target):
    x = _special_f32()
    out, out_h = _run_narrow(x, target)
    _assert_f16_bits(out_h, x)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, x.astype(np.float16).astype(np.float32))  # NaNs compare equal


@needs_runtime
def test_narrowing_to_f16_random_bit_patterns():
    rng = np.random.default_rng(16)
    bits = rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32)
    # bias toward the f16 range (|x| in 2**-26 .. 2**17), where rounding matters
    near = rng.integers(0x32800000, 0x48000000, 1 << 16, dtype=np.uint64).astype(np.uint32)
    near |= rng.integers(0, 2, near.size, dtype=np.uint64).astype(np.uint32) << 31
    x = np.concatenate([bits, near]).view(np.float32)
    _, out_h = _run_narrow(x)
    _assert_f16_bits(out_h, x)


@needs_runtime
def test_narrowing_f64_to_f16():
    """f64 -> f16 goes through f32; exact for these values (no f64 near-tie that double-rounds)."""
    x = np.concatenate([_special_f32().astype(np.float64), [1 + 2.0 ** -11, 1e300, -1e300, 1e-300, 2.0 ** -25]])
    out = np.zeros(len(x), np.float16)
    mod = pk.build([K.narrow_f16_from_f64], targets=["vulkan"]).on("vulkan")
    mod["narrow_f16_from_f64"](len(x), x, out, grid=1, block=64)
    _assert_f16_bits(out, x)
