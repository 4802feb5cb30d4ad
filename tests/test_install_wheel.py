"""The README's install path works: a wheel built from this checkout, installed (not editable) into a
fresh virtualenv, runs the README's quickstart block (extracted from README.md, so the README cannot
drift) on every runtime this host has, finding the backends through the wheel's entry points.

The virtualenv gets its heavy dependencies (numpy, llvmlite, pyopencl, vulkan, wgpu) by a .pth line
naming this environment's site-packages folders; a path added that way has its own .pth files ignored,
so this environment's (editable) polykern stays invisible and the wheel's copy is the one imported.
The wheel builds offline (`--no-build-isolation`) when this environment has the build backend
pyproject.toml asks for (setuptools >= 77, wheel); otherwise pip builds it in isolation, which needs
the package index or pip's cache. Runs in the pytest tier (it needs the source tree and pip), about
half a minute.
"""
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pip_source import copy_buildable_source
from polykern import backends

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
EXTRAS = "opencl,vulkan,webgpu"


def quickstart_block(text: str) -> str:
    """The first ```python block under the README's '### Quickstart' heading."""
    m = re.search(r"^### Quickstart\n(.*?)^```python\n(.*?)^```$", text, re.M | re.S)
    assert m, "README.md has no '### Quickstart' section with a ```python block"
    return m.group(2)


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POLYKERN_", "PYTHON", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd, cwd):
    proc = subprocess.run([str(c) for c in cmd], cwd=str(cwd), env=_env(), capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def _has_build_backend() -> bool:
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
        importlib.metadata.version("wheel")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return major >= 77


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python of the fresh virtualenv, its folder, pip install's output)."""
    root = tmp_path_factory.mktemp("wheel")
    src = copy_buildable_source(root / "polykern-src")
    dist = root / "dist"
    isolation = ["--no-build-isolation"] if _has_build_backend() else []
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", dist, src], root)
    wheels = sorted(dist.glob("polykern-*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = root / "venv"
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", env_dir], root)
    py = env_dir / "bin" / "python"
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], root).stdout.strip())
    deps = [p for p in sys.path if p.endswith("-packages") and os.path.isdir(p)]
    (site / "_polykern_test_deps.pth").write_text("".join(p + "\n" for p in deps))
    pip = _run([py, "-m", "pip", "install", "--no-deps", f"{wheels[0]}[{EXTRAS}]"], root)
    return py, env_dir, pip.stdout + pip.stderr


def test_the_readme_names_extras_the_wheel_has(installed):
    _, _, pip_out = installed
    assert "does not provide the extra" not in pip_out, pip_out
    assert f'pip install "polykern[{EXTRAS}]' in README.read_text()


def test_the_wheel_is_what_runs(installed, tmp_path):
    py, env_dir, _ = installed
    out = _run([py, "-c", "import polykern, polykern_llvm, polykern_hexagon.runtime as h, os; "
                "print(polykern.__file__); print(polykern_llvm.__file__); "
                "print(sorted(os.listdir(os.path.dirname(h.__file__))))"], tmp_path).stdout.splitlines()
    assert all(line.startswith(str(env_dir)) for line in out[:2]), out
    assert "harness.c" in out[2] and "builtins.c" in out[2], "the wheel lacks the Hexagon harness sources"
    cli = _run([env_dir / "bin" / "polykern", "backends"], tmp_path).stdout
    assert re.search(r"^llvm\s+llvm\s+ok\s+yes", cli, re.M), cli


def test_the_readme_quickstart_runs_on_every_runtime_here(installed, tmp_path):
    py, _, _ = installed
    (tmp_path / "quickstart.py").write_text(quickstart_block(README.read_text()))
    out = _run([py, "quickstart.py"], tmp_path).stdout
    ran = re.findall(r"^(\w+) ok$", out, re.M)
    assert ran == backends.runnable_kinds(), out  # the wheel's entry points find what this environment finds
    assert "llvm" in ran
