"""The opencl backend as the pipeline sees it: target kind, payload, fallback contract, artifact."""
from __future__ import annotations

import pytest

import polykern as pk
from polykern import backends, registry
from polykern.testing.c_corpus import corpus
from polykern.errors import TargetError
from polykern.target import Target
from polykern.testing.fallback_contract import check_fallback_contract
from polykern_opencl.fallback import OpenCLFallbackModule


def build(names=("saxpy", "bools")):
    funcs = corpus()
    return registry.get("target.build.opencl")([funcs[n] for n in names], Target("opencl"))


def test_target_kind():
    assert Target("opencl").module_kind == "opencl"
    with pytest.raises(TargetError, match="-arch"):   # an attribute opencl does not have is named
        Target("opencl -arch=x")
    assert Target("opencl -subgroups").attrs.get("subgroups") in (True, "true", 1)


def test_payload_is_the_opencl_c_source():
    m = build()
    assert isinstance(m, OpenCLFallbackModule) or m.is_runnable
    assert m.kind == "opencl" and m.fmt == "cl" and sorted(m.sources) == ["cl"]
    assert m.payload == m.sources["cl"].encode()
    assert m.inspect_source() == m.sources["cl"]
    assert {n: i.attrs["entry"] for n, i in m.functions.items()} == {"bools": "bools", "saxpy": "saxpy"}


def test_renamed_kernel_records_its_entry_symbol():
    funcs = corpus()
    m = registry.get("target.build.opencl")([funcs["main"]], Target("opencl"))
    assert m.functions["main"].attrs["entry"] == "main_"
    assert "__kernel void main_(" in m.inspect_source()


def test_fallback_contract():
    report = check_fallback_contract("opencl", lambda: build(("saxpy", "shared_reduce", "atomics_f32")))
    assert report["functions"] == ["atomics_f32", "saxpy", "shared_reduce"]


def test_artifact_round_trip_keeps_the_source(tmp_path):
    @pk.kernel
    def inc(x: pk.Buffer[pk.i32]):
        x[pk.global_id(0)] += 1

    path = tmp_path / "k.kbin"
    pk.build([inc], targets=["opencl"]).export(str(path))
    m = pk.load(str(path)).on("opencl")
    assert m.fmt == "cl" and "__kernel void inc(__global int* x)" in m.inspect_source()


def test_runtime_reason_is_recorded():
    rec = backends.record_for_kind("opencl")
    assert rec is not None and rec.codegen_ok
    if not rec.runtime_available:
        assert "pyopencl" in rec.runtime_reason or "not implemented" in rec.runtime_reason
