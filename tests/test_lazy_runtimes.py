"""Runtimes are imported on first need (polykern.backends, docs/internals.md "Package layout"): compiling
imports no device binding (nor LLVM for targets that emit text); a built module imports its runtime when it is launched or asked whether it
can run; the registry's runtime names and the records' runtime fields import it when read."""
import os
import subprocess
import sys
import textwrap

import pytest

from polykern import backends, registry
from polykern.errors import RuntimeNotLinkedError
from polykern.module import DeferredModule, FallbackModule, FunctionInfo, create_with_fallback
from polykern.testing.isolation import isolated

BINDINGS = ("wgpu", "vulkan", "pyopencl", "pycuda", "Metal")
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def _run(code, cache=None):
    env = {**os.environ, "POLYKERN_CACHE": "0"} if cache is None else {**os.environ, "POLYKERN_CACHE": "1",
                                                                       "POLYKERN_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.split("\n")


@pytest.mark.parametrize("cache", ["off", "cold", "warm"])
def test_building_for_every_target_imports_no_runtime(cache, tmp_path):
    folder = None if cache == "off" else tmp_path
    for _ in range(2 if cache == "warm" else 1):  # warm: the second process reads every module from the cache
        lines = _run(CODE, folder)
    assert lines[0] == "False"
    assert lines[1] == "[]"
    assert lines[2] == "DeferredModule True"  # asking whether it runs imports the runtime
    assert lines[3] == "True"
    assert (int(lines[4]) > 0) == (cache == "warm")


CODE = f"""
        import sys
        sys.path.insert(0, {EXAMPLES!r})
        import polykern as pk
        import polykern.build_cache
        from saxpy import saxpy

        text = pk.build([saxpy], targets=["cuda -arch=sm_90a", "vulkan", "opencl", "webgpu", "metal"])
        text.export()
        print("llvmlite.binding" in sys.modules)  # text targets do not load LLVM
        mod = pk.build([saxpy], targets=["cuda -arch=sm_90a", "vulkan", "opencl", "webgpu", "metal", "rocm", "llvm"])
        mod.export()
        mod.inspect_source("spirv-asm")
        loaded = [m for m in sys.modules if m.split(".")[0] in {BINDINGS!r} or
                  (m.startswith("polykern_") and ".runtime" in m)]
        print(sorted(loaded))
        vulkan = mod.device_modules()[1]
        runnable = vulkan.is_runnable
        print(type(vulkan).__name__, runnable == pk.backends.record_for_kind("vulkan").runtime_available)
        print("polykern_vulkan.runtime" in sys.modules)
        print(pk.build_cache.stats()["disk_hits"])
"""


@pytest.fixture
def fake_runtime(tmp_path, monkeypatch):
    """A backend 'zzlazy' whose runtime module records that it was imported."""
    (tmp_path / "zzlazy_rt.py").write_text(textwrap.dedent("""
        from polykern import registry
        from polykern.module import DeviceModule
        IMPORTS = []
        IMPORTS.append(1)

        class Real(DeviceModule):
            is_runnable = True

            def _get_function(self, info):
                return lambda *a, grid=None, block=None: ("ran", info.name)

        def create(payload, fmt, fmap, sources):
            return Real("zzlazy", payload, fmt, fmap, sources)

        def register():
            registry.register("module.create.zzlazy", create)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "zzlazy_rt", raising=False)
    with isolated():
        yield backends.declare("zzlazy", "zzlazy", runtime="zzlazy_rt")


def _module():
    return create_with_fallback("zzlazy", b"code", "bin", {"k": FunctionInfo("k", [], [], 0, {})})


def test_a_pending_runtime_is_imported_by_the_first_use(fake_runtime):
    m = _module()
    assert isinstance(m, DeferredModule) and "zzlazy_rt" not in sys.modules
    assert m.save_to_bytes() == FallbackModule("zzlazy", b"code", "bin", m.functions).save_to_bytes()
    assert "zzlazy_rt" not in sys.modules
    assert m.is_runnable and sys.modules["zzlazy_rt"].IMPORTS == [1]
    assert m["k"]() == ("ran", "k") and type(m.realize()).__name__ == "Real"
    assert not isinstance(_module(), DeferredModule)  # imported now: the real module at once


def test_the_registry_and_the_record_import_it_when_read(fake_runtime):
    assert "zzlazy_rt" not in sys.modules and fake_runtime.pending_runtime == "zzlazy_rt"
    assert registry.get("module.create.zzlazy") is sys.modules["zzlazy_rt"].create
    assert fake_runtime.runtime_available and fake_runtime.runtime_reason == ""


def test_a_record_read_imports_it(fake_runtime):
    assert "zzlazy_rt" not in sys.modules
    assert backends.runtime_reason("zzlazy") == "" and "zzlazy_rt" in sys.modules


def test_a_runtime_that_fails_when_first_used_leaves_the_fallback(tmp_path, monkeypatch):
    (tmp_path / "zzlazy_bad.py").write_text("raise ImportError('no zz driver', name='zzdriver')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with isolated():
        backends.declare("zzlazy", "zzlazy", runtime="zzlazy_bad")
        m = _module()
        assert isinstance(m, DeferredModule) and not m.is_runnable
        assert isinstance(m.realize(), FallbackModule)
        with pytest.raises(RuntimeNotLinkedError, match="zzdriver could not be imported: no zz driver"):
            m["k"]()
