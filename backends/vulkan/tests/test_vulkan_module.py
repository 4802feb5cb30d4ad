"""The vulkan module: payload layout "smap" (fmt "spirv", kernel -> SPIR-V), embedded "spirv-asm"
source, the launch ABI in FunctionInfo.attrs, the fallback and its message, artifact round trip."""
import struct

import pytest

import polykern as pk
from polykern import backends, registry
from polykern.kbin import wire
from polykern.errors import RuntimeNotLinkedError
from polykern.module import FallbackModule

import vulkan_kernels as K
from polykern_vulkan.fallback import VulkanFallbackModule


@pytest.fixture
def force_fallback(monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")


def vulkan_module(kernels, target="vulkan"):
    return pk.build(kernels, targets=[target]).on("vulkan")


def test_registered_entries():
    assert registry.get("target.build.vulkan") is not None
    assert registry.get("target.kind.vulkan").module_kind == "vulkan"
    rec = backends.record_for_kind("vulkan")
    assert rec.codegen_ok, rec.codegen_error
    if not rec.runtime_available:
        assert rec.runtime_reason  # recorded, never silent


def test_payload_is_one_spirv_shader_per_kernel(force_fallback):
    m = vulkan_module([K.saxpy, K.control])
    assert isinstance(m, VulkanFallbackModule) and not m.is_runnable
    assert m.kind == "vulkan" and m.fmt == "spirv" and m.layout == "smap"
    assert sorted(m.payload) == ["control", "saxpy"]
    for data in m.payload.values():
        assert struct.unpack_from("<I", data)[0] == 0x07230203
    fmt, fmap, payload = wire.decode_device_payload("vulkan", m.save_to_bytes())
    assert fmt == "spirv" and payload == m.payload and fmap == m.functions


def test_launch_abi_in_attrs():
    info = vulkan_module([K.saxpy]).functions["saxpy"]
    assert info.attrs["entry"] == "saxpy"
    assert info.attrs["spirv"] == "1.3"
    assert info.attrs["descriptor_set"] == "0"
    assert info.attrs["bindings"] == "x=0,y=1"
    assert info.attrs["push_constants"] == "n@0:i32,a@4:f32"
    assert info.attrs["push_constant_size"] == "8"
    assert info.attrs["spec_ids"] == "local_size_x=0,local_size_y=1,local_size_z=2"
    assert info.launch_tags == ("global_id.0",)


def test_narrow_and_wide_scalars_in_push_constants():
    info = vulkan_module([K.make_arith(pk.i8)]).functions["arith"]
    assert info.attrs["push_constants"] == "n@0:i32,s@4:i32"  # i8 travels sign-extended in an i32 slot
    info = vulkan_module([K.make_arith(pk.f16)]).functions["arith"]
    assert info.attrs["push_constants"] == "n@0:i32,s@4:f32"
    info = vulkan_module([K.make_arith(pk.u64)]).functions["arith"]
    assert info.attrs["push_constants"] == "n@0:i32,s@8:u64"  # 8-byte aligned
    assert info.attrs["push_constant_size"] == "16"
    info = vulkan_module([K.make_arith(pk.bool_)]).functions["arith"]
    assert info.attrs["push_constants"] == "n@0:i32,s@4:u32"


def test_fallback_refuses_to_launch_with_the_fix(force_fallback):
    m = vulkan_module([K.saxpy])
    with pytest.raises(RuntimeNotLinkedError) as ei:
        m["saxpy"]
    msg = str(ei.value)
    assert "Vulkan" in msg and "'saxpy'" in msg
    if backends.runtime_reason("vulkan"):  # no runtime here: the message says how to get one
        assert "polykern[vulkan]" in msg and "--config=vulkan" in msg
    else:  # the runtime exists: the fallback was forced, and the message says how to run anyway
        assert "POLYKERN_COMPILE_FORCE_FALLBACK" in msg and "polykern.load()" in msg


def test_inspect_source_is_the_disassembly():
    m = vulkan_module([K.saxpy, K.shared_reduce])
    text = m.inspect_source()
    assert text == m.inspect_source("spirv-asm")
    assert "; ---- kernel saxpy ----" in text and "; ---- kernel shared_reduce ----" in text
    assert 'OpEntryPoint GLCompute %saxpy "saxpy"' in text
    assert "OpControlBarrier %uint_2 %uint_2 %uint_328" in text  # Workgroup, AcqRel|Workgroup|UniformMemory


def test_fallback_bytes_equal_any_module_bytes(monkeypatch):
    native = pk.build([K.saxpy], targets=["vulkan"]).on("vulkan")  # the real module where the runtime exists
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    forced = pk.build([K.saxpy], targets=["vulkan"]).on("vulkan")
    assert isinstance(forced, FallbackModule)
    assert forced.save_to_bytes() == native.save_to_bytes()


def test_artifact_round_trip(tmp_path, force_fallback):
    root = pk.build([K.saxpy, K.atomics_f32], targets=["vulkan -spirv=1.5"])
    path = tmp_path / "k.kbin"
    data = root.export(str(path))
    assert path.read_bytes() == data
    loaded = pk.load(str(path))
    v = loaded.on("vulkan")
    assert v.payload == root.on("vulkan").payload
    assert v.functions == root.on("vulkan").functions
    assert v.inspect_source("spirv-asm") == root.on("vulkan").inspect_source("spirv-asm")
    assert loaded.targets == ["vulkan -spirv=1.5"] or list(loaded.targets) == ["vulkan -spirv=1.5"]
    assert pk.build([K.saxpy, K.atomics_f32], targets=["vulkan -spirv=1.5"]).export() == data
