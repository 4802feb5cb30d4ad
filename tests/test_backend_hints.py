"""Every fix that polykern's messages offer exists and would work.

The messages are collected for real: `polykern backends`, and the launch error of a module of every
kind, in this environment and in a CPU-only build (each backend's package without its runtime
files, exactly what Bazel's //backends/<x>:codegen holds under --config=cpu). Then each hint is run:

- `--config=<name>`: .bazelrc defines it (the generated `build:<name>` line);
- `polykern[<extra>]`: pip resolves it against a wheel built from this tree (`pip install --dry-run`)
  without "does not provide the extra", and the extra brings the requirements backends/backends.bzl
  gives it;
- `apt-get install <packages>`: `apt-get install -s` (simulation) knows every package.

The wheel build also shows that setuptools has nothing to warn about (the SPDX license string).
(Builds a wheel with pip: this file runs in the pytest tier, not under Bazel.)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from backend_list import REPO, gen

BACKENDS = gen.read_backends(REPO)

# Prints, as JSON: `polykern backends` rows and the launch error of one module of every kind.
_PROBE = r"""
import json, sys
import polykern as pk
from polykern import backends
from polykern.errors import PolykernError
from saxpy import saxpy  # examples/saxpy.py

targets = [t for t in sys.argv[1].split(",") if t]
rows = backends.status()
art = pk.build([saxpy], targets=targets).export(None)
errors = {}
for m in pk.load(art).imports:
    try:
        m.get_function("saxpy")
    except PolykernError as e:
        errors[m.kind] = str(e)
messages = {k: backends.runtime_missing_message(k, "saxpy") for r in rows for k in r["module_kinds"]}
print(json.dumps({"rows": rows, "errors": errors, "messages": messages}))
"""

def _runtime_files(b, pkg_dir):
    """The files that Bazel's :runtime target takes from polykern_<x>/ (backends.bzl _runtime_files)."""
    out = []
    for f in ["runtime.py", "runtime"] + list(b.runtime_srcs):
        if os.path.exists(os.path.join(pkg_dir, f)):
            out.append(f)
    return out


def _probe(tmp_path, site, name):
    """Run the probe and `polykern backends` with ``site`` (if any) first on sys.path. Python runs
    with -S and the environment's paths spelled out: an editable install's import hook (a .pth
    file) would otherwise find the runtime files that the simulated build leaves out."""
    (tmp_path / "probe.py").write_text(_PROBE)
    examples = os.path.join(REPO, "examples")
    import polykern

    if site is None:  # this environment as it is
        py, paths = [sys.executable], [examples]
    else:
        py = [sys.executable, "-S"]
        paths = [str(site), examples, os.path.dirname(os.path.dirname(polykern.__file__))]
        paths += [p for p in sys.path if p.endswith("-packages") and os.path.isdir(p)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    targets = ",".join(t for b in BACKENDS for t in b.targets)
    r = subprocess.run(py + [str(tmp_path / "probe.py"), targets], env=env, capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, f"{name}: {r.stderr[-3000:]}"
    cli = subprocess.run(py + ["-m", "polykern", "backends"], env=env, capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["cli"] = cli.stdout
    return out


@pytest.fixture(scope="module")
def here(tmp_path_factory):
    return _probe(tmp_path_factory.mktemp("here"), None, "this environment")


@pytest.fixture(scope="module")
def cpu_build(tmp_path_factory):
    """Each backend package without its runtime files first on sys.path: the --config=cpu compiler."""
    root = tmp_path_factory.mktemp("cpu_build")
    site = root / "site"
    for b in BACKENDS:
        src = os.path.join(REPO, "backends", b.name, f"polykern_{b.name}")
        skip = set(_runtime_files(b, src))
        shutil.copytree(src, site / f"polykern_{b.name}",
                        ignore=lambda d, names, src=src, skip=skip: [n for n in names if os.path.samefile(d, src)
                                                                     and n in skip] + ["__pycache__"])
    return _probe(root, site, "the CPU-only build")


def _texts(report):
    rows = report["rows"]
    return ([report["cli"]] + [r["runtime_reason"] for r in rows] + [r["codegen_error"] for r in rows]
            + list(report["errors"].values()) + list(report["messages"].values()))


def _hints(reports):
    configs, extras, apt = set(), set(), set()
    for rep in reports:
        for t in _texts(rep):
            configs.update(re.findall(r"--config=([A-Za-z0-9_.-]+)", t))
            extras.update(re.findall(r"polykern\[([A-Za-z0-9_,-]+)\]", t))
            for m in re.findall(r"apt-get install ((?:[a-z0-9][a-z0-9.+-]+ ?)+)", t):
                apt.add(m.strip())
    return configs, extras, apt


def test_a_cpu_only_build_names_the_config_that_adds_the_runtime(cpu_build):
    rows = {r["name"]: r for r in cpu_build["rows"]}
    assert all(r["codegen_ok"] for r in rows.values()), rows
    assert not any(r["runtime_available"] for r in rows.values()), "the simulated build still has a runtime"
    llvm = rows["llvm"]["runtime_reason"]
    assert llvm == "the LLVM CPU runtime is not part of this build (build with --config=llvm)", llvm
    assert "--config=cpu" not in cpu_build["cli"], "a --config=cpu build must not tell the user to use --config=cpu"
    assert rows["cuda"]["runtime_reason"] == ("the CUDA runtime is not part of this build (build with --config=cuda, "
                                              "or pip install polykern[cuda])")


def test_every_config_hint_is_defined_in_bazelrc(here, cpu_build):
    configs, _, _ = _hints([here, cpu_build])
    assert "llvm" in configs and "cuda" in configs  # the collection itself works
    rc = open(os.path.join(REPO, ".bazelrc")).read()
    defined = set(re.findall(r"^(?:build|common|test):([A-Za-z0-9_.-]+)\s", rc, re.M))
    missing = sorted(configs - defined)
    assert not missing, f"messages suggest --config={missing}, which .bazelrc does not define"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """polykern built from this tree's tracked files with pip (build isolation: setuptools from the index)."""
    src = tmp_path_factory.mktemp("src")
    files = subprocess.run(["git", "ls-files", "-z", "--", "pyproject.toml", "setup.py", "README.md", "python",
                            "backends/*/polykern_*"], cwd=REPO, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        os.makedirs(src / os.path.dirname(rel), exist_ok=True)
        shutil.copyfile(os.path.join(REPO, rel), src / rel)
    dist = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-cache-dir", "-w", str(dist),
                        str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (whl,) = dist.glob("polykern-*.whl")
    return whl, r.stdout + r.stderr


def test_pip_install_prints_no_setuptools_deprecation(wheel):
    _, log = wheel
    assert "SetuptoolsDeprecationWarning" not in log, log[log.find("SetuptoolsDeprecationWarning") - 300:][:1500]


def test_every_extra_hint_installs_its_requirements(here, cpu_build, wheel):
    whl, _ = wheel
    _, extras, _ = _hints([here, cpu_build])
    assert "cuda" in extras  # the collection itself works
    by_extra = {b.extra: b for b in BACKENDS if b.extra}
    with zipfile.ZipFile(whl) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    provided = set(re.findall(r"^Provides-Extra: (\S+)", meta, re.M))
    for extra in sorted(extras):
        assert extra in provided, f"messages suggest polykern[{extra}], which the wheel does not provide"
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--disable-pip-version-check",
                            f"polykern[{extra}] @ {whl.as_uri()}"], capture_output=True, text=True, timeout=300)
        log = r.stdout + r.stderr
        assert "does not provide the extra" not in log, log
        # Resolved (already installed here) or looked for on the index: either way pip installs them.
        for req in by_extra[extra].extra_requirements:
            name = re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0]
            assert re.search(rf"(satisfied|found for|Would install)[^\n]*{re.escape(name)}", log, re.I), \
                f"pip install polykern[{extra}] does not bring {req}:\n{log}"


def test_every_apt_hint_names_packages_that_exist(here, cpu_build):
    _, _, apt = _hints([here, cpu_build])
    assert any("qemu-user-static" in a for a in apt), apt  # hexagon's hint (the collection itself works)
    if shutil.which("apt-get") is None:
        pytest.skip(f"no apt-get on this host to check {sorted(apt)}")
    for pkgs in sorted(apt):
        r = subprocess.run(["apt-get", "install", "-s", *pkgs.split()], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"apt-get install {pkgs}: {r.stdout[-1000:]}{r.stderr[-1000:]}"


def test_messages_use_the_right_article(here, cpu_build):
    """"an 'opencl' module", never "a 'opencl' module"."""
    for rep in (here, cpu_build):
        for t in _texts(rep):
            assert not re.search(r"\ba '?[aeiouAEIOU]", t), t
