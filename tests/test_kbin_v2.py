"""`.kbin` format version 2 end to end in Python: a module of a kind no backend here provides
travels beside a real llvm module; it loads as an unavailable module that names what to install,
`polykern inspect` shows it, the artifact exports again to the same bytes, and the llvm module
still runs. tests/test_native.py does the same from C (libpolykern, kbin-inspect, run_saxpy).
docs/internals.md "Byte format" describes both format versions."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import polykern as pk
from polykern import artifact, backends
from polykern.errors import ArtifactError
from polykern.module import RootModule, UnavailableModule
from polykern.testing import tier_skip

from kbin_future import future_module

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
saxpy_example = pytest.importorskip("saxpy")

needs_llvm = tier_skip.skipif("llvm", backends.runtime_reason("llvm"),
                                reason=f"no llvm runtime here: {backends.runtime_reason('llvm')}")


@pytest.fixture(scope="module")
def mixed_artifact(tmp_path_factory) -> Path:
    """root -> [zz_future (first, so every launch must skip it), llvm]."""
    if backends.runtime_reason("llvm"):
        tier_skip.skip("llvm", f"no llvm runtime here: {backends.runtime_reason('llvm')}")
    llvm = pk.build([saxpy_example.saxpy], targets=["llvm"]).on("llvm")
    future = future_module(llvm.functions)
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
