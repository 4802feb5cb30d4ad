"""Backend discovery against careless or broken plugins (red-team pass over the plugin interface): a plugin that calls
sys.exit() while importing or registering is listed with its reason and does not end the process or
stop the other backends; an entry point may name a dotted attribute (``module:Class.method``), as
the entry-point specification allows."""
import sys
import textwrap

import pytest

from polykern import backends, registry
from backend_discovery_support import (CODEGEN, DECLARING, write_dist_info,  # noqa: F401 (fixture)
                                      isolated_discovery, make_package)

_MODULES = ("polykern_zzexit", "polykern_zzexitreg", "polykern_zznest", "polykern_zzfine")


@pytest.fixture(autouse=True)
def _forget_modules():
    """Inside test_backend_discovery's isolation (isolated_discovery): the packages made here are imported afresh."""
    yield
    for m in [m for m in sys.modules if m.split(".")[0] in _MODULES]:
        del sys.modules[m]


def test_a_plugin_calling_sys_exit_is_listed_and_the_others_load(tmp_path, monkeypatch):
    site = tmp_path / "site"
    make_package(site, "zzexit", "import sys\nsys.exit('zzexit needs libzz, which is not installed')\n")
    make_package(site, "zzexitreg", "def register_backend():\n    raise SystemExit(3)\n")
    make_package(site, "zzfine", DECLARING.format(name="zzfine", display="FINE"), codegen=CODEGEN.format(name="zzfine"))
    write_dist_info(site, "zz_exiting", [("zzexit", "polykern_zzexit:register_backend"),
                                    ("zzexitreg", "polykern_zzexitreg:register_backend"),
                                    ("zzfine", "polykern_zzfine:register_backend")])
    monkeypatch.syspath_prepend(str(site))
    recs = {r.name: r for r in backends.load_all()}  # was: SystemExit out of load_all
    assert not recs["zzexit"].codegen_ok
    assert recs["zzexit"].codegen_error == ("polykern_zzexit failed to initialize: SystemExit: zzexit needs libzz, "
                                            "which is not installed")
    assert not recs["zzexitreg"].codegen_ok and "SystemExit: 3" in recs["zzexitreg"].codegen_error
    assert recs["zzfine"].codegen_ok and registry.get("target.build.zzfine") is not None
    assert recs["llvm"].codegen_ok


def test_a_runtime_calling_sys_exit_is_a_runtime_reason(tmp_path, monkeypatch):
    dev = tmp_path / "dev"
    make_package(dev, "zzexit", DECLARING.format(name="zzexit", display="ZX"), codegen=CODEGEN.format(name="zzexit"),
             runtime="import sys\nsys.exit('no zz device')\n")
    monkeypatch.setenv(backends.PATH_ENV, str(dev / "polykern_zzexit"))
    rec = {r.name: r for r in backends.load_all()}["zzexit"]
    assert rec.codegen_ok and not rec.runtime_available
    assert rec.runtime_reason == "polykern_zzexit.runtime failed to initialize: SystemExit: no zz device"


def test_an_entry_point_may_name_a_dotted_attribute(tmp_path, monkeypatch):
    site = tmp_path / "site"
    body = textwrap.dedent(DECLARING.format(name="zznest", display="NEST")).replace("def register_backend():",
                                                                                      "def _register():")
    make_package(site, "zznest", body + "\nclass Plugin:\n    register = staticmethod(_register)\n",
             codegen=CODEGEN.format(name="zznest"))
    write_dist_info(site, "zz_nest", [("zznest", "polykern_zznest:Plugin.register")])
    monkeypatch.syspath_prepend(str(site))
    rec = {r.name: r for r in backends.load_all()}["zznest"]  # was: "has no callable Plugin.register()"
    assert rec.codegen_ok and rec.display_name == "NEST", rec.codegen_error
    assert rec.origin == "entry point zznest = polykern_zznest:Plugin.register"
