"""The webgpu module: payload layout, fallback/real byte identity, inspection, target attrs."""
from __future__ import annotations

import pytest

from polykern import registry
from polykern.kbin import wire
from polykern.errors import RuntimeNotLinkedError, TargetError
from polykern.target import Target
from polykern_webgpu.fallback import WebGPUFallbackModule
from polykern.testing import tier_skip

from helpers import build
from ir_kernels import KERNELS

NAMES = ("histogram", "reduce_sum", "saxpy")


def kernels():
    return [KERNELS[n]() for n in NAMES]


def _runtime_registered():
    return registry.get("module.create.webgpu") is not None


needs_runtime = tier_skip.skipif("wgpu", not _runtime_registered(),
                                   reason="the WebGPU runtime (wgpu) is not registered here")


def test_payload_layout_is_the_common_sections_layout(monkeypatch):
    """Format version 2: webgpu has no layout of its own (version 1's had no fmt field): the
    layout id of named sections (smap), fmt "wgsl", the function map, one WGSL shader per kernel."""
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    mod = build(kernels())
    data = mod.save_to_bytes()
    r = wire.Reader(data)
    assert r.u8() == wire.LAYOUTS.index("smap") and mod.layout == "smap"
    assert r.str_() == "wgsl"
    fmap = r.fmap()
    shaders = r.map_str_bytes("shaders")
    r.expect_end("payload")
    assert sorted(fmap) == sorted(NAMES) == sorted(shaders)
    for name in NAMES:
        text = shaders[name].decode("utf-8")
        assert f"fn {fmap[name].attrs['entry']}(" in text
        assert text in mod.inspect_source("wgsl")
    assert wire.decode_device_payload("webgpu", data)[0] == "wgsl"


def test_function_info_records_the_abi(monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    info = build(kernels()).functions["saxpy"]
    assert [a.name for a in info.args] == ["n", "a", "x", "y"]
    assert info.attrs["buffer_bindings"] == "x:0,y:1"
    assert info.attrs["params_binding"] == "2"
    assert info.attrs["params_layout"] == "n:i32:0,a:f32:4"
    assert info.attrs["params_size"] == "16"
    assert info.attrs["entry"] == "saxpy"
    assert info.launch_tags == ("global_id.0",)
    red = build(kernels()).functions["reduce_sum"]
    assert red.shared_bytes == 64 * 4 and red.attrs["uses_barrier"] == "1"


def test_fallback_is_inspectable_but_not_runnable(monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "true")
    mod = build(kernels())
    assert isinstance(mod, WebGPUFallbackModule) and mod.kind == "webgpu" and mod.fmt == "wgsl"
    assert not mod.is_runnable
    assert "@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)" in mod.inspect_source()
    with pytest.raises(RuntimeNotLinkedError, match="WebGPU.*cannot launch 'saxpy'"):
        mod.get_function("saxpy")


def test_fallback_without_registered_runtime():
    saved = {k: registry.get(k) for k in ("module.create.webgpu", "module.load_from_bytes.webgpu")}
    for k in saved:
        registry.remove(k)
    try:
        mod = build(kernels())
        assert isinstance(mod, WebGPUFallbackModule)
    finally:
        for k, v in saved.items():
            if v is not None:
                registry.register(k, v, override=True)


@needs_runtime
def test_fallback_and_real_are_byte_identical(monkeypatch):
    from polykern_webgpu.runtime import WebGPUModule

    monkeypatch.delenv("POLYKERN_COMPILE_FORCE_FALLBACK", raising=False)
    real = build(kernels())
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    fake = build(kernels())
    real, fake = real.realize(), fake.realize()  # (a module built before the runtime was imported is deferred)
    assert isinstance(real, WebGPUModule) and isinstance(fake, WebGPUFallbackModule)
    assert real.save_to_bytes() == fake.save_to_bytes()
    assert real.inspect_source() == fake.inspect_source()


@needs_runtime
def test_load_from_bytes_round_trip(monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    data = build(kernels()).save_to_bytes()
    loaded = registry.get("module.load_from_bytes.webgpu")(data, {})
    assert loaded.kind == "webgpu" and sorted(loaded.functions) == sorted(NAMES)
    assert loaded.save_to_bytes() == data
    assert "fn saxpy(" in loaded.inspect_source()  # from the payload when sources were stripped


def test_target_attributes():
    assert str(Target("webgpu")) == "webgpu"
    t = Target("webgpu -shader_f16")
    assert t.attrs["shader_f16"] is True and str(t) == "webgpu -shader_f16=true"
    with pytest.raises(TargetError, match="shader_f16"):
        Target("webgpu -f16=true")


def test_output_is_deterministic(monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    a = build(kernels()).save_to_bytes()
    b = build(list(reversed(kernels()))).save_to_bytes()
    assert a == b
