"""The conformance suite, expanded per runtime present: test ids are ``<case>_<target>``.

A case fails if a backend gives a wrong result or refuses a feature that its skip list does not name.
The suite runs again in checked mode (``bounds_check=True``, ids ``<case>_<target>_checked``) on every
target kind but those its backend names in ``UNCHECKED`` with a reason (tests/runtimes.py: Hexagon, the
llvm kind's emitter under QEMU): every access is guarded there, and the results must not change.
"""
import numpy as np
import pytest

import polykern as pk
from conformance import ALL_CASES
from runtimes import runnable_targets, unchecked

PARAMS = []
for target, kind, skips in runnable_targets():
    for case in ALL_CASES:
        reason = skips.get(case.name) or next((skips[f] for f in sorted(case.features) if f in skips), None)
        marks = [pytest.mark.skip(reason=f"{target}: {reason}")] if reason else []
        PARAMS.append(pytest.param(case, target, kind, False, id=f"{case.name}_{target.split()[0]}", marks=marks))
        if not unchecked(target.split()[0]):
            PARAMS.append(pytest.param(case, target, kind, True, id=f"{case.name}_{target.split()[0]}_checked",
                                       marks=marks))


@pytest.mark.parametrize("case,target,kind,checked", PARAMS)
def test_conformance(case, target, kind, checked):
    mod = pk.build(case.kernels, targets=[target], bounds_check=checked)
    assert all((f.attrs.get("bounds_check") == "1") is checked for f in mod.functions.values())
    try:
        case.run(mod.on(kind), np.random.default_rng(1234))
    except pk.errors.DeviceError as e:
        # a matrix shape the device does not list (VkCooperativeMatrixPropertiesKHR: e.g. a newer lavapipe
        # lists only 8x8x8) is the device's declared refusal, named at load
        if "matrix" in case.features and "VK_ERROR_FEATURE_NOT_PRESENT" in str(e):
            pytest.skip(f"refused by the device's cooperative-matrix shapes: {str(e).splitlines()[0][:300]}")
        raise


def test_suite_is_large_enough():
    assert len(ALL_CASES) >= 20
    assert any(t[0] == "llvm" for t in runnable_targets()), "the CPU runtime must always be present"
