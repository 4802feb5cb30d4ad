"""Math builtins of values a device compiler knows to be NaN or infinite at compile time still store
their IEEE result, on every runtime present.

Found by the differential fuzzer (seed 11000016): PoCL constant-folds ``ceil(NAN)`` (and floor, exp,
exp2, tanh of NaN; also ``ceil(x * NAN)`` and a NaN it propagates through a local, seed 12000278) to
poison, and the store ``m[g] = ceil(NAN)`` vanished, leaving the buffer's old contents.
"""
import math

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, f64
from runtimes import runnable_targets

NAN = float("nan")
INF = float("inf")


def _params():
    out = []
    for target, kind, skips in runnable_targets():
        for T in (f32, f64):
            reason = skips.get("f64") if T == f64 else None
            marks = [pytest.mark.skip(reason=f"{target}: {reason}")] if reason else []
            out.append(pytest.param(target, kind, T, id=f"{kind}-{T.name}", marks=marks))
    return out


@pytest.mark.parametrize("target,kind,T", _params())
def test_builtins_of_compile_time_nan(target, kind, T):
    @pk.kernel
    def folded(x: Buffer[T, "readonly"], o: Buffer[T]):
        if pk.global_id(0) == 0:
            o[0] = pk.ceil(T(NAN))
            o[1] = pk.floor(x[0] * T(NAN))
            o[2] = pk.exp(T(NAN))
            o[3] = pk.exp2(x[0] + T(NAN))
            o[4] = pk.tanh(T(NAN))
            o[5] = x[0] // T(NAN)
            o[6] = pk.ceil(T(INF))
            o[7] = pk.floor(T(-INF))
            v = T(31.0) - T(INF)  # a local the C compiler propagates (fuzz seed 12000278)
            o[8] = pk.exp(T(57.0) * (v - v))
            o[9] = pk.tanh(v - v)

    x = np.array([1.5], T.numpy)
    o = np.full(10, 7.0, T.numpy)
    try:
        mod = pk.build([folded], targets=[target]).on(kind)
    except pk.errors.KernelTypeError as e:
        if "f64" in str(e) or "64-bit" in str(e):
            pytest.skip(f"{kind}: {e}")
        raise
    mod["folded"](x, o, grid=1, block=1)
    want = [NAN] * 6 + [INF, -INF, NAN, NAN]
    assert all((math.isnan(w) and math.isnan(g)) or g == w for g, w in zip(o.tolist(), want)), \
        f"{kind} {T}: got {o.tolist()}"
