"""polykern.registry and polykern.backends: registration, discovery, status and messages."""
import threading

import pytest

from polykern import backends, registry
from polykern.errors import BackendUnavailableError
from polykern.testing.isolation import isolated


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv("POLYKERN_BACKEND_AUTOLOAD", raising=False)
    with isolated():
        yield


def test_register_get_require_names_remove():
    f = lambda: 1  # noqa: E731
    assert registry.register("test.reg.a", f) is f
    assert registry.get("test.reg.a") is f and registry.require("test.reg.a") is f
    assert registry.get("test.reg.missing") is None
    with pytest.raises(ValueError, match="already registered"):
        registry.register("test.reg.a", lambda: 2)
    g = lambda: 2  # noqa: E731
    registry.register("test.reg.a", g, override=True)
    assert registry.get("test.reg.a") is g

    @registry.register("test.reg.b")
    def h():
        return 3

    assert registry.get("test.reg.b") is h
    assert registry.names("test.reg.") == ["test.reg.a", "test.reg.b"]
    with pytest.raises(BackendUnavailableError, match="'test.reg.c'.*test.reg.a, test.reg.b") as e:
        registry.require("test.reg.c")
    assert isinstance(e.value, ImportError)
    assert registry.remove("test.reg.a") and not registry.remove("test.reg.a")
    assert registry.names("test.reg.") == ["test.reg.b"]
    for bad in ("", " x", 3):
        with pytest.raises(ValueError):
            registry.register(bad, f)


def test_concurrent_registration():
    def worker(i):
        for j in range(50):
            registry.register(f"test.conc.{i}.{j}", i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(registry.names("test.conc.")) == 400


def test_snapshot_restore():
    before = registry.snapshot()
    registry.register("test.snap.x", 1)
    assert registry.restore(before) == ["test.snap.x"] and registry.get("test.snap.x") is None


def test_restore_puts_back_what_was_replaced_or_removed():
    registry.register("test.snap.kept", "old")
    registry.register("test.snap.gone", "old")
    try:
        before = registry.snapshot()
        registry.register("test.snap.kept", "new", override=True)
        registry.remove("test.snap.gone")
        assert registry.restore(before) == ["test.snap.gone", "test.snap.kept"]
        assert registry.get("test.snap.kept") == "old" and registry.get("test.snap.gone") == "old"
    finally:
        registry.remove("test.snap.kept")
        registry.remove("test.snap.gone")


def test_declare_registers_codegen_and_records_runtime_failure():
    def codegen():
        registry.register("target.build.fake", lambda funcs, target: None)

    def runtime():
        registry.register("module.create.fakek", lambda *a: None)  # half-done, then fails
        raise ModuleNotFoundError("No module named 'fakedriver'", name="fakedriver")

    rec = backends.declare("fake", ["fakek"], display_name="Fake", extra="fake", config="fake",
                           hint="on a host with a fake driver", codegen=codegen, runtime=runtime)
    assert rec.codegen_ok and not rec.runtime_available
    assert rec.runtime_reason == "fakedriver could not be imported: No module named 'fakedriver'"
    assert registry.get("target.build.fake") is not None
    assert registry.get("module.create.fakek") is None  # the failed runtime's registrations are undone
    assert backends.record_for_kind("fakek") is rec
    assert backends.declare("fake", "fakek") is rec  # idempotent
    assert backends.runtime_missing_message("fakek", "k") == (
        "Fake runtime is not available in this environment (fakedriver could not be imported: No module named "
        "'fakedriver'); cannot launch 'k'. Install polykern[fake] on a host with a fake driver, build with "
        "--config=fake, or load this artifact where the Fake runtime exists.")


def test_declare_codegen_failure_and_runtime_success_with_devices():
    rec = backends.declare("broken", "brk", codegen=lambda: 1 / 0, runtime=lambda: None)
    assert not rec.codegen_ok and "ZeroDivisionError" in rec.codegen_error
    assert "codegen failed" in rec.runtime_reason
    assert backends.runtime_reason("brk").startswith("the broken backend failed to load")

    def register_runtime():
        registry.register("module.load_from_bytes.okk", lambda d, s: None)

    ok = backends.declare("okb", "okk", runtime=register_runtime, devices=lambda: ["Dev 0", "Dev 1"])
    assert ok.runtime_available and backends.runtime_reason("okk") == ""
    assert "compile-only fallback" in backends.runtime_missing_message("okk", "k")
    bad_dev = backends.declare("badev", "bdk", runtime=lambda: None,
                               devices=lambda: (_ for _ in ()).throw(OSError("no driver")))
    rows = {r["name"]: r for r in backends.status()}
    assert rows["okb"]["devices"] == ["Dev 0", "Dev 1"] and rows["okb"]["runtime_available"]
    assert rows["badev"]["devices"] == [] and "OSError: no driver" in rows["badev"]["devices_error"]
    assert rows["broken"]["codegen_ok"] is False
    assert bad_dev.runtime_available


def test_unknown_kind_messages(monkeypatch):
    assert backends.runtime_reason("zzz") == "no installed polykern backend provides the 'zzz' module kind"
    monkeypatch.setenv("POLYKERN_BACKEND_AUTOLOAD", "0")
    assert "POLYKERN_BACKEND_AUTOLOAD=0" in backends.runtime_reason("zzz")
    assert backends.display_name("zzz") == "zzz"


def test_messages_offer_only_the_fixes_that_exist():
    """No extra/config: the message offers neither (an in-tree backend without a pip extra or a
    Bazel config must not print a command that does not exist); an out-of-tree backend names its
    own install step."""
    def no_runtime():
        raise ImportError("no driver here")

    backends.declare("bare", "barek", display_name="Bare", codegen=lambda: None, runtime=no_runtime)
    assert backends.runtime_missing_message("barek", "k") == (
        "Bare runtime is not available in this environment (bare runtime could not be imported: no driver here); "
        "cannot launch 'k'. Load this artifact where the Bare runtime exists.")
    backends.declare("oot", "ootk", display_name="OOT", install="pip install polykern-oot", hint="on Linux",
                     extra="ignored-when-install-is-set", codegen=lambda: None, runtime=no_runtime)
    assert backends.runtime_missing_message("ootk", "k").endswith(
        "cannot launch 'k'. Run pip install polykern-oot on Linux, or load this artifact where the OOT runtime exists.")
    backends.declare("hinted", "hintk", display_name="Hinted", config="hinted", hint="where qemu is installed",
                     codegen=lambda: None, runtime=no_runtime)
    assert backends.runtime_missing_message("hintk", "k").endswith(
        "cannot launch 'k'. Build with --config=hinted, or load this artifact where the Hinted runtime exists "
        "(where qemu is installed).")
    rec = backends.declare("absent2", "absent2", display_name="Absent2", codegen=lambda: None,
                           runtime="polykern.this_runtime_is_not_in_the_build_either")
    assert rec.runtime_reason == "the Absent2 runtime is not part of this build"
