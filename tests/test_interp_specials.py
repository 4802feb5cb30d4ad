"""The oracle's pow and fma on IEEE specials follow C99 Annex F, as numerics promises (specials=True) for
the CPU backends. Found by red-teaming bf16 (its math runs through f32): NumPy's scalar power takes sqrt
for an exponent of 0.5, so the oracle gave pow(-inf, 0.5) = NaN and pow(-0, 0.5) = -0 (C: +inf, +0) and
reported llvm's correct +inf as a disagreement; and fma's exact sum lost the sign of a zero
(fma(-0, 1, -0) is -0: 1 / fma(...) was +inf in the oracle, -inf on every backend)."""
import math

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, bf16, f32, f64
from polykern.testing.compare import compare
from polykern.testing.interp import interpret
from polykern.interpreter.values import math_fn

INF, NAN = math.inf, math.nan

# (x, y, C99's pow(x, y))
POW = [(-INF, 0.5, INF), (-0.0, 0.5, 0.0), (-INF, 3.0, -INF), (-INF, -3.0, -0.0), (-INF, -0.5, 0.0),
       (0.0, -3.0, INF), (-0.0, -3.0, -INF), (-0.0, -2.0, INF), (-0.0, 3.0, -0.0), (-8.0, 1 / 3, NAN),
       (-1.0, INF, 1.0), (1.0, NAN, 1.0), (NAN, 0.0, 1.0), (-2.0, 1025.0, -INF), (2.0, 1025.0, INF),
       (0.5, -INF, INF), (-0.5, INF, 0.0), (-1e300, 3.0, -INF), (2.0, -1100.0, 0.0)]


def _same(a, b):
    return (a != a and b != b) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@pytest.mark.parametrize("x,y,want", POW)
def test_pow_follows_c99(x, y, want):
    got = math_fn("pow", f64, "t")(x, y)
    assert _same(got, want), (x, y, got, want)


def test_fma_keeps_the_sign_of_a_zero():
    for t in (f64, f32):
        fma = math_fn("fma", t, "t")
        assert math.copysign(1, fma(-0.0, 1.0, -0.0)) < 0
        assert math.copysign(1, fma(2.0, 3.0, -6.0)) > 0  # an exact cancellation is +0
        assert math.copysign(1, fma(-0.0, 0.0, 0.0)) > 0


@pk.kernel
def specials(a: Buffer[f32, "readonly"], b: Buffer[f32, "readonly"], o: Buffer[f32], d: Buffer[f64],
             h: Buffer[bf16]):
    i = pk.global_id(0)
    o[i] = a[i] ** b[i]
    o[i + 4] = 1.0 / pk.fma(a[i + 4], 1.0, a[i + 4])
    d[i] = 1.0 / pk.fma(f64(a[i + 4]), 1.0, f64(a[i + 4]))
    h[i] = bf16(1.0) / pk.fma(bf16(a[i + 4]), bf16(1.0), bf16(a[i + 4]))


def test_llvm_agrees_with_the_oracle_on_specials():
    a = np.array([-np.inf, -0.0, -np.inf, 0.0, -0.0, 0.0, -0.0, 1.0], np.float32)
    b = np.array([0.5, 0.5, 3.0, -3.0, 0, 0, 0, 0], np.float32)
    args = lambda: [a, b, np.zeros(8, np.float32), np.zeros(4), pk.bf16_array(np.zeros(4, np.uint16))]  # noqa: E731
    got = args()
    pk.build([specials], ["llvm"])["specials"](*got, grid=1, block=4)
    oracle = interpret(specials, args(), grid=1, block=4)
    assert got[2].tolist() == [np.inf, 0.0, -np.inf, np.inf, -np.inf, np.inf, -np.inf, 0.5]
    assert got[3].tolist() == [-np.inf, np.inf, -np.inf, 0.5]
    result = compare(oracle, {"o": got[2], "d": got[3], "h": got[4]}, "llvm", names=["o", "d", "h"])
    assert not result.mismatches, [str(m) for m in result.mismatches]
    assert np.array_equal(oracle.buffers["h"].view(np.uint16), got[4].view(np.uint16))


@pk.kernel
def zero_max(a: Buffer[f32, "readonly"], o: Buffer[f32], p: Buffer[f32]):
    i = pk.global_id(0)
    x = a[i]
    o[i] = 1.0 / pk.max(x, -x)
    p[i] = 1.0 / pk.min(-x, x)


def test_min_max_of_opposite_zeros_leave_the_sign_open():
    """pk.max(+0, -0)'s sign is unspecified (C99 F.9.9.2): PoCL gives -0, the oracle +0, so 1 / max(x, -x)
    was +inf in the oracle and -inf on opencl (fuzz seed 440003000051). The elements it fed are not
    compared on any backend; the others still are."""
    from runtimes import runnable_targets

    a = np.array([0.0, 2.0, -0.0, -4.0], np.float32)
    oracle = interpret(zero_max, [a, np.zeros(4, np.float32), np.zeros(4, np.float32)], grid=1, block=4)
    assert oracle.unspecified["o"].tolist() == [True, False, True, False] and not oracle.unspecified_anywhere
    for target, kind, _ in runnable_targets():
        if target.split()[0] in ("webgpu", "hexagon"):
            continue
        o, p = np.zeros(4, np.float32), np.zeros(4, np.float32)
        pk.build([zero_max], [target]).on(kind)["zero_max"](a, o, p, grid=1, block=4)
        result = compare(oracle, {"o": o, "p": p}, target.split()[0], names=["o", "p"])
        assert result.ok and result.unchecked == 4, (target, [str(m) for m in result.mismatches])
        bad = o.copy()
        bad[1] = 0.25  # a checked element still is
        assert not compare(oracle, {"o": bad, "p": p}, target.split()[0], names=["o", "p"]).ok


@pk.kernel
def zero_subgroup(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    y[i] = 1.0 / pk.subgroup_min(x[i])
    y[i + 8] = 1.0 / pk.subgroup_max(x[i])


def test_subgroup_min_max_of_opposite_zeros_leave_the_sign_open():
    """The same for pk.subgroup_min/max over lanes holding +0 and -0 (llvm keeps the first lane's zero,
    the oracle -0 for min: 1 / subgroup_min was -inf in the oracle, +inf on llvm). Where the result is
    not such a zero (a lane holds -4) every element is still compared."""
    from runtimes import runnable_targets

    for x, unchecked in ((np.array([0.0, -0.0] * 4, np.float32), 16),
                         (np.array([0.0, -0.0, -4.0, 0.0] * 2, np.float32), 8)):
        oracle = interpret(zero_subgroup, [x, np.zeros(16, np.float32)], grid=1, block=8, subgroup_size=8)
        for target, kind, skips in runnable_targets():
            if target.split()[0] not in ("llvm", "vulkan"):
                continue
            y = np.zeros(16, np.float32)
            pk.build([zero_subgroup], [target]).on(kind)["zero_subgroup"](x, y, grid=1, block=8)
            result = compare(oracle, {"y": y}, target.split()[0], names=["y"])
            assert result.ok and result.unchecked == unchecked, (target, [str(m) for m in result.mismatches])


@pk.kernel
def zero_atomics(x: Buffer[f32, "readonly"], acc: Buffer[f32], y: Buffer[f32]):
    i = pk.global_id(0)
    pk.atomic_min(acc, 0, x[i])
    pk.atomic_max(acc, 1, x[i])
    y[i] = 1.0 / pk.atomic_min(acc, 2, x[i])  # the old value: a zero of either sign
    pk.atomic_add(acc, 3, 1.0)
    pk.barrier()
    if i == 0:
        y[8] = 1.0 / acc[0]
        y[9] = 1.0 / acc[1]
        y[10] = acc[3]


def test_atomic_min_max_of_opposite_zeros_leave_the_sign_open():
    """docs/language.md 7.2: float pk.atomic_min/max over zeros of both signs give a zero of either sign
    (llvm's compare-and-swap loop keeps the zero it holds, the oracle's min picked -0), to the element and
    to the old values read from it: 1 / acc[0] after a barrier was -inf in the oracle and +inf on llvm.
    What they may have fed is not compared on any backend (every load of acc: the analysis is per array);
    acc[3] still is, and atomics that meet no such pair (a -4 first) leave everything checked."""
    from runtimes import runnable_targets

    acc0 = np.array([1.0, -1.0, 1.0, 0.0], np.float32)
    for x, loose in ((np.array([0.0, -0.0] * 4, np.float32), 3 + 11), (np.array([-4.0, 5.0] * 4, np.float32), 0)):
        oracle = interpret(zero_atomics, [x, acc0.copy(), np.zeros(11, np.float32)], grid=1, block=8)
        assert sum(int(m.sum()) for m in oracle.unspecified.values()) == loose and not oracle.unspecified_anywhere
        for target, kind, _ in runnable_targets():
            if target.split()[0] in ("webgpu", "hexagon"):
                continue
            acc, y = acc0.copy(), np.zeros(11, np.float32)
            pk.build([zero_atomics], [target]).on(kind)["zero_atomics"](x, acc, y, grid=1, block=8)
            result = compare(oracle, {"acc": acc, "y": y}, target.split()[0], names=["acc", "y"])
            assert result.ok and result.unchecked == loose, (target, [str(m) for m in result.mismatches])
            bad = acc.copy()
            bad[3] = 7.0  # the count of adds is still compared
            assert not compare(oracle, {"acc": bad, "y": y}, target.split()[0], names=["acc", "y"]).ok
