"""Through the public pipeline: pk.build -> .kbin -> pk.load -> launch; the fallback contract."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32, registry
from polykern.target import Target
from polykern.testing.fallback_contract import check_fallback_contract, forced_fallback
from polykern.testing import tier_skip

from helpers import lower


@pk.kernel
def scale(n: i32, s: f32, x: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        x[i] = x[i] * s


def test_fallback_contract():
    report = check_fallback_contract(
        "webgpu", lambda: registry.get("target.build.webgpu")([lower(scale)], Target("webgpu")))
    assert report["functions"] == ["scale"]


def test_fallback_and_real_export_identical_artifacts():
    if registry.get("module.create.webgpu") is None:
        tier_skip.skip("wgpu", "the WebGPU runtime (wgpu) is not registered here")
    real = pk.build([scale], targets=["webgpu"]).export()
    with forced_fallback("1"):
        fake = pk.build([scale], targets=["webgpu"]).export()
    assert real == fake


@pytest.mark.parametrize("strip", [False, True])
def test_build_export_load_run(wgpu_context, tmp_path, strip):
    path = tmp_path / "scale.kbin"
    with forced_fallback("1"):  # as a CPU-only compile host would
        pk.build([scale], targets=["webgpu"]).export(str(path), strip_sources=strip)
    loaded = pk.load(str(path))
    mod = loaded.on("webgpu")
    assert mod.is_runnable and "fn scale(" in mod.inspect_source()
    x = np.arange(11, dtype=np.float32)
    loaded["scale"](11, 3.0, x, grid=2, block=8)
    np.testing.assert_array_equal(x, 3 * np.arange(11, dtype=np.float32))
