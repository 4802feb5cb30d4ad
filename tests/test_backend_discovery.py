"""Backend discovery (polykern.backends, docs/backends.md "Discovery"): entry points and
POLYKERN_BACKEND_PATH only; a ``polykern_*`` folder that merely sits on sys.path is never imported."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from polykern import backends, registry
from polykern.testing.isolation import isolated
from backend_discovery_support import (CODEGEN, DECLARING, isolated_discovery, make_package,  # noqa: F401 (fixture)
                                      write_dist_info)

_MARKER = """
    import os
    open(os.environ["ZZ_MARKER"], "a").write("{name} was imported\\n")
    def register_backend():
        from polykern import backends
        return backends.declare("{name}", "{name}")
"""


def test_polykern_folder_on_sys_path_is_not_imported(tmp_path, monkeypatch):
    marker = tmp_path / "marker.txt"
    monkeypatch.setenv("ZZ_MARKER", str(marker))
    make_package(tmp_path, "zzstray", _MARKER.format(name="zzstray"))
    monkeypatch.syspath_prepend(str(tmp_path))
    names = {r.name for r in backends.load_all()}
    assert "zzstray" not in names
    assert "polykern_zzstray" not in sys.modules
    assert not marker.exists(), marker.read_text()


def test_backend_path_folders_and_module_names(tmp_path, monkeypatch):
    dev = tmp_path / "dev"  # not on sys.path: reached through the folder entry only
    make_package(dev, "zzdisc", DECLARING.format(name="zzdisc", display="ZZ"), codegen=CODEGEN.format(name="zzdisc"),
             runtime="raise ImportError('zzdriver is missing')\n")
    make_package(dev, "zzbroken", "raise RuntimeError('boom at import')\n")
    make_package(dev, "zzsilent", "def register_backend():\n    pass\n")
    onpath = tmp_path / "onpath"
    make_package(onpath, "zzmod", DECLARING.format(name="zzmod", display="ZM"), codegen=CODEGEN.format(name="zzmod"),
             runtime="def register():\n    pass\n")
    monkeypatch.syspath_prepend(str(onpath))
    entries = [str(dev / "polykern_zzdisc"), "polykern_zzmod", str(dev / "polykern_zzbroken"),
               str(dev / "polykern_zzsilent"), str(tmp_path / "nothing_here"), "not a-module"]
    monkeypatch.setenv(backends.PATH_ENV, os.pathsep.join(entries))
    assert backends.path_entries() == entries
    recs = {r.name: r for r in backends.load_all()}
    disc = recs["zzdisc"]
    assert disc.codegen_ok and disc.origin == f"POLYKERN_BACKEND_PATH entry {entries[0]!r}"
    assert disc.runtime_reason == "polykern_zzdisc.runtime could not be imported: zzdriver is missing"
    assert registry.get("target.build.zzdisc") is not None
    assert str(dev) not in sys.path  # the folder entry imported the package without widening sys.path
    assert sys.modules["polykern_zzdisc.codegen"].__file__ == str(dev / "polykern_zzdisc" / "codegen.py")
    assert recs["zzmod"].runtime_available and recs["zzmod"].origin == "POLYKERN_BACKEND_PATH entry 'polykern_zzmod'"
    assert not recs["zzbroken"].codegen_ok and "boom at import" in recs["zzbroken"].codegen_error
    assert recs["zzsilent"].codegen_ok and "did not call" in recs["zzsilent"].runtime_reason
    assert "neither a module name nor the path" in recs["nothing_here"].codegen_error
    assert "neither a module name nor the path" in recs["not a-module"].codegen_error
    n = len(backends.records())
    backends.load_all()  # idempotent
    assert len(backends.records()) == n


def test_autoload_off_disables_the_path_too(tmp_path, monkeypatch):
    make_package(tmp_path, "zzdisc", DECLARING.format(name="zzdisc", display="ZZ"), codegen=CODEGEN.format(name="zzdisc"))
    monkeypatch.setenv(backends.PATH_ENV, str(tmp_path / "polykern_zzdisc"))
    monkeypatch.setenv(backends.AUTOLOAD_ENV, "0")
    assert backends.load_all() == []
    assert "polykern_zzdisc" not in sys.modules
    monkeypatch.setenv(backends.AUTOLOAD_ENV, "1")
    assert "zzdisc" in {r.name for r in backends.load_all()}


def test_entry_point_of_a_dist_info_on_sys_path_and_dev_path_wins(tmp_path, monkeypatch):
    """A .dist-info on sys.path (what pip writes, and what Bazel generates for each backend's
    :codegen) is found through the entry-point group; a POLYKERN_BACKEND_PATH copy of the same
    backend loads first and wins."""
    site = tmp_path / "site"
    make_package(site, "zzdup", DECLARING.format(name="zzdup", display="INSTALLED"), codegen=CODEGEN.format(name="zzdup"))
    make_package(site, "zzdisc", DECLARING.format(name="zzdisc", display="ZZ"), codegen=CODEGEN.format(name="zzdisc"))
    write_dist_info(site, "zz_backends", [("zzdup", "polykern_zzdup:register_backend"),
                                     ("zzdisc", "polykern_zzdisc:register_backend")])
    monkeypatch.syspath_prepend(str(site))
    recs = {r.name: r for r in backends.load_all()}
    assert recs["zzdisc"].origin == "entry point zzdisc = polykern_zzdisc:register_backend"
    assert recs["zzdup"].display_name == "INSTALLED"
    assert "llvm" in recs  # the in-tree backends come through the same group

    dev = tmp_path / "dev"
    make_package(dev, "zzdup", DECLARING.format(name="zzdup", display="DEV"), codegen=CODEGEN.format(name="zzdup"))
    for m in [m for m in sys.modules if m.startswith("polykern_zzdup")]:
        del sys.modules[m]
    monkeypatch.setenv(backends.PATH_ENV, str(dev / "polykern_zzdup"))
    with isolated(loaded=False):
        recs = {r.name: r for r in backends.load_all()}
        assert recs["zzdup"].display_name == "DEV"
        assert recs["zzdup"].origin.startswith("POLYKERN_BACKEND_PATH entry")
        assert sys.modules["polykern_zzdup"].__file__ == str(dev / "polykern_zzdup" / "__init__.py")


def test_folder_next_to_the_users_script_is_not_imported(tmp_path):
    """The scenario of the issue: a user's script sits next to a folder named polykern_<x>; Python
    puts the script's folder first on sys.path. polykern must not import it."""
    marker = tmp_path / "marker.txt"
    make_package(tmp_path, "zzstray", _MARKER.format(name="zzstray"))
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent("""
        import json
        import polykern as pk
        from polykern import f32, i32, Buffer

        @pk.kernel
        def scale(n: i32, a: f32, y: Buffer[f32]):
            i = pk.global_id(0)
            if i < n:
                y[i] = a * y[i]

        pk.build([scale], targets=["llvm"])
        print(json.dumps([r.name for r in pk.backends.records()]))
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYKERN_")}
    env["ZZ_MARKER"] = str(marker)
    proc = subprocess.run([sys.executable, str(script)], cwd=str(tmp_path), env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    names = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "llvm" in names and "zzstray" not in names
    assert not marker.exists(), marker.read_text()


def test_unreadable_metadata_is_listed_not_raised(monkeypatch):
    def broken(**kw):
        raise ValueError("bad METADATA in some.dist-info")

    monkeypatch.setattr(backends.importlib.metadata, "entry_points", broken)
    recs = {r.name: r for r in backends.load_all()}
    rec = recs["(polykern.backends entry points)"]
    assert not rec.codegen_ok and "ValueError: bad METADATA in some.dist-info" in rec.codegen_error
    assert "llvm" not in recs


def test_bazel_dist_info_declares_the_entry_points_of_pyproject():
    """backends/dist_info.bzl writes, for Bazel runs, the same entry point lines pip installs from
    pyproject.toml: one format for every backend, checked against every pyproject entry point."""
    import pathlib
    import re
    import tomllib

    root = pathlib.Path(__file__).resolve().parents[1]
    bzl, toml = root / "backends" / "dist_info.bzl", root / "pyproject.toml"
    if not (bzl.exists() and toml.exists()):
        pytest.skip("backends/dist_info.bzl and pyproject.toml are not in this test's runfiles (Bazel); "
                    "the pytest tier checks them")
    fmt = re.search(r'return "([^"]+)" % \(backend, backend\)', bzl.read_text()).group(1)
    eps = tomllib.loads(toml.read_text())["project"]["entry-points"]["polykern.backends"]
    assert eps, "pyproject.toml declares no polykern.backends entry point"
    for name, value in eps.items():
        assert fmt % (name, name) == f"{name} = {value}", f"backends/dist_info.bzl and pyproject.toml disagree on {name}"
