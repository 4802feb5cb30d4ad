"""Arithmetic with a +0.0 literal keeps IEEE specials and signed zeros on every runtime (fuzz cases
fz6000265, fz6000297: lavapipe folded 0.0 * inf to 0, not NaN, although the shader asks for
SignedZeroInfNanPreserve; likewise x + 0.0, 0.0 - x, 0.0 / x and x / 0.0)."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, numerics
from runtimes import runnable_targets

RUNTIMES = [pytest.param(t, k, id=t.split()[0]) for t, k, _ in runnable_targets()]
X = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, -1.5, 2.0], np.float32)
N = 9


@pk.kernel
def k_zero_operands(x: Buffer[f32, 'readonly'], r: Buffer[f32]):
    g = pk.global_id(0)
    w = x[g]
    r[g * 9] = 0.0 * w
    r[g * 9 + 1] = w * 0.0
    r[g * 9 + 2] = w * -0.0
    r[g * 9 + 3] = w + 0.0
    r[g * 9 + 4] = 0.0 + w
    r[g * 9 + 5] = 0.0 - w
    r[g * 9 + 6] = w - 0.0
    r[g * 9 + 7] = 0.0 / w
    r[g * 9 + 8] = w / 0.0


def _expected():
    z, nz = np.float32(0.0), np.float32(-0.0)
    with np.errstate(all="ignore"):
        cols = [z * X, X * z, X * nz, X + z, z + X, z - X, X - z, z / X, X / z]
    return np.stack(cols, axis=1).astype(np.float32)


def _same(a, b):
    """Bit-for-bit, except that any NaN meets any NaN."""
    return (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))


# Where polykern.numerics promises no IEEE specials (WebGPU: WGSL lets an implementation assume no
# infinities or NaNs, and naga's SPIR-V asks for no SignedZeroInfNanPreserve) these tests skip.


@pytest.mark.parametrize("target,kind", RUNTIMES)
def test_positive_zero_literal_operands(target, kind):
    backend = target.split()[0]
    if not numerics.promise("mul", "f32", backend).specials:
        pytest.skip(f"{backend} does not keep IEEE specials of float arithmetic")
    r = np.zeros(len(X) * N, np.float32)
    mod = pk.build([k_zero_operands], targets=[target])
    mod.on(kind)["k_zero_operands"](X, r, grid=(1, 1, 1), block=(len(X), 1, 1))
    got, want = r.reshape(len(X), N), _expected()
    bad = [(float(X[i]), j, float(got[i, j]), float(want[i, j]))
           for i in range(len(X)) for j in range(N) if not _same(got[i, j], want[i, j])]
    assert not bad, f"{target}: (x, column, got, expected): {bad}"


@pk.kernel
def k_fma_zero_factor(x: Buffer[f32, 'readonly'], r: Buffer[f32]):
    g = pk.global_id(0)
    w = x[g]
    r[g * 3] = pk.fma(0.0, w, 1.5)
    r[g * 3 + 1] = pk.fma(w, f32(False), 1.5)
    r[g * 3 + 2] = pk.fma(w, 0.0, -0.0)


@pytest.mark.parametrize("target,kind", RUNTIMES)
def test_fma_with_a_positive_zero_factor(target, kind):
    backend = target.split()[0]
    if not numerics.promise("fma", "f32", backend).specials:
        pytest.skip(f"{backend} does not keep IEEE specials of fma")
    r = np.zeros(len(X) * 3, np.float32)
    mod = pk.build([k_fma_zero_factor], targets=[target])
    mod.on(kind)["k_fma_zero_factor"](X, r, grid=(1, 1, 1), block=(len(X), 1, 1))
    with np.errstate(all="ignore"):
        prod = X * np.float32(0.0)
        want = np.stack([prod + np.float32(1.5), prod + np.float32(1.5), prod + np.float32(-0.0)], axis=1)
    got = r.reshape(len(X), 3)
    bad = [(float(X[i]), j, float(got[i, j]), float(want[i, j]))
           for i in range(len(X)) for j in range(3) if not _same(got[i, j], want[i, j])]
    assert not bad, f"{target}: (x, column, got, expected): {bad}"
