"""A plugin's registration is all or nothing (polykern.backends, docs/backends.md "Discovery"): a
backend owns its module kinds only once its codegen registered, and a package whose register_backend()
fails leaves nothing behind but the record of its failure. Was: a broken plugin
on POLYKERN_BACKEND_PATH declaring kind ``llvm`` kept owning it, so ``polykern backends`` and the
"cannot launch" messages blamed the plugin, llvm's device list was empty and autotune cache keys
lost the device."""
import os
import sys

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, backends, f32, i32, registry
from backend_discovery_support import CODEGEN, isolated_discovery, make_package  # noqa: F401 (fixture)

_MODULES = ("polykern_zzclaim", "polykern_zzhalf", "polykern_zzsquat", "polykern_zzlone")


@pytest.fixture(autouse=True)
def _forget_modules():
    yield
    for m in [m for m in sys.modules if m.split(".")[0] in _MODULES]:
        del sys.modules[m]


@pk.kernel
def _inc(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = y[i] + 1.0


_CLAIMS_LLVM_THEN_CODEGEN_FAILS = """
    def register_backend():
        from polykern import backends
        return backends.declare("zzclaim", "llvm", codegen="polykern_zzclaim.codegen")
"""
_DECLARES_THEN_RAISES = """
    def register_backend():
        from polykern import backends
        backends.declare("zzhalf", ["zzhalf", "llvm"], codegen="polykern_zzhalf.codegen")
        raise RuntimeError("zzhalf: the second half of the registration failed")
"""
_SQUATS_THEN_RAISES = """
    def register_backend():
        from polykern import registry
        registry.register("target.build.llvm", lambda funcs, target: None)
        raise RuntimeError("zzsquat gave up")
"""


def _load(monkeypatch, *pkgs):
    monkeypatch.setenv(backends.PATH_ENV, os.pathsep.join(str(p) for p in pkgs))
    return {r.name: r for r in backends.load_all()}


def test_a_declaration_whose_codegen_fails_owns_no_kind(tmp_path, monkeypatch):
    pkg = make_package(tmp_path, "zzclaim", _CLAIMS_LLVM_THEN_CODEGEN_FAILS,
                   codegen="raise RuntimeError('zzclaim codegen is broken')\n")
    recs = _load(monkeypatch, pkg)
    assert not recs["zzclaim"].codegen_ok and "zzclaim codegen is broken" in recs["zzclaim"].codegen_error
    cpu = recs["llvm"].devices()["devices"]
    assert cpu
    tuned = pk.autotune(configs=[{"block": 32}, {"block": 64}], key=["n"], enabled=False)(_inc).build(["llvm"])
    assert tuned.identity([4, np.zeros(4, np.float32)])["device"] == cpu  # was: [] (the zzclaim record's)
    llvm = backends.record_for_kind("llvm")
    assert llvm is recs["llvm"] and llvm.codegen_ok  # was: the zzclaim record
    assert backends.runtime_reason("llvm") == ""  # was: "the zzclaim backend failed to load: ..."


def test_a_package_whose_register_backend_fails_leaves_nothing_behind(tmp_path, monkeypatch):
    pkg = make_package(tmp_path, "zzhalf", _DECLARES_THEN_RAISES, codegen=CODEGEN.format(name="zzhalf"))
    recs = _load(monkeypatch, pkg)
    half = recs["zzhalf"]
    assert not half.codegen_ok and half.module_kinds == ()
    assert half.codegen_error == ("polykern_zzhalf failed to initialize: RuntimeError: zzhalf: the second half of "
                                  "the registration failed")
    assert registry.get("target.build.zzhalf") is None  # was: registered by the declaration that was kept
    assert backends.record_for_kind("zzhalf") is None
    assert backends.record_for_kind("llvm") is recs["llvm"]


def test_a_failed_package_does_not_keep_an_entry_it_took_from_a_later_backend(tmp_path, monkeypatch):
    pkg = make_package(tmp_path, "zzsquat", _SQUATS_THEN_RAISES)
    recs = _load(monkeypatch, pkg)  # path entries load first: zzsquat registers target.build.llvm, then fails
    assert not recs["zzsquat"].codegen_ok and "zzsquat gave up" in recs["zzsquat"].codegen_error
    assert recs["llvm"].codegen_ok, recs["llvm"].codegen_error  # was: "'target.build.llvm' is already registered"
    assert backends.owner_of("target.build.llvm") is recs["llvm"]
    assert "backend 'llvm'" in backends.describe_entry("target.build.llvm")


def test_a_kind_only_a_failed_backend_declares_names_it(tmp_path, monkeypatch):
    pkg = make_package(tmp_path, "zzlone", _CLAIMS_LLVM_THEN_CODEGEN_FAILS.replace("zzclaim", "zzlone")
                   .replace('"llvm"', '"zzlone"'), codegen="raise RuntimeError('no zz today')\n")
    _load(monkeypatch, pkg)
    assert backends.record_for_kind("zzlone") is None
    assert backends.runtime_reason("zzlone") == (  # it owns nothing, but it is why nothing provides the kind
        "the zzlone backend failed to load: polykern_zzlone.codegen failed to initialize: RuntimeError: no zz today")



def _declare_pending_runtime(monkeypatch, kind):
    """Backend ``kind`` whose runtime (module ``polykern_<kind>_runtime``, pending: imported on first need)
    registers ``module.create.<kind>`` and ``runtime.stream.<kind>``."""
    mod = type(sys)(f"polykern_{kind}_runtime")
    mod.register = lambda: (registry.register(f"module.create.{kind}", lambda *a: f"a {kind} module"),
                            registry.register(f"runtime.stream.{kind}", lambda dev, default: f"a {kind} stream"))
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    backends.declare(kind, kind, codegen=lambda: registry.register(f"target.build.{kind}", lambda f, t: None),
                     runtime=mod.__name__)


def test_a_runtime_loaded_inside_another_registration_keeps_its_names(monkeypatch):
    """A registration that looks a runtime's name up (``registry.get("runtime.stream.<kind>")``) loads that runtime
    inside its own attempt. When the attempt then failed, undoing it removed the runtime's names too while the
    runtime's record said it had loaded (``module.create.<kind>`` was gone for good); when it succeeded, it counted
    the runtime's names as its own."""
    _declare_pending_runtime(monkeypatch, "zzrta")

    def looks_then_fails():
        assert registry.get("runtime.stream.zzrta") is not None  # loads zzrta's runtime here
        raise RuntimeError("zzlook gave up")

    failed = backends.declare("zzlook", "zzlook", codegen=looks_then_fails)
    assert not failed.codegen_ok and "zzlook gave up" in failed.codegen_error
    assert backends.record_for_kind("zzrta").runtime_available
    assert registry.get("module.create.zzrta")() == "a zzrta module"
    assert registry.get("runtime.stream.zzrta")(None, False) == "a zzrta stream"

    _declare_pending_runtime(monkeypatch, "zzrtb")

    def looks():
        registry.register("target.build.zzlook2", lambda f, t: None)
        assert registry.get("runtime.stream.zzrtb") is not None

    ok = backends.declare("zzlook2", "zzlook2", codegen=looks)
    assert ok.registered == ("target.build.zzlook2",)
    assert backends.owner_of("runtime.stream.zzrtb").name == "zzrtb"
