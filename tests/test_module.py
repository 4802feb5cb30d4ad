"""Modules, create_with_fallback, the root launcher and artifact load/export semantics."""
import os

import numpy as np
import pytest

from polykern import artifact, backends, registry
from polykern.errors import ArtifactError, BackendUnavailableError, LaunchError, PolykernError, RuntimeNotLinkedError
from polykern.runtime.launch import check_args
from polykern.module import (DeviceModule, FallbackModule, RootModule, UnavailableModule, create_with_fallback,
                             force_fallback_enabled)
from polykern.testing.isolation import isolated
from polykern.testing.synthetic import device_module, saxpy_info, synthetic_root

META = {"compiler": "polykern test"}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv("POLYKERN_COMPILE_FORCE_FALLBACK", raising=False)
    monkeypatch.delenv("POLYKERN_BACKEND_AUTOLOAD", raising=False)
    with isolated():
        yield


class HostSaxpy(DeviceModule):
    """A tiny runtime for tests: runs 'saxpy'-shaped kernels with NumPy (y = a*x + y)."""

    is_runnable = True
    launches = []

    def _get_function(self, info):
        def run(*args, grid=None, block=None):
            g, b, prep = check_args(info, args, grid, block)
            n, a, x, y = (p.value if hasattr(p, "value") else p.array for p in prep)
            count = min(int(n), g[0] * b[0])
            y[:count] = a * x[:count] + y[:count]
            HostSaxpy.launches.append((self.kind, info.name))
        return run


def _register_host_runtime(kind="llvm"):
    registry.register(f"module.create.{kind}", lambda p, fmt, fmap, src: HostSaxpy(kind, p, fmt, fmap, src))
    registry.register(f"module.load_from_bytes.{kind}",
                      lambda data, src: HostSaxpy(kind, *_decode(kind, data), src))
    backends.declare(kind, kind, display_name=kind.upper(), runtime=lambda: None)


def _decode(kind, data):
    from polykern.kbin import wire

    fmt, fmap, payload = wire.decode_device_payload(kind, data)
    return payload, fmt, fmap


@pytest.mark.parametrize("value,expected", [(None, False), ("", False), ("0", False), ("false", False),
                                            ("FALSE", False), ("False", False), ("1", True), ("true", True),
                                            ("yes", True), ("no", True), ("00", True), (" ", True)])
def test_force_fallback_truthiness(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("POLYKERN_COMPILE_FORCE_FALLBACK", raising=False)
    else:
        monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", value)
    assert force_fallback_enabled() is expected


def test_create_with_fallback_reads_env_on_every_call(monkeypatch):
    args = ("llvm", b"obj", "o", {"saxpy": saxpy_info()}, {"llvm": "; ir"})
    assert type(create_with_fallback(*args)) is FallbackModule  # no runtime registered
    _register_host_runtime("llvm")
    real = create_with_fallback(*args)
    assert isinstance(real, HostSaxpy) and real.is_runnable
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    fb = create_with_fallback(*args)
    assert type(fb) is FallbackModule and not fb.is_runnable
    assert fb.save_to_bytes() == real.save_to_bytes()
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "false")
    assert isinstance(create_with_fallback(*args), HostSaxpy)


def test_create_with_fallback_checks_factory_and_fallback_cls():
    registry.register("module.create.cuda", lambda *a: FallbackModule("opencl", b"x", "c", {}, {}))
    with pytest.raises(PolykernError, match="module.create.cuda returned"):
        create_with_fallback("cuda", b"x", "ptx", {}, {})
    with pytest.raises(TypeError):
        create_with_fallback("cuda", b"x", "ptx", {}, {}, fallback_cls=dict)

    class MyFallback(FallbackModule):
        source_preference = ("b",)

    registry.remove("module.create.cuda")
    m = create_with_fallback("cuda", b"x", "ptx", {}, {"a": "A", "b": "B"}, fallback_cls=MyFallback)
    assert isinstance(m, MyFallback) and m.inspect_source() == "B"


def test_fallback_get_function_message_names_backend_and_fix():
    def no_pycuda():
        raise ModuleNotFoundError("No module named 'pycuda'", name="pycuda")

    backends.declare("cuda", "cuda", display_name="CUDA", extra="cuda", config="cuda",
                     hint="on a host with an NVIDIA driver", runtime=no_pycuda)
    fb = device_module("cuda")
    with pytest.raises(RuntimeNotLinkedError) as e:
        fb.get_function("saxpy")
    assert str(e.value) == (
        "CUDA runtime is not available in this environment (pycuda could not be imported: No module named "
        "'pycuda'); cannot launch 'saxpy'. Install polykern[cuda] on a host with an NVIDIA driver, build with "
        "--config=cuda, or load this artifact where the CUDA runtime exists.")
    with pytest.raises(LaunchError, match="no kernel named 'nope'.*available: saxpy"):
        fb["nope"]


def test_device_module_validation():
    for kind in ("root", "No such", "", "a" * 65):
        with pytest.raises(ValueError, match="module kind"):
            DeviceModule(kind, b"", "x", {})
    # any kind may hold either layout: the payload's type decides (a new backend needs no table)
    assert DeviceModule("zz_new", {"b": b"2", "a": b"1"}, "bin", {}).layout == "smap"
    assert DeviceModule("vulkan", b"spv", "spirv", {}).layout == "bytes"
    for payload in ("text", {"a": "text"}, None):
        with pytest.raises(TypeError):
            DeviceModule("cuda", payload, "ptx", {})
    with pytest.raises(ValueError, match="FunctionInfo named 'b'"):
        DeviceModule("cuda", b"", "ptx", {"b": saxpy_info("a")})
    with pytest.raises(ValueError):
        DeviceModule("cuda", b"", "", {})


def test_inspect_source_rules():
    m = FallbackModule("cuda", b"// ptx text\n", "ptx", {"k": saxpy_info("k")}, {"cuda": "__global__ ..."})
    assert m.source_formats() == ["cuda", "ptx"]
    assert m.inspect_source() == "// ptx text\n"  # own fmt first when no preference
    assert m.inspect_source("cuda") == "__global__ ..."
    with pytest.raises(PolykernError, match="no 'llvm' source; available formats: cuda, ptx"):
        m.inspect_source("llvm")
    binary = FallbackModule("llvm", b"\x7fELF\x02\x01\x00", "o", {}, {})
    with pytest.raises(PolykernError, match="no source is embedded.*strip-sources"):
        binary.inspect_source()
    shaders = FallbackModule("metal", {"b": b"kernel b", "a": b"kernel a"}, "msl", {}, {})
    assert shaders.inspect_source("msl") == "// ---- a ----\nkernel a\n// ---- b ----\nkernel b"


def test_import_tree_rules():
    root = synthetic_root(("cuda",))
    with pytest.raises(PolykernError, match="already imported"):
        root.import_module(root.imports[0])
    with pytest.raises(PolykernError, match="cycle"):
        root.imports[0].import_module(root.imports[0])
    with pytest.raises(PolykernError, match="root module cannot be imported"):
        root.imports[0].import_module(RootModule())
    with pytest.raises(TypeError):
        root.import_module("cuda")


def test_root_launcher_runs_first_runnable_and_on():
    _register_host_runtime("llvm")
    HostSaxpy.launches.clear()
    fb = device_module("cuda")
    real = create_with_fallback("llvm", b"obj", "o", {"saxpy": saxpy_info()}, {})
    root = RootModule.collect([fb, real], ["cuda", "llvm"])
    x = np.arange(8, dtype=np.float32)
    y = np.ones(8, np.float32)
    root["saxpy"](8, 2.0, x, y, grid=2, block=4)
    assert np.array_equal(y, 2 * np.arange(8) + 1) and HostSaxpy.launches == [("llvm", "saxpy")]
    assert root["saxpy"].module is real
    assert root.on("llvm") is real and root.on("cuda") is fb
    with pytest.raises(LaunchError, match="no 'metal' module; modules: cuda, llvm"):
        root.on("metal")
    with pytest.raises(RuntimeNotLinkedError, match="cuda runtime is not available"):
        root.on("cuda")["saxpy"](8, 2.0, x, y, grid=2, block=4)
    with pytest.raises(LaunchError, match="no kernel named 'nope'"):
        root["nope"]
    with pytest.raises(LaunchError, match="takes 4 arguments"):
        root["saxpy"](1, grid=1, block=1)


def test_root_with_nothing_runnable_lists_every_reason():
    backends.declare("cuda", "cuda", display_name="CUDA", runtime=lambda: (_ for _ in ()).throw(
        BackendUnavailableError("libcuda.so.1 not found")))
    root = synthetic_root(("cuda", "vulkan"))
    assert not root.is_runnable
    with pytest.raises(RuntimeNotLinkedError) as e:
        root["saxpy"](1, 1.0, np.ones(1, np.float32), np.ones(1, np.float32), grid=1, block=1)
    text = str(e.value)
    assert "cannot launch 'saxpy'" in text
    assert "- cuda (src): CUDA runtime is not available in this environment (libcuda.so.1 not found)" in text
    assert "- vulkan (bin): vulkan runtime is not available" in text
    assert "no installed polykern backend provides the 'vulkan' module kind" in text


def test_load_without_loader_gives_unavailable_module_and_lossless_reexport(tmp_path):
    def no_pycuda():
        raise ModuleNotFoundError("No module named 'pycuda'", name="pycuda")

    backends.declare("cuda", "cuda", display_name="CUDA", runtime=no_pycuda)
    path = tmp_path / "k.bin"
    data = synthetic_root(("cuda", "metal")).export(path, metadata=META)
    assert path.read_bytes() == data
    root = artifact.load(path)
    cuda = root.on("cuda")
    assert isinstance(cuda, UnavailableModule) and not cuda.is_runnable and cuda.functions == {"saxpy": saxpy_info()}
    assert cuda.inspect_source("listing") == "cuda: saxpy\n"
    with pytest.raises(ArtifactError) as e:
        cuda.get_function("saxpy")
    assert str(e.value) == ("k.bin contains a module of kind 'cuda' but no CUDA runtime is registered here (reason: pycuda "
                            "could not be imported: No module named 'pycuda'). `polykern inspect` can read it "
                            "without one.")
    assert root.targets == ["cuda", "metal"] and root.metadata["compiler"] == "polykern test"
    assert root.export(metadata=META) == data
    with pytest.raises(ArtifactError, match="k.bin contains a module of kind 'cuda' but no CUDA runtime"):
        artifact.load(path, strict=True)
    with pytest.raises(ArtifactError, match="cannot read"):
        artifact.load(tmp_path / "missing.kbin")


def test_load_uses_registered_loader_and_runs():
    _register_host_runtime("llvm")
    data = RootModule.collect([device_module("cuda"), device_module("llvm")], ["cuda", "llvm"]).export(metadata=META)
    root = artifact.load(data)
    assert isinstance(root.on("llvm"), HostSaxpy) and isinstance(root.on("cuda"), UnavailableModule)
    y = np.zeros(4, np.float32)
    root["saxpy"](4, 3.0, np.ones(4, np.float32), y, grid=1, block=4)
    assert np.array_equal(y, [3, 3, 3, 3])
    assert artifact.load(data, strict=False).export(metadata=META) == data
    with pytest.raises(ArtifactError, match="cuda"):
        artifact.load(data, strict=True)


def test_failing_loader_degrades_or_raises():
    def loader(data, sources):
        raise BackendUnavailableError("no device found")

    registry.register("module.load_from_bytes.cuda", loader)
    data = synthetic_root(("cuda",)).export(metadata=META)
    m = artifact.load(data).on("cuda")
    assert isinstance(m, UnavailableModule) and "the cuda loader failed: no device found" in m.message()
    with pytest.raises(ArtifactError, match="no device found"):
        artifact.load(data, strict=True)
    registry.register("module.load_from_bytes.cuda", lambda d, s: 1 / 0, override=True)
    with pytest.raises(ArtifactError, match="loader failed on module 1: ZeroDivisionError"):
        artifact.load(data)
    registry.register("module.load_from_bytes.cuda", lambda d, s: device_module("opencl"), override=True)
    with pytest.raises(ArtifactError, match="not a 'cuda' module"):
        artifact.load(data)


def test_export_rules(tmp_path):
    bare = device_module("opencl")
    data = artifact.export(bare, metadata=META)  # a bare device module gets a root
    assert artifact.read_artifact(data)["modules"][0]["functions"] == ["saxpy"]
    root = RootModule({"ghost": saxpy_info("ghost")}, [device_module("cuda")])
    with pytest.raises(PolykernError, match="ghost"):
        root.export()
    with pytest.raises(PolykernError, match="metadata"):
        synthetic_root(("cuda",)).export(metadata={"k": 1})
    stripped = artifact.read_artifact(synthetic_root(("cuda",)).export(strip_sources=True, metadata=META))
    assert not stripped["sources_embedded"] and stripped["modules"][1]["sources"] == {}
    assert sorted(os.listdir(tmp_path)) == []
    synthetic_root(("cuda",)).export(tmp_path / "a.kbin")
    assert sorted(os.listdir(tmp_path)) == ["a.kbin"]  # no temp file left behind


def test_runtime_files_absent_from_the_build_are_reported_as_such():
    """A build without a runtime's files (Bazel --config=cpu) says so and names the fix."""
    from polykern import backends

    rec = backends.declare("absentrt", "absentrt", display_name="AbsentRT", extra="absentrt", config="absentrt",
                           codegen=lambda: None, runtime="polykern.this_runtime_is_not_in_the_build")
    assert not rec.runtime_available
    assert rec.runtime_reason == ("the AbsentRT runtime is not part of this build (build with --config=absentrt, "
                                  "or pip install polykern[absentrt])")
