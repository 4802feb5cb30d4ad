"""lavapipe (Mesa 22.3) dropped the store of x / y when it could derive y == +0.0 (a zero-initialized
pk.local element) and x was a run-time value: the output kept its old contents (fuzz seed 20000161 on
Vulkan; the same through naga on WebGPU). passes/legalize_numerics.py now divides by -|y| and fixes the
sign on the IR (both kinds declare it), so the driver never sees a +0.0 divisor. This checks the stored values
themselves (not through the comparison's exception for specials on lavapipe)."""
import os

import numpy as np
import pytest

import polykern as pk
from polykern import numerics
from polykern.testing import fuzzcase, tier_skip

TARGETS = {"vulkan": "vulkan", "webgpu": "webgpu -shader_f16=true"}

SRC = '''import polykern as pk
from polykern import Buffer, {t}
@pk.kernel
def drops(a: Buffer[{t}, "readonly"], o: Buffer[{t}]):
    g = pk.global_id(0)
    la = pk.local({t}, 4)
    nz = -la[3]
    o[0] = a[0] / la[2]
    o[1] = a[1] / la[2]
    o[2] = (a[0] + la[1]) / la[2]
    o[3] = a[0] / nz
    o[4] = a[2] / la[2]
    o[5] = a[0] / (la[2] + la[1])
    o[6] = -(a[0] / -la[2])
    o[7] = a[0] // la[2]
    o[8] = la[1] / la[2]
    o[9] = a[0] / a[3]
'''


# Open (2026-11-23): in the Bazel tier only (its Debian sid environment has a newer Mesa: lavapipe on
# LLVM 22), WebGPU's f16 a[0] / (-0.0) was stored as 0 and -(a[0] / -0.0) as -0.0, where the pytest tier
# (Debian 12's Mesa 22.3) stores -inf and inf (docs/correctness.md, section 6).
_BAZEL_WEBGPU_F16 = pytest.mark.xfail(
    strict=False, reason="open: in the Bazel tier WebGPU stored f16 x / -0.0 as 0 (docs/correctness.md, section 6)")


def _cases():
    for kind, target in TARGETS.items():
        for t in ("f32", "f16", "f64"):
            if kind == "webgpu" and t == "f64":
                continue
            marks = [_BAZEL_WEBGPU_F16] if kind == "webgpu" and t == "f16" and os.environ.get("TEST_SRCDIR") else []
            yield pytest.param(target, t, id=f"{kind}-{t}", marks=marks)


@pytest.mark.parametrize("target,t", list(_cases()))
def test_division_by_a_derived_zero_is_stored(target, t):
    kind = target.split()[0]
    if not fuzzcase.runtime_present(target):
        tier_skip.skip_runtime(kind, f"no {kind} runtime here")
    device = fuzzcase.selected_device(kind)
    mesa = any(w in device.lower() for w in ("lavapipe", "llvmpipe"))  # wgpu names the adapter llvmpipe
    if not mesa and not numerics.specials_promised(kind, device):
        pytest.skip(f"{kind} on {device} promises no NaN/inf results (numerics.py)")
    dt = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[t]
    a = np.array([3.0, -2.0, 0.0, 4.0], dt)
    case = fuzzcase.Case("drops", SRC.format(t=t), (1, 1, 1), (1, 1, 1), [a, np.zeros(10, dt)])
    want = case.oracle().buffers["o"]
    np.testing.assert_array_equal(want, np.array([np.inf, -np.inf, np.inf, -np.inf, np.nan, np.inf, np.inf,
                                                  np.inf, np.nan, 0.75], dt))
    mod = pk.build([case.kernel()], [target])
    o = np.full(10, 7.0, dt)  # a dropped store leaves 7
    mod["drops"](a.copy(), o, grid=(1, 1, 1), block=(1, 1, 1))
    np.testing.assert_array_equal(o, want)
