"""Real dispatches of our SPIR-V on a Vulkan device (Mesa lavapipe on CPU-only hosts) through the
polykern Vulkan runtime (polykern_vulkan.runtime): saxpy, the emitter's own semantics
(short-circuit, atomics with CAS loops, bool buffers, narrow push constants, C integer division,
casts of every type pair). The cross-backend conformance suite runs on this runtime from
tests/test_conformance.py (skip list: polykern_vulkan/conformance.py).
"""

import numpy as np
import pytest

import polykern as pk
from polykern import backends
from polykern.ir.types import bool_, f16, f32, f64
from polykern.testing import tier_skip

import vulkan_kernels as K

RUNTIME_REASON = backends.runtime_reason("vulkan")
pytestmark = tier_skip.skipif("lavapipe", RUNTIME_REASON, reason=f"no Vulkan runtime here: {RUNTIME_REASON}")


def build(kernels, target="vulkan"):
    mod = pk.build(kernels if isinstance(kernels, list) else [kernels], targets=[target]).on("vulkan")
    assert mod.is_runnable, f"expected the real Vulkan runtime module, got {mod!r}"
    return mod


def test_saxpy_dispatch():
    mod = build(K.saxpy)
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    mod["saxpy"](n, 2.0, x, y, grid=(n + 63) // 64, block=64)
    np.testing.assert_array_equal(y, 2 * x + 1)


def test_saxpy_on_spirv_1_0_and_1_5():
    for version in ("1.0", "1.5"):
        mod = build(K.saxpy, f"vulkan -spirv={version}")
        x = np.arange(100, dtype=np.float32)
        y = np.zeros(100, dtype=np.float32)
        mod["saxpy"](100, 3.0, x, y, grid=4, block=32)
        np.testing.assert_array_equal(y, 3 * x)


def _control_ref(v):
    if v < 0:
        acc = -1
    elif v == 0:
        acc = 100
    else:
        acc = 0
        k = 0
        while True:
            k += 1
            if k > 50:
                break
            if k % 3 == 0:
                continue
            acc += k
            if acc > v * 4:
                break
    for j in range(10, 0, -3):
        acc += j
        for m in range(j):
            if m == 2:
                break
            acc += m
    return acc


def test_control_flow():
    mod = build(K.control)
    x = np.array([-5, 0, 1, 2, 7, 30, 1000, 3], dtype=np.int32)
    out = np.full(10, -99, np.int32)
    mod["control"](len(x), x, out, grid=1, block=16)
    np.testing.assert_array_equal(out[:8], [_control_ref(int(v)) for v in x])
    np.testing.assert_array_equal(out[8:], -99)


def test_early_return_in_loop():
    mod = build(K.early_return_in_loop)
    x = np.array([0, 5, 63, 100], dtype=np.int32)
    out = np.zeros(4, np.int32)
    mod["early_return_in_loop"](4, x, out, grid=1, block=8)
    np.testing.assert_array_equal(out, [0, 10, 126, -63])


def test_short_circuit():
    mod = build(K.short_circuit)
    n = 9
    x = np.array([1, -1, 2, 0, 5, 1, 0, 3, 1], dtype=np.int32)
    y = np.array([0, 1, 0, 2, 0, 0, 7, 0, 0], dtype=np.int32)
    out = np.zeros(n, np.int32)
    mod["short_circuit"](n, x, y, out, grid=1, block=16)
    expect = [(x[i] > 0) * 1 + (y[i] == 0) * 10 + (i % 2 == 0 or i > 5) * 100 for i in range(n)]
    np.testing.assert_array_equal(out, expect)


def test_shared_reduce_and_geometry():
    mod = build(K.shared_reduce)
    n = 200
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(4, np.float32)
    mod["shared_reduce"](n, x, out, grid=4, block=64)
    np.testing.assert_array_equal(out, [x[g * 64:(g + 1) * 64].sum() for g in range(4)])
    geo = build(K.geometry)
    grid, block = (2, 3, 2), (4, 2, 3)
    size = np.prod(grid) * np.prod(block)
    out = np.full(size, -1, np.int32)
    geo["geometry"](out, grid=grid, block=block)
    z, y, x = np.meshgrid(np.arange(6), np.arange(6), np.arange(8), indexing="ij")
    expect = (z % 3) * 10000 + (y // 2) * 100 + 3
    np.testing.assert_array_equal(out.reshape(6, 6, 8), expect)


def test_local_arrays():
    mod = build(K.local_arrays)
    x = np.array([0, 10, -3], dtype=np.int32)
    out = np.zeros(3, np.int32)
    mod["local_arrays"](3, x, out, grid=1, block=4)
    expect = [sum((v + 7 - j) * j for j in range(8) if (7 - j) % 2 == 0) for v in x]
    np.testing.assert_array_equal(out, expect)


def test_atomics_i32_and_u32():
    mod = build(K.atomics_i32)
    n = 100
    x = np.arange(-20, 80, dtype=np.int32)
    acc = np.array([0, 1 << 30, -(1 << 30), -1, 0, 0, 0, 0, 0], dtype=np.int32)
    old = np.zeros(n, np.int32)
    mod["atomics_i32"](n, x, acc, old, grid=4, block=32)
    assert acc[0] == x.sum() and acc[1] == x.min() and acc[2] == x.max()
    # xchg: every old value is distinct and together with the final value they are -1 and 0..n-1
    assert sorted(list(old) + [acc[3]]) == [-1] + list(range(n))
    assert 1 <= acc[4] <= n  # exactly one CAS from 0 succeeded
    np.testing.assert_array_equal(acc[5:9], [np.sum((x & 3) == k) for k in range(4)])
    mu = build(K.atomics_u32)
    xu = np.array([5, 3_000_000_000, 7, 9], dtype=np.uint32)
    accu = np.array([0, 0xFFFFFFFF, 0], dtype=np.uint32)
    mu["atomics_u32"](4, xu, accu, grid=1, block=4)
    np.testing.assert_array_equal(accu, [np.uint32(xu.sum(dtype=np.uint64) % 2**32), 5, 3_000_000_000])


def test_float_atomics_via_cas_loop():
    mod = build(K.atomics_f32)
    n = 256
    x = (np.arange(n, dtype=np.float32) - 100) * 0.5
    acc = np.array([0, 1e30, -1e30, 0, 1.0, 0], dtype=np.float32)
    mod["atomics_f32"](n, x, acc, grid=4, block=64)
    np.testing.assert_array_equal(acc, [x.sum(), x.min(), x.max(), 2.5, 3.5, x.sum()])


@pytest.mark.parametrize("T", [pk.i64, pk.u64, f64], ids=str)
def test_64bit_atomics(T):
    mod = build(K.make_atomics_64(T), "vulkan -features=default,int64_atomics")
    x = np.arange(1, 65, dtype=T.numpy) * (2**33 if not T.is_float else 0.25)
    acc = np.zeros(2, T.numpy)
    mod["atomics_64"](64, x, acc, grid=2, block=32)
    assert acc[0] == x.sum() and acc[1] in x


def _rng_values(T, n, rng):
    if T == bool_:
        return rng.integers(0, 2, n).astype(bool)
    if T.is_float:
        return (rng.integers(-40, 40, n) * 0.25).astype(T.numpy)
    if T.is_signed:
        return rng.integers(-100, 100, n).astype(T.numpy)
    return rng.integers(0, 200, n).astype(T.numpy)


@pytest.mark.parametrize("T", K.ALL_TYPES, ids=str)
def test_casts_every_pair(T):
    rng = np.random.default_rng(7)
    n = 64
    a = _rng_values(T, n, rng)
    mod = build(K.make_casts(T))
    outs = [np.zeros(n, U.numpy) for U in K.ALL_TYPES]
    mod["casts"](n, a, *outs, grid=1, block=64)
    for U, got in zip(K.ALL_TYPES, outs):
        mask = np.ones(n, bool)
        if T.is_float and U.is_int and not U.is_signed:
            mask = a >= 0  # negative float -> unsigned is undefined in C
        with np.errstate(invalid="ignore"):
            expect = a.astype(U.numpy) if not (U == bool_) else (a != 0)
        np.testing.assert_array_equal(got[mask], expect[mask], err_msg=f"{T} -> {U}")


def _c_div(x, y):
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


@pytest.mark.parametrize("T", K.ALL_TYPES, ids=str)
def test_arith_every_type(T):
    rng = np.random.default_rng(11)
    n = 48
    a, b = _rng_values(T, n, rng), _rng_values(T, n, rng)
    if T != bool_:
        b[b == 0] = 3
        if T.is_int:
            b = np.abs(b.astype(np.int64)).astype(T.numpy) % T.bits if T.bits > 8 else b
            b[b == 0] = 3
    s = True if T == bool_ else T.numpy.type(3)
    mod = build(K.make_arith(T))
    if T == bool_:
        out = np.zeros(n * 8, bool)
        mod["arith"](n, s, a, b, out, grid=1, block=64)
        out = out.reshape(n, 8)
        expect = np.stack([a & b, a | b, ~a, a == b, a != b, a if s else b, a ^ b, (a & b) | s], axis=1)
        np.testing.assert_array_equal(out, expect)
        return
    out = np.zeros(n * 16, T.numpy)
    cmp = np.zeros(n * 6, np.int32)
    mod["arith"](n, s, a, b, out, cmp, grid=1, block=64)
    out, cmp = out.reshape(n, 16), cmp.reshape(n, 6)
    np.testing.assert_array_equal(cmp, np.stack([a < b, a <= b, a > b, a >= b, a == b, a != b], 1).astype(np.int32))
    dt = T.numpy
    with np.errstate(all="ignore"):
        if T.is_float:
            wide = np.float64
            xa, xb, xs = a.astype(wide), b.astype(wide), float(s)
            expect = {0: xa + xb * xs, 1: xa - xb, 2: xa * xb, 3: xa / xb, 4: np.floor(xa / xb), 5: np.fmod(xa, xb),
                      6: -xa, 7: np.minimum(xa, xb), 8: np.maximum(xa, xb), 9: np.abs(xa),
                      10: np.floor(xa) + np.ceil(xb), 11: xa * xb + xs,
                      12: np.sqrt(np.abs(xa)) + 1 / np.sqrt(np.abs(xb) + 1), 13: np.where(xa < xb, xa, xb)}
            tol = 4e-3 if T == f16 else 1e-6
            for j, e in expect.items():
                np.testing.assert_allclose(out[:, j].astype(wide), e.astype(dt).astype(wide), rtol=tol, atol=tol,
                                           err_msg=f"{T} op {j}")
        else:
            bits = T.bits
            sh = (b.astype(np.int64) & (bits - 1)).astype(dt)
            q = np.array([_c_div(int(x), int(y)) for x, y in zip(a, b)], dtype=object)
            expect = {0: a + b + s, 1: a - b, 2: a * b, 3: q.astype(np.int64).astype(dt),
                      4: (a.astype(np.int64) - q.astype(np.int64) * b.astype(np.int64)).astype(dt),
                      5: a & b, 6: a | b, 7: a ^ b, 8: np.left_shift(a, sh), 9: np.right_shift(a, sh), 10: ~a,
                      11: -a if T.is_signed else a, 12: np.minimum(a, b), 13: np.maximum(a, b),
                      14: np.abs(a), 15: np.where(a < b, a, b)}
            for j, e in expect.items():
                np.testing.assert_array_equal(out[:, j], np.asarray(e).astype(dt), err_msg=f"{T} op {j}")


def test_nan_comparisons_and_float_to_bool():
    mod = build(K.make_arith(f32))
    a = np.array([np.nan, 1.0, 2.0], np.float32)
    b = np.array([1.0, np.nan, 2.0], np.float32)
    out, cmp = np.zeros(48, np.float32), np.zeros(18, np.int32)
    mod["arith"](3, f32(1), a, b, out, cmp, grid=1, block=4)
    cmp = cmp.reshape(3, 6)
    np.testing.assert_array_equal(cmp[:2], [[0, 0, 0, 0, 0, 1]] * 2)  # ordered, except != (unordered)
    np.testing.assert_array_equal(out.reshape(3, 16)[:2, 7], [1.0, 1.0])  # min returns the non-NaN operand
    casts = build(K.make_casts(f32))
    outs = [np.zeros(3, U.numpy) for U in K.ALL_TYPES]
    casts["casts"](3, np.array([np.nan, 0.0, -0.0], np.float32), *outs, grid=1, block=4)
    np.testing.assert_array_equal(outs[0], [True, False, False])  # NaN is truthy, like C


def test_math_builtins():
    for T, tol in ((f32, 2e-5), (f16, 4e-3)):
        mod = build(K.make_math(T))
        x = np.linspace(0.25, 3.0, 32).astype(T.numpy)
        out = np.zeros(32 * 8, T.numpy)
        mod["math32"](32, x, out, grid=1, block=32)
        xd = x.astype(np.float64)
        expect = np.stack([np.exp(xd), np.exp2(xd), np.log(xd), np.log2(xd), np.sin(xd), np.cos(xd), np.tanh(xd),
                           np.power(xd, xd)], 1)
        np.testing.assert_allclose(out.reshape(32, 8).astype(np.float64), expect, rtol=tol, atol=tol)
