"""`./dev demo` explains itself: the examples run on every runtime present (one line per backend, named),
the reduction's varying last digits are explained in its output, and `polykern compile` says what a
"(fallback)" module is."""
import os
import re
import subprocess
import sys

import pytest

from polykern import backends

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


def _run(argv, cwd=EXAMPLES):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_runnable_kinds_are_the_backends_with_a_runtime_and_a_device():
    kinds = backends.runnable_kinds()
    assert "llvm" in kinds  # the CPU runtime is always here
    for rec in backends.load_all():
        listed = [k for k in rec.module_kinds if k in kinds]
        if listed:
            assert rec.runtime_available and rec.devices()["devices"], rec.name
        elif rec.runtime_available and rec.devices()["devices"] and rec.codegen_ok:
            pytest.fail(f"{rec.name} has a runtime and devices but runnable_kinds() leaves it out")


@pytest.mark.parametrize("example", ["saxpy.py", "reduction.py"])
def test_an_example_runs_on_every_runtime_present_and_names_it(example):
    out = _run([example, "--every-runtime"])
    ran = re.findall(r"^\[[^\]]*: ([a-z0-9_]+)\] .* OK", out, re.M)
    assert sorted(ran) == sorted(backends.runnable_kinds()), out
    for kind in ran:
        assert f"[{backends.display_name(kind)}: {kind}]" in out


def test_the_reduction_says_why_its_last_digits_vary():
    out = _run(["reduction.py"])
    m = re.search(r"sum of \d+ = ([\d.]+) OK \(float64 sum ([\d.]+), relative error ([\d.e+-]+) <= ([\d.e+-]+);"
                  r" float32 atomic adds of the \d+ group sums run in the order the groups finish", out)
    assert m, out
    got, exact, err, tol = map(float, m.groups())
    # both sums are printed to 3 decimals: their difference is known to 1e-3 (the sum varies run to run)
    assert abs(abs(got - exact) / exact - err) <= 1e-3 / exact + 0.1 * err and err <= tol


def test_compile_explains_fallback_modules(tmp_path):
    out = _run(["-m", "polykern", "compile", os.path.join(EXAMPLES, "saxpy.py"), "--target", "llvm",
                "--target", "metal", "-o", str(tmp_path / "k.bin")], cwd=tmp_path)
    assert "metal/metal (fallback)" in out
    assert "(fallback) = built here without that runtime" in out and "loads and runs where its runtime exists" in out
    plain = _run(["-m", "polykern", "compile", os.path.join(EXAMPLES, "saxpy.py"), "--target", "llvm",
                  "-o", str(tmp_path / "c.bin")], cwd=tmp_path)
    assert "(fallback)" not in plain
