"""An f32 pk.fma on Vulkan: the shader holds GLSL Fma and the f64 emulation, specialization constant 4
picks one, and runtime/fma_probe.py measures per device whether GLSL Fma rounds once (NVIDIA's FFMA does;
lavapipe's does not). These tests run the real runtime."""

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, backends, f32
from polykern.testing import tier_skip

RUNTIME_REASON = backends.runtime_reason("vulkan")
pytestmark = tier_skip.skipif("lavapipe", RUNTIME_REASON, reason=f"no Vulkan runtime here: {RUNTIME_REASON}")


@pk.kernel
def fma3(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    y[i] = pk.fma(x[3 * i], x[3 * i + 1], x[3 * i + 2])


def _inputs():
    from polykern_vulkan.runtime.fma_probe import PROBE_INPUTS
    return np.array(PROBE_INPUTS, np.float32)


def _run(built):
    x = _inputs()
    y = np.zeros(len(x), np.float32)
    built["fma3"](x.ravel(), y, grid=len(x), block=1)
    return y


def _once(x):
    return (x[:, 0].astype(np.float64) * x[:, 1] + x[:, 2]).astype(np.float32)


def _twice(x):
    return (x[:, 0] * x[:, 1]).astype(np.float32) + x[:, 2]


def test_the_shader_declares_the_choice_and_the_artifact_names_it():
    built = pk.build([fma3], targets=["vulkan"])
    asm = built.inspect_source("spirv-asm")
    assert "OpDecorate %fma_fused SpecId 4" in asm and "Fma" in asm and "OpSelect %float" in asm
    attrs = built.device_modules()[0].functions["fma3"].attrs
    assert "fma_fused=4" in attrs["spec_ids"].split(",")


def test_the_probe_says_what_glsl_fma_does_on_this_device():
    """The verdict is checked against the device itself: with the choice forced to GLSL Fma, the results
    are once-rounded exactly when the probe said "fused"."""
    from polykern_vulkan.runtime import device, fma_probe

    dev = device.get()
    verdict = fma_probe.fused(dev)
    x = _inputs()
    assert not np.array_equal(_once(x), _twice(x))  # the inputs tell the two apart
    saved = getattr(dev, fma_probe._ATTR)
    setattr(dev, fma_probe._ATTR, True)
    try:
        y = _run(pk.build([fma3], targets=["vulkan"]))  # a new module: its pipeline asks again
    finally:
        setattr(dev, fma_probe._ATTR, saved)
    assert np.array_equal(y, _once(x)) == verdict


def test_every_fma_rounds_once_whatever_the_device():
    """The promise (docs/correctness.md): one rounding. The default launch keeps it on every device."""
    x = _inputs()
    assert np.array_equal(_run(pk.build([fma3], targets=["vulkan"])), _once(x))


def test_the_probe_verdict_reaches_the_pipeline(monkeypatch):
    """Specialization constant 4 carries the probe's verdict: told "fused" on a device whose Fma is not
    (lavapipe), a new pipeline uses GLSL Fma and rounds twice; the shipped default (the probe) never does."""
    from polykern_vulkan.runtime import device, fma_probe

    if fma_probe.fused(device.get()):
        pytest.skip("this device's GLSL Fma is fused: both choices round once")
    monkeypatch.setattr(fma_probe, "fused", lambda dev: True)
    x = _inputs()
    assert np.array_equal(_run(pk.build([fma3], targets=["vulkan"])), _twice(x))
