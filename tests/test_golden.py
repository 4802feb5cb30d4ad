"""Golden artifacts: regenerating them gives identical bytes, and the reader finds exactly what
each .json says (the native C reader is checked against the same files). tests/golden/v1 keeps
the version-1 files: they still load, and export again as the version-2 files.

``POLYKERN_UPDATE_GOLDEN=1`` rewrites the version-2 files instead of comparing (the v1 files are
never rewritten: no writer writes version 1 any more)."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from polykern import artifact
from polykern.kbin import wire
from polykern.testing.golden import updating
from polykern.testing.isolation import isolated

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
GOLDEN_V1 = os.path.join(GOLDEN, "v1")
NAMES = ["saxpy_llvm", "multi_target", "stripped_nested", "unknown_kind"]
V1_NAMES = ["saxpy_llvm", "multi_target", "stripped_nested"]


def _make_golden():
    spec = importlib.util.spec_from_file_location("make_golden", os.path.join(GOLDEN, "make_golden.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_regenerating_gives_identical_bytes(tmp_path):
    if updating():
        _make_golden().generate(GOLDEN)
    written = _make_golden().generate(str(tmp_path))
    assert sorted(os.path.basename(p) for p in written) == sorted(f"{n}.{e}" for n in NAMES for e in ("kbin", "json"))
    for name in os.listdir(tmp_path):
        with open(os.path.join(GOLDEN, name), "rb") as f:
            committed = f.read()
        assert (tmp_path / name).read_bytes() == committed, f"{name} changed: the byte format or generator drifted"


def test_generator_is_deterministic_across_processes(tmp_path):
    script = os.path.join(GOLDEN, "make_golden.py")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    for out in ("a", "b"):
        (tmp_path / out).mkdir()
        subprocess.run([sys.executable, script, str(tmp_path / out)], check=True, env=env, capture_output=True)
    for name in os.listdir(tmp_path / "a"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


_ALL = [(GOLDEN, n) for n in NAMES] + [(GOLDEN_V1, n) for n in V1_NAMES]


@pytest.mark.parametrize("folder,name", _ALL)
def test_reader_finds_what_the_json_says(folder, name):
    with open(os.path.join(folder, f"{name}.json"), encoding="utf-8") as f:
        expected = json.load(f)
    assert expected["format_version"] == (1 if folder == GOLDEN_V1 else wire.VERSION)
    got = artifact.read_artifact(os.path.join(folder, f"{name}.kbin"))
    for key in ("file", "format_version", "size", "crc32", "metadata", "targets", "sources_embedded", "functions"):
        assert got[key] == expected[key], key
    assert len(got["modules"]) == len(expected["modules"])
    for g, e in zip(got["modules"], expected["modules"]):
        for key, value in e.items():
            if key in ("payload", "shaders"):
                blobs = {"": g[key]} if key == "payload" else g[key]
                want = {"": value} if key == "payload" else value
                assert sorted(blobs) == sorted(want)
                for k in want:
                    assert (blobs[k]["size"], blobs[k]["sha256"]) == (want[k]["size"], want[k]["sha256"])
            else:
                assert g[key] == value, (e["index"], key)


@pytest.mark.parametrize("name", NAMES)
def test_golden_loads_without_runtimes_and_reexports_identically(name):
    """No arguments: a loaded artifact keeps its metadata and whether its sources were stripped."""
    path = os.path.join(GOLDEN, f"{name}.kbin")
    with isolated():
        root = artifact.load(path)
        assert not root.is_runnable
        again = root.export()
    with open(path, "rb") as f:
        assert again == f.read()


@pytest.mark.parametrize("name", V1_NAMES)
def test_v1_golden_loads_and_exports_as_the_v2_golden(name):
    """A version-1 artifact loads (every module, the webgpu one included) and exports again in
    version 2 with the same content: the bytes of the version-2 golden file of the same name."""
    with isolated():
        root = artifact.load(os.path.join(GOLDEN_V1, f"{name}.kbin"))
        assert all(m.functions for m in root.device_modules())
        again = root.export()
    with open(os.path.join(GOLDEN_V1, f"{name}.kbin"), "rb") as f:
        assert f.read(12)[8:] == (1).to_bytes(4, "little")
    with open(os.path.join(GOLDEN, f"{name}.kbin"), "rb") as f:
        assert again == f.read()
