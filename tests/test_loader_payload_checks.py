"""A valid .kbin (format 2) whose module has a layout or fmt its kind's codegen never writes is refused at
load with an ArtifactError naming the kind, the layout and fmt found and what the kind accepts: the same
verdict with the kind's runtime loader and without it (the fallback), and from the loader called directly.

Was (red team of the plugin interface): llvm with an smap payload -> "TypeError: unhashable type: 'slice'", opencl with
smap -> AttributeError, vulkan with a bytes payload -> "no kernel for [2, 3, 7, 35]", webgpu/llvm with fmt
"zz" -> loaded as runnable modules that failed at launch. The C reader only decodes: it still reads them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import polykern as pk
from polykern import Buffer, f32, i32, registry
from polykern.kbin import wire
from polykern.errors import ArtifactError
from polykern.kbin.messages import quote
from polykern.kbin.payload_formats import PayloadFormats, registry_key
from polykern.testing.fallback_contract import check_fallback_contract
from polykern.testing.kbin_rewrite import replace_module, rewrite_module
from runtimes import all_target_kinds

REPO = Path(__file__).resolve().parents[1]


@pk.kernel
def saxpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


TARGETS = [t for t in all_target_kinds() if t != "nvptx"]  # nvptx builds the same module kind as cuda


@pytest.fixture(scope="module", params=TARGETS)
def built(request):
    """(kind, artifact bytes, accepted PayloadFormats) of saxpy compiled for one target."""
    root = pk.build([saxpy], targets=[request.param])
    (mod,) = root.imports
    accepted = registry.get(registry_key(mod.kind))
    assert isinstance(accepted, PayloadFormats), f"{mod.kind}: no {registry_key(mod.kind)} declaration"
    return mod.kind, root.export(), accepted


@contextlib.contextmanager
def _without_loader(kind):
    """The kind's runtime loader unregistered for the duration (what a host without the runtime has)."""
    key = f"module.load_from_bytes.{kind}"
    loader = registry.get(key)
    registry.remove(key)
    try:
        yield
    finally:
        if loader is not None:
            registry.register(key, loader, override=True)


def _load_error(data: bytes) -> str:
    with pytest.raises(ArtifactError) as e:
        pk.load(data)
    return str(e.value)


def _expected(kind, layout, fmt, accepted, offset):
    return (f"module 1: {kind} module: payload layout {wire.LAYOUTS.index(layout)} ({layout}) with fmt {quote(fmt)} "
            f"is not one that {kind} modules hold; they accept {accepted.describe()} (at byte offset {offset})")


def test_its_own_artifact_loads_with_and_without_the_runtime(built):
    kind, data, _ = built
    (mod,) = pk.load(data).imports
    assert mod.kind == kind
    with _without_loader(kind):
        (fb,) = pk.load(data).imports
    assert fb.kind == kind and not fb.is_runnable
    assert fb.save_to_bytes() == mod.save_to_bytes()


@pytest.mark.parametrize("change", ["fmt", "layout", "both"])
def test_unheld_layout_or_fmt_is_refused_alike_with_and_without_the_runtime(built, change):
    kind, data, accepted = built
    fmt = "zz" if change in ("fmt", "both") else wire.decode_device_payload(
        kind, wire.decode_container(data).modules[1].payload)[0]
    layout = ("bytes" if accepted.layout == "smap" else "smap") if change in ("layout", "both") else accepted.layout
    bad = rewrite_module(data, 1, fmt=fmt if change != "layout" else None,
                         layout=layout if change != "fmt" else None)
    offset = wire.decode_container(bad).modules[1].offset
    expected = _expected(kind, layout, fmt, accepted, offset)
    assert _load_error(bad) == expected  # the runtime's verdict where it is present
    with _without_loader(kind):
        assert _load_error(bad) == expected  # the fallback's: the same
    loader = registry.get(f"module.load_from_bytes.{kind}")
    if loader is not None:  # called directly, the loader says the same (no offset: it gets the payload alone)
        with pytest.raises(ArtifactError) as e:
            loader(wire.decode_container(bad).modules[1].payload, {})
        assert str(e.value) == expected.split(": ", 1)[1].rsplit(" (at byte", 1)[0]


def test_a_kernel_without_its_section_is_refused(built):
    kind, data, accepted = built
    if not accepted.section_per_function:
        pytest.skip(f"{kind} modules are one blob")
    fmt, fmap, payload = wire.decode_device_payload(kind, wire.decode_container(data).modules[1].payload)
    bad = replace_module(data, 1, fmt, fmap, {"other": payload["saxpy"]})
    text = (f"{kind} module: kernel 'saxpy' has no section in the payload (layout 2 (smap) with fmt {quote(fmt)}: "
            f"{kind} modules hold one section per kernel, named after it)")
    assert text in _load_error(bad)
    with _without_loader(kind):
        assert text in _load_error(bad)


def test_a_webgpu_kernel_without_its_entry_is_refused():
    data = pk.build([saxpy], targets=["webgpu"]).export()
    fmt, fmap, payload = wire.decode_device_payload("webgpu", wire.decode_container(data).modules[1].payload)
    fmap = {"saxpy": dataclasses.replace(fmap["saxpy"], attrs={k: v for k, v in fmap["saxpy"].attrs.items()
                                                               if k != "entry"})}
    bad = replace_module(data, 1, fmt, fmap, payload)
    text = "webgpu module: kernel 'saxpy' has no 'entry' attribute (fmt 'wgsl': webgpu kernels carry 'entry')"
    assert text in _load_error(bad)
    with _without_loader("webgpu"):
        assert text in _load_error(bad)


def test_every_backend_keeps_the_fallback_contract_with_the_payload_check(built):
    kind, _, _ = built
    target = next(t for t in TARGETS if registry.get(f"target.kind.{t}").module_kind == kind)
    report = check_fallback_contract(kind, lambda: pk.build([saxpy], targets=[target]).imports[0])
    assert report["kind"] == kind


def test_inspect_and_the_c_reader_still_read_them(built, tmp_path):
    """Python's inspect and the C reader decode, they do not load: their verdicts do not change."""
    kind, data, accepted = built
    path = tmp_path / "bad.kbin"
    path.write_bytes(rewrite_module(data, 1, fmt="zz", layout="bytes" if accepted.layout == "smap" else "smap"))
    py = subprocess.run([sys.executable, "-m", "polykern", "inspect", str(path)], capture_output=True, text=True)
    assert py.returncode == 0 and "fmt=zz" in py.stdout, py.stderr
    c_inspect = REPO / "native" / "build" / "kbin-inspect"
    if not c_inspect.exists():
        pytest.skip("native/build/kbin-inspect is not built (tests/test_native.py builds it)")
    c = subprocess.run([str(c_inspect), str(path)], capture_output=True, text=True)
    assert c.returncode == 0, c.stderr
    assert c.stdout == py.stdout
