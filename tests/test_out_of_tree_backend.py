"""The out-of-tree example backend (examples/out_of_tree_backend, kind ``csrc``) end to end, in a fresh
virtualenv that holds only what pip installs into it (no system or repository site-packages):

1. with polykern-csrc installed: discovered through its entry point; `polykern compile` exports an
   artifact with a csrc and an llvm module; the csrc module compiles with the host's C compiler and
   runs (numbers checked against NumPy);
2. after `pip uninstall polykern-csrc`: the same artifact loads (its csrc module is unavailable and
   names what to install), `polykern inspect` shows it, re-export gives the same bytes, and the kernel
   runs on the llvm module; a copy of the package next to the script is NOT imported;
3. POLYKERN_BACKEND_PATH naming the package folder brings it back without installing it.

pip fetches numpy, llvmlite, setuptools and wheel (the versions of this interpreter's environment)
from the package index or pip's cache; polykern and the example are installed from copies of this
checkout without build isolation.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import llvmlite
import numpy as np
import pytest
from pip_source import IGNORE as _IGNORE, copy_buildable_source

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "out_of_tree_backend"

KERNELS = '''
import os
import sys

import polykern as pk
from polykern import Buffer, f32, f64, i32

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from saxpy import saxpy  # noqa: E402,F401  (examples/saxpy.py, copied beside this file)


@pk.kernel
def poly(n: i32, x: Buffer[f64, "readonly"], out: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        v = x[i] * x[i] - 3.0 * x[i]
        out[i] = i32(pk.floor(v)) // 7 + pk.abs(i32(v)) % 5


@pk.kernel
def histogram(n: i32, x: Buffer[i32, "readonly"], bins: Buffer[i32], top: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        pk.atomic_add(bins, x[i] & 7, 1)
        pk.atomic_max(top, 0, f32(x[i]) * 0.5)
'''

CHECK = '''
import json, sys
import numpy as np
import polykern as pk

root = pk.load("k.kbin")
rng = np.random.default_rng(7)
n = 1003
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
expect = np.float32(2.5) * x + y
xd = rng.uniform(-50, 50, n)
v = xd * xd - 3.0 * xd
fl = np.floor(v).astype(np.int32)
want_poly = (np.trunc(fl / 7).astype(np.int32) + np.abs(v.astype(np.int32)) % 5).astype(np.int32)
out = np.zeros(n, dtype=np.int32)
on = sys.argv[1]
mod = root if on == "root" else root.on(on)
mod["saxpy"](n, 2.5, x, y, grid=(n + 63) // 64, block=64)
mod["poly"](n, xd, out, grid=(n + 63) // 64, block=64)
xi = rng.integers(-1000, 1000, n).astype(np.int32)
bins, top = np.zeros(8, dtype=np.int32), np.full(1, -np.inf, dtype=np.float32)
mod["histogram"](n, xi, bins, top, grid=(n + 63) // 64, block=64)
np.testing.assert_array_equal(y, expect)
np.testing.assert_array_equal(out, want_poly)
np.testing.assert_array_equal(bins, np.bincount(xi & 7, minlength=8))
assert top[0] == np.float32(xi.max()) * np.float32(0.5)
csrc = root.on("csrc")
print(json.dumps({"csrc_type": type(csrc).__name__, "csrc_runnable": csrc.is_runnable,
                  "ran_on": root["saxpy"].module.kind,
                  "reexport_same": root.export() == open("k.kbin", "rb").read(),
                  "message": "" if csrc.is_runnable else csrc.not_runnable_reason("saxpy")}))
'''


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("POLYKERN_", "PYTHON", "VIRTUAL_ENV", "PIP_"))}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def _run(cmd, cwd, **env):
    proc = subprocess.run([str(c) for c in cmd], cwd=str(cwd), env=_clean_env(**env), capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """(bin dir, work dir, example copy): a clean virtualenv with polykern installed from this checkout."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler (cc or gcc) is not on PATH: the csrc example runtime needs one")
    root = tmp_path_factory.mktemp("oot")
    src = copy_buildable_source(root / "polykern-src")
    example = root / "example"
    shutil.copytree(EXAMPLE, example, ignore=_IGNORE)
    env_dir = root / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    _run([base, "-m", "venv", env_dir], root)  # no --system-site-packages: nothing but what pip installs
    bin_dir = env_dir / "bin"
    py = bin_dir / "python"
    _run([py, "-m", "pip", "install", "-q", "setuptools>=77", "wheel", f"numpy=={np.__version__}",
          f"llvmlite=={llvmlite.__version__}"], root)
    _run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", src], root)
    work = root / "work"
    work.mkdir()
    (work / "kernels.py").write_text(KERNELS)
    shutil.copy(REPO / "examples" / "saxpy.py", work / "saxpy.py")
    (work / "check.py").write_text(CHECK)
    isolated = _run([py, "-c", "import sys, polykern; print(polykern.__file__); print(sys.path)"], work)
    assert str(env_dir) in isolated.splitlines()[0] and str(REPO) not in isolated
    return bin_dir, work, example


def _check(bin_dir, work, on, **env):
    return json.loads(_run([bin_dir / "python", work / "check.py", on], work, **env).strip().splitlines()[-1])


def test_end_to_end_in_a_fresh_virtualenv(venv):
    """One test (the phases share one virtualenv and one artifact, whichever worker runs it)."""
    bin_dir, work, example = venv
    _installed_discovered_compiles_exports_and_runs(bin_dir, work, example)
    _not_installed_loads_inspects_reexports_and_runs_elsewhere(bin_dir, work, example)
    _development_path_brings_it_back(bin_dir, work, example)


def _installed_discovered_compiles_exports_and_runs(bin_dir, work, example):
    _run([bin_dir / "python", "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", example], work)
    rows = {r["name"]: r for r in json.loads(_run([bin_dir / "polykern", "backends", "--json"], work))}
    assert rows["csrc"]["origin"] == "entry point csrc = polykern_csrc:register_backend"
    assert rows["csrc"]["codegen_ok"] and rows["csrc"]["runtime_available"], rows["csrc"]
    _run([bin_dir / "polykern", "compile", "kernels.py", "--target", "csrc", "--target", "llvm", "-o", "k.kbin"], work)
    for on in ("csrc", "root"):
        got = _check(bin_dir, work, on)
        assert got["csrc_type"] == "CSourceModule" and got["csrc_runnable"], got
        assert got["ran_on"] == "csrc" and got["reexport_same"], got
    (work / "k_installed.kbin").write_bytes((work / "k.kbin").read_bytes())


def _not_installed_loads_inspects_reexports_and_runs_elsewhere(bin_dir, work, example):
    _run([bin_dir / "python", "-m", "pip", "uninstall", "-q", "-y", "polykern-csrc"], work)
    shutil.copytree(example / "src" / "polykern_csrc", work / "polykern_csrc")  # next to the script: ignored
    try:
        rows = {r["name"] for r in json.loads(_run([bin_dir / "polykern", "backends", "--json"], work))}
        assert "csrc" not in rows
        got = _check(bin_dir, work, "root")
        assert got["csrc_type"] == "UnavailableModule" and not got["csrc_runnable"], got
        assert got["ran_on"] == "llvm" and got["reexport_same"], got
        assert "module of kind 'csrc'" in got["message"] and "polykern.backends" in got["message"], got["message"]
        listing = _run([bin_dir / "polykern", "inspect", "k.kbin"], work)
        assert "csrc" in listing and "saxpy" in listing
        c_source = _run([bin_dir / "polykern", "inspect", "--source", "c", "k.kbin"], work)
        assert "void pk_launch_saxpy(void *const *pk_args, const int64_t *pk_dims)" in c_source
        desc = json.loads(_run([bin_dir / "polykern", "inspect", "--json", "k.kbin"], work))
        assert [m["kind"] for m in desc["modules"]] == ["root", "csrc", "llvm"]
    finally:
        shutil.rmtree(work / "polykern_csrc")


def _development_path_brings_it_back(bin_dir, work, example):
    """POLYKERN_BACKEND_PATH naming the package folder: the backend runs again, nothing installed."""
    got = _check(bin_dir, work, "csrc", POLYKERN_BACKEND_PATH=str(example / "src" / "polykern_csrc"))
    assert got["csrc_type"] == "CSourceModule" and got["ran_on"] == "csrc" and got["reexport_same"], got
    assert (work / "k.kbin").read_bytes() == (work / "k_installed.kbin").read_bytes()


def _dev_backend(monkeypatch):
    """The example, loaded in this process from its folder (POLYKERN_BACKEND_PATH), in a private registry."""
    from polykern import backends
    from polykern.testing.isolation import isolated

    monkeypatch.setenv(backends.PATH_ENV, str(EXAMPLE / "src" / "polykern_csrc"))
    return isolated(loaded=False)


@pytest.fixture
def _forget_example():
    yield
    for m in [m for m in sys.modules if m.split(".")[0] == "polykern_csrc"]:
        del sys.modules[m]


def test_fallback_contract(monkeypatch, _forget_example):
    """The example keeps the fallback contract: a host without a C compiler builds the same bytes."""
    import polykern as pk
    from polykern import Buffer, f32, i32, registry
    from polykern.target import Target
    from polykern.testing.fallback_contract import check_fallback_contract

    @pk.kernel
    def scale(n: i32, a: f32, y: Buffer[f32]):
        i = pk.global_id(0)
        if i < n:
            y[i] = a * y[i]

    with _dev_backend(monkeypatch):
        pk.backends.load_all()
        report = check_fallback_contract("csrc", lambda: registry.get("target.build.csrc")([scale.ir], Target("csrc")))
        assert report["compared_with_real"]


def test_refusals_are_located(tmp_path, monkeypatch, _forget_example):
    """What the example cannot run (work-items run one after another) is refused at compile time,
    pointing at the user's line."""
    import polykern as pk
    from polykern import Buffer, f32, i32
    from polykern.errors import KernelTypeError

    @pk.kernel
    def with_barrier(n: i32, y: Buffer[f32]):
        i = pk.global_id(0)
        pk.barrier()
        y[i] = 1.0

    with _dev_backend(monkeypatch):
        with pytest.raises(KernelTypeError, match="barrier\\(\\) is not supported") as e:
            pk.build([with_barrier], targets=["csrc"])
    assert "test_out_of_tree_backend.py" in str(e.value)
