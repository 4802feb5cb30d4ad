"""`.kbin` format version 2 end to end: a module of a kind no backend here provides travels beside
a real llvm module. Python and C both decode it, show it and encode the artifact again to the same
bytes, and the llvm module still runs (from Python, and from C through libpolykern).
docs/internals.md "Byte format" describes both format versions."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import polykern as pk
from polykern import artifact, backends, wire
from polykern.errors import ArtifactError
from polykern.module import DeviceModule, RootModule, UnavailableModule

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "native"
sys.path.insert(0, str(ROOT / "examples"))
saxpy_example = pytest.importorskip("saxpy")

needs_llvm = pytest.mark.skipif(bool(backends.runtime_reason("llvm")),
                                reason=f"no llvm runtime here: {backends.runtime_reason('llvm')}")
needs_native = pytest.mark.skipif(not (shutil.which("make") and (shutil.which("cc") or shutil.which("gcc"))),
                                  reason="no C compiler or make on this host")


def _future_module(fmap) -> DeviceModule:
    """A module of a kind no installed backend provides, with named sections."""
    return DeviceModule("zz_future", {"saxpy": b"\x00\x01future code\xff", "meta": b"text section\n"}, "zzbin",
                        fmap, {"zz-asm": "future assembly\n"})


@pytest.fixture(scope="module")
def mixed_artifact(tmp_path_factory) -> Path:
    """root -> [zz_future (first, so every launch must skip it), llvm]."""
    if backends.runtime_reason("llvm"):
        pytest.skip(f"no llvm runtime here: {backends.runtime_reason('llvm')}")
    llvm = pk.build([saxpy_example.saxpy], targets=["llvm"]).on("llvm")
    future = _future_module(llvm.functions)
    root = RootModule.collect([future, llvm], ["zz_future", "llvm"])
    path = tmp_path_factory.mktemp("v2") / "mixed.kbin"
    root.export(path)
    return path


@needs_llvm
def test_unknown_kind_loads_unavailable_reexports_identically_and_llvm_runs(mixed_artifact):
    data = mixed_artifact.read_bytes()
    assert data[8:12] == (2).to_bytes(4, "little")
    root = pk.load(mixed_artifact)
    future, llvm = root.device_modules()
    assert isinstance(future, UnavailableModule) and not future.is_runnable
    assert (future.kind, future.fmt, future.layout) == ("zz_future", "zzbin", "smap")
    assert future.payload["meta"] == b"text section\n" and future.sources == {"zz-asm": "future assembly\n"}
    msg = future.message()
    assert "mixed.kbin contains a module of kind 'zz_future'" in msg
    assert (f"install the polykern backend that provides the 'zz_future' module kind (a distribution registered "
            f"in the '{backends.ENTRY_POINT_GROUP}' entry-point group)") in msg
    with pytest.raises(ArtifactError, match="zz_future"):
        future.get_function("saxpy")
    assert llvm.is_runnable
    rng = np.random.default_rng(7)
    assert saxpy_example.run(root, rng, n=10_007) == "saxpy: 10007 elements OK"  # skips zz_future, runs on llvm
    assert root["saxpy"].module is llvm
    assert root.export() == data
    with pytest.raises(ArtifactError, match="zz_future"):
        pk.load(mixed_artifact, strict=True)


@needs_llvm
def test_polykern_inspect_shows_the_unknown_module(mixed_artifact):
    p = subprocess.run([sys.executable, "-m", "polykern", "inspect", str(mixed_artifact)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "polykern artifact (format 2)" in p.stdout
    assert "[1] zz_future  fmt=zzbin" in p.stdout and "shader meta: text, 1 line (13 bytes)" in p.stdout
    desc = artifact.read_artifact(mixed_artifact)
    assert [(m["kind"], m["layout"]) for m in desc["modules"]] == [("root", "root"), ("zz_future", "smap"),
                                                                   ("llvm", "bytes")]


@pytest.fixture(scope="module")
def native_tools():
    if not (shutil.which("make") and (shutil.which("cc") or shutil.which("gcc"))):
        pytest.skip("no C compiler or make on this host")
    p = subprocess.run(["make", "-C", str(NATIVE), "all"], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return NATIVE / "build"


@needs_llvm
@needs_native
def test_c_reads_shows_reexports_and_runs_beside_the_unknown_module(mixed_artifact, native_tools, tmp_path):
    inspect = str(native_tools / "kbin-inspect")
    for flag in ([], ["--json"]):
        c = subprocess.run([inspect, *flag, str(mixed_artifact)], capture_output=True, text=True)
        py = subprocess.run([sys.executable, "-m", "polykern", "inspect", *flag, str(mixed_artifact)],
                            capture_output=True, text=True, timeout=300)
        assert c.returncode == 0 and py.returncode == 0, c.stderr + py.stderr
        assert c.stdout == py.stdout
    out = tmp_path / "again.kbin"
    c = subprocess.run([inspect, "--reexport", str(out), str(mixed_artifact)], capture_output=True, text=True)
    assert c.returncode == 0, c.stderr
    assert out.read_bytes() == mixed_artifact.read_bytes()
    r = subprocess.run([str(native_tools / "run_saxpy"), str(mixed_artifact), "--n", "10007"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "skipped: module 1 (zz_future)" in r.stdout and "on cpu: " in r.stdout and "OK" in r.stdout


@needs_native
def test_c_reexports_version_1_as_python_does(native_tools, tmp_path):
    """A version-1 artifact, encoded again by C and by Python, gives the same version-2 bytes."""
    from polykern.testing.isolation import isolated

    for v1 in sorted((ROOT / "tests" / "golden" / "v1").glob("*.kbin")):
        out = tmp_path / v1.name
        c = subprocess.run([str(native_tools / "kbin-inspect"), "--reexport", str(out), str(v1)], capture_output=True,
                           text=True)
        assert c.returncode == 0, c.stderr
        with isolated():
            again = artifact.load(v1).export()
        assert out.read_bytes() == again and again[8] == wire.VERSION
