"""Integer pk.min / pk.max / pk.abs at their edges, on every runtime present.

Found by the differential fuzzer (case fz3000000_opencl): in C, ``s * s`` of two u8 values is an int,
so OpenCL's overloaded ``min(int, uchar)`` was ambiguous and the program did not build. The result
must also be the minimum of the values wrapped to the IR type (not of the promoted ints).
``pk.abs(MIN)`` wraps to MIN (fuzz seed 11000071: PoCL's abs(INT_MIN) is poison, so a store of it
vanished and ``max(g, abs(INT_MIN))`` gave INT_MAX).
"""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, i8, i16, i32, i64, u8, u16
from runtimes import runnable_targets

_FEATURE = {"i8": "i8", "u8": "i8", "i16": "i16", "u16": "i16", "i64": "i64"}


def _params(types=(u8, i8, u16, i16, i32)):
    out = []
    for target, kind, skips in runnable_targets():
        for T in types:
            reason = skips.get(_FEATURE.get(T.name, ""))
            marks = [pytest.mark.skip(reason=f"{target}: {reason}")] if reason else []
            out.append(pytest.param(target, kind, T, id=f"{kind}-{T.name}", marks=marks))
    return out


@pytest.mark.parametrize("target,kind,T", _params())
def test_min_max_of_promoted_expressions(target, kind, T):
    @pk.kernel
    def minmax(a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], lo: Buffer[T], hi: Buffer[T]):
        i = pk.global_id(0)
        lo[i] = pk.min(a[i] * a[i] | b[i], T(b[i] + b[i]))
        hi[i] = pk.max(a[i] * a[i] | b[i], T(b[i] + b[i]))

    info = np.iinfo(T.numpy)
    rng = np.random.default_rng(5)
    n = 64
    a = rng.integers(info.min, info.max, n, endpoint=True).astype(T.numpy)
    b = rng.integers(info.min, info.max, n, endpoint=True).astype(T.numpy)
    lo, hi = np.zeros(n, T.numpy), np.zeros(n, T.numpy)
    pk.build([minmax], targets=[target]).on(kind)["minmax"](a, b, lo, hi, grid=1, block=n)
    with np.errstate(over="ignore"):
        x, y = (a * a) | b, (b + b).astype(T.numpy)
    assert lo.tolist() == np.minimum(x, y).tolist()
    assert hi.tolist() == np.maximum(x, y).tolist()


@pytest.mark.parametrize("target,kind,T", _params((i8, i16, i32, i64)))
def test_abs_of_min_wraps(target, kind, T):
    lo = int(np.iinfo(T.numpy).min)

    @pk.kernel
    def absmin(a: Buffer[T, "readonly"], o: Buffer[T]):
        g = pk.global_id(0)
        if g == 0:
            o[0] = pk.abs(T(lo))
            o[1] = pk.max(T(g), pk.abs(T(lo)))
            o[2] = pk.abs(a[0])
            o[3] = pk.max(T(g), pk.abs(a[0]))
            o[4] = pk.abs(a[1])

    a = np.array([lo, -5], T.numpy)
    o = np.full(5, 7, T.numpy)
    pk.build([absmin], targets=[target]).on(kind)["absmin"](a, o, grid=1, block=1)
    assert o.tolist() == [lo, 0, lo, 0, 5], f"{kind} {T}: got {o.tolist()}"
