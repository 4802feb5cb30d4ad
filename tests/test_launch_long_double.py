"""A NumPy long double passed for a float scalar parameter rounds once, from its exact value, like every
other argument (launch.py ``_scalar``, ir/rounding.py): it went through float64 first, so
``1 + 2**-24 + 2**-60`` became 1.0 as f32 (float64 drops the 2**-60, leaving a tie that rounds to even)
instead of 1 + 2**-23, and a finite long double past float64's range became inf. Only where NumPy's long
double is wider than float64 (x86-64: 80-bit; aarch64 Linux: 128-bit)."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, f64
from polykern.errors import LaunchError
from runtimes import runnable_targets

LD = np.longdouble
pytestmark = pytest.mark.skipif(np.finfo(LD).nmant <= 52, reason="long double is float64 here")


@pk.kernel
def take_f32(h: f32, o: Buffer[f32]):
    o[0] = h


@pk.kernel
def take_f16(h: f16, o: Buffer[f32]):
    o[0] = f32(h)


@pk.kernel
def take_f64(h: f64, o: Buffer[f64]):
    o[0] = h


def _targets(feature):
    return [pytest.param(t, k, id=k) for t, k, s in runnable_targets() if not s.get(feature)]


@pytest.mark.parametrize("target,kind", _targets("f16"))
def test_a_long_double_rounds_once(target, kind):
    mod = pk.build([take_f32, take_f16], [target]).on(kind)
    o = np.zeros(1, np.float32)
    mod["take_f32"](LD(1) + LD(2.0 ** -24) + LD(2.0 ** -60), o, grid=1, block=1)  # just above a tie
    assert o[0] == np.float32(1 + 2.0 ** -23)
    mod["take_f32"](LD(1) + LD(2.0 ** -24), o, grid=1, block=1)  # the tie itself: to even
    assert o[0] == 1.0
    mod["take_f16"](LD(1) + LD(2.0 ** -11) + LD(2.0 ** -60), o, grid=1, block=1)
    assert o[0] == 1 + 2.0 ** -10
    mod["take_f32"](LD("-0.0"), o, grid=1, block=1)
    assert o[0] == 0 and np.signbit(o[0])


@pytest.mark.parametrize("target,kind", _targets("f64"))
def test_a_long_double_past_float64_is_refused_not_inf(target, kind):
    mod = pk.build([take_f64, take_f32], [target]).on(kind)
    o = np.zeros(1, np.float64)
    mod["take_f64"](LD(1) + LD(2.0 ** -53) + LD(2.0 ** -62), o, grid=1, block=1)
    assert o[0] == 1 + 2.0 ** -52
    with pytest.raises(LaunchError, match=r"argument 'h' .*value np\.longdouble\('1e\+400'\) is too large for f64"):
        mod["take_f64"](LD("1e400"), o, grid=1, block=1)
    with pytest.raises(LaunchError, match=r"too large for f32"):
        mod["take_f32"](LD("1e400"), np.zeros(1, np.float32), grid=1, block=1)
    mod["take_f64"](LD("inf"), o, grid=1, block=1)  # an infinity stays one
    assert o[0] == np.inf
