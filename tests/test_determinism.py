"""Same kernels + same targets = same .kbin bytes, in separate processes with different hash seeds and
working directories, for every backend at once (what lets Bazel cache and compare: docs/bazel.md)."""
import os
import subprocess
import sys

import pytest

from runtimes import all_target_kinds, compile_targets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = compile_targets() + ["llvm -mtriple=aarch64-linux-gnu"]  # every registered target kind, and a cross triple


def compile_in_subprocess(example, out, cwd, seed):
    cmd = [sys.executable, "-m", "polykern", "compile", os.path.join(ROOT, "examples", example)]
    for t in TARGETS:
        cmd += ["--target", t]
    cmd += ["-o", str(out)]
    # The child sees the same import path as this test (a venv, an editable install or Bazel runfiles).
    env = dict(os.environ, PYTHONHASHSEED=str(seed), PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes()


@pytest.mark.parametrize("example", ["matmul.py", "prefix_sum.py"])
def test_two_processes_give_identical_bytes(example, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = compile_in_subprocess(example, tmp_path / "a" / "k.bin", tmp_path / "a", 1)
    second = compile_in_subprocess(example, tmp_path / "b" / "k.bin", tmp_path / "b", 2)
    assert first == second
    assert str(tmp_path).encode() not in first, "the artifact must not embed build paths"


def test_the_target_list_is_every_registered_backend():
    """The list comes from the registry: a backend registered with no edit here is compiled too."""
    from polykern import registry
    from polykern.target import Target, TargetKind

    assert {Target.parse(t).kind for t in TARGETS} == set(all_target_kinds())
    before = registry.snapshot()
    try:
        TargetKind("zzthrowaway", "zzthrowaway").register()
        assert "zzthrowaway" in compile_targets()
    finally:
        registry.restore(before)
    assert "zzthrowaway" not in compile_targets()
