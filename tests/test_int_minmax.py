"""pk.min / pk.max on small integer expressions, on every runtime present.

Found by the differential fuzzer (case fz3000000_opencl): in C, ``s * s`` of two u8 values is an int,
so OpenCL's overloaded ``min(int, uchar)`` was ambiguous and the program did not build. The result
must also be the minimum of the values wrapped to the IR type (not of the promoted ints).
"""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, i8, i16, i32, u8, u16
from runtimes import runnable_targets

_FEATURE = {"i8": "i8", "u8": "i8", "i16": "i16", "u16": "i16"}


def _params():
    out = []
    for target, kind, skips in runnable_targets():
        for T in (u8, i8, u16, i16, i32):
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
