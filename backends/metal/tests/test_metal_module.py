"""The metal backend as the pipeline sees it: one shader per kernel, fallback contract, artifact."""
from __future__ import annotations

import sys

import pytest

import polykern as pk
from polykern import backends, registry
from polykern.testing.c_corpus import corpus
from polykern.errors import RuntimeNotLinkedError, TargetError
from polykern.target import Target
from polykern.testing.fallback_contract import check_fallback_contract
from polykern_metal.fallback import MetalFallbackModule


def build(names=("saxpy", "grid_3d")):
    funcs = corpus()
    # realize(): the codegen's module as it runs here (its runtime imported: the real module or the fallback)
    return registry.get("target.build.metal")([funcs[n] for n in names], Target("metal")).realize()


def test_target_kind():
    assert Target("metal").module_kind == "metal"
    with pytest.raises(TargetError):
        Target("metal -arch=x")


def test_payload_is_one_shader_per_kernel():
    m = build()
    assert isinstance(m, MetalFallbackModule) and m.fmt == "metal" and m.layout == "smap"
    assert sorted(m.payload) == ["grid_3d", "saxpy"]
    for name, data in m.payload.items():
        text = data.decode()
        assert f"kernel void {m.functions[name].attrs['entry']}(" in text
        assert f"// ---- {name} ----\n{text}" in m.sources["metal"]
        assert m.functions[name].attrs["arg_binding"] == "buffer-index"
    assert "[[thread_position_in_threadgroup]]" not in m.payload["saxpy"].decode()
    assert "[[threadgroups_per_grid]]" in m.payload["grid_3d"].decode()


def test_fallback_contract_and_the_fix_on_launch():
    report = check_fallback_contract("metal", lambda: build(("saxpy", "half_math", "atomics_i32")))
    assert report["functions"] == ["atomics_i32", "half_math", "saxpy"]
    if sys.platform != "darwin":
        with pytest.raises(RuntimeNotLinkedError, match="Metal needs macOS"):
            build().get_function("saxpy")


def test_artifact_round_trip(tmp_path):
    @pk.kernel
    def halve(x: pk.Buffer[pk.f16]):
        i = pk.global_id(0)
        x[i] = x[i] * pk.f16(0.5)

    path = tmp_path / "k.kbin"
    pk.build([halve], targets=["metal"]).export(str(path))
    m = pk.load(str(path)).on("metal")
    assert "x[i] = x[i] * 0.5h;" in m.inspect_source()


def test_runtime_reason_on_this_host():
    rec = backends.record_for_kind("metal")
    assert rec is not None and rec.codegen_ok
    if sys.platform != "darwin":
        assert not rec.runtime_available and "macOS" in rec.runtime_reason
