"""A signed integer widened to i64 keeps its sign in comparisons, ``%`` and ``//`` (fuzz finding F11:
lavapipe compared an i32 sign-extended to i64 with a constant as if zero-extended, so
``i64(-1) < 0`` was false and ``i64(-1) % 21`` gave 15). Also i8/i16 ``%``/``//`` of negative values.
Checked on every runtime here that has the types."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, i8, i16, i32, i64, u64
from polykern.errors import KernelTypeError
from runtimes import runnable_targets

RUNTIMES = [pytest.param(t, k, id=t.split()[0]) for t, k, _ in runnable_targets()]
ONE = dict(grid=(1, 1, 1), block=(1, 1, 1))


@pk.kernel
def k_widen_i64(s: i32, o: Buffer[i64]):
    v = s  # a runtime value: nothing folds
    w = i64(v)
    o[0] = w
    o[1] = i64(w < 0)
    o[2] = i64(w >= 0)
    o[3] = i64(w < 5)
    o[4] = i64(w <= -1)
    o[5] = w % 21
    o[6] = w // 21
    o[7] = i64(i16(v)) % 21
    o[8] = i64(i8(v)) // 2
    o[9] = i64(u64(w) >> u64(63))


@pk.kernel
def k_narrow_signed(s: i32, o: Buffer[i32]):
    v = s
    o[0] = i32(i8(v) % i8(5))
    o[1] = i32(i16(v) % i16(5))
    o[2] = i32(i8(v) // i8(5))
    o[3] = i32(i16(v) // i16(5))
    o[4] = i32(i8(v - 120) % i8(-7))
    o[5] = i32(i16(v * 1000) // i16(-7))


def _run(kern, target, kind, out, s):
    try:
        mod = pk.build([kern], targets=[target])
    except KernelTypeError as exc:
        pytest.skip(f"{target}: {exc.message}")
    mod.on(kind)[kern.name](np.int32(s), out, **ONE)
    return out


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _trunc_mod(a, b):
    return a - b * _trunc_div(a, b)


@pytest.mark.parametrize("s", [-1, -40, 7, -2147483648])
@pytest.mark.parametrize("target,kind", RUNTIMES)
def test_i32_widened_to_i64_keeps_its_sign(s, target, kind):
    o = _run(k_widen_i64, target, kind, np.zeros(10, np.int64), s)
    i16v = int(np.int32(s).astype(np.int16))
    i8v = int(np.int32(s).astype(np.int8))
    want = [s, s < 0, s >= 0, s < 5, s <= -1, _trunc_mod(s, 21), _trunc_div(s, 21), _trunc_mod(i16v, 21),
            _trunc_div(i8v, 2), int(s < 0)]
    assert o.tolist() == [int(x) for x in want]


@pytest.mark.parametrize("s", [-1, -3, 200])
@pytest.mark.parametrize("target,kind", RUNTIMES)
def test_narrow_signed_remainder_and_quotient(s, target, kind):
    o = _run(k_narrow_signed, target, kind, np.zeros(6, np.int32), s)

    def wrap(x, bits):
        return int(np.array(x, np.int64).astype(f"int{bits}"))

    v8, v16 = wrap(s, 8), wrap(s, 16)
    want = [_trunc_mod(v8, 5), _trunc_mod(v16, 5), _trunc_div(v8, 5), _trunc_div(v16, 5),
            _trunc_mod(wrap(s - 120, 8), -7), _trunc_div(wrap(s * 1000, 16), -7)]
    assert o.tolist() == want
