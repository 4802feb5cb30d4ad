"""Golden artifacts: regenerating them gives identical bytes, and the reader finds exactly what
each .json says (the native C reader is checked against the same files)."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from polykern import artifact
from polykern.testing.isolation import isolated

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
NAMES = ["saxpy_llvm", "multi_target", "stripped_nested"]


def _make_golden():
    spec = importlib.util.spec_from_file_location("make_golden", os.path.join(GOLDEN, "make_golden.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_regenerating_gives_identical_bytes(tmp_path):
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


@pytest.mark.parametrize("name", NAMES)
def test_reader_finds_what_the_json_says(name):
    with open(os.path.join(GOLDEN, f"{name}.json"), encoding="utf-8") as f:
        expected = json.load(f)
    got = artifact.read_artifact(os.path.join(GOLDEN, f"{name}.kbin"))
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
    path = os.path.join(GOLDEN, f"{name}.kbin")
    with isolated():
        root = artifact.load(path)
        assert not root.is_runnable
        with open(os.path.join(GOLDEN, f"{name}.json"), encoding="utf-8") as f:
            expected = json.load(f)
        meta = expected["metadata"]
        again = root.export(strip_sources=not expected["sources_embedded"],
                            metadata={k: v for k, v in meta.items() if k != "targets"})
    with open(path, "rb") as f:
        assert again == f.read()
