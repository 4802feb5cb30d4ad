"""Host-side tests of the CUDA runtime plugin against a FAKE pycuda driver (fake_cuda.py; no GPU, no
libcuda): registration and its failure reasons, lazy thread-safe realization, context push/pop
discipline, argument staging and copies, parameter packing, foreign-pointer checks, limits, error
mapping, load paths. They check polykern's own logic and prove nothing about the real driver, which
``test_cuda_runtime.py`` covers on a GPU machine. Asynchronous launches, the fast path, cubin checks
and checked mode: test_cuda_runtime_fake_async.py.
"""
from __future__ import annotations

import ctypes
import gc
import struct
import sys
import threading
import types

import numpy as np
import pytest

import polykern as pk
from polykern import backends, registry
from polykern.kbin import wire
from polykern.errors import ArtifactError, DeviceError, LaunchError
from polykern.ir.types import bool_, f16, f32, i8, i32, i64
from polykern.module import ArgInfo, FunctionInfo, UnavailableModule
from polykern.target import Target
from polykern.testing.fallback_contract import check_fallback_contract
from polykern.testing.isolation import isolated
import polykern_cuda
from polykern_cuda import toolchain
from polykern_cuda.fallback import CUDAFallbackModule

from fake_cuda import (  # noqa: F401  (fake: the fixture)
    CAI, FakeGPU, SAXPY_INFO, emu_scale_oob, fake, install_fake, make_module, ptx_for, purge_runtime, saxpy)


# ============================================================== registration and its failures (FAKE)
def test_registers_both_keys_and_lists_the_device(fake):
    gpu, rt = fake
    assert registry.get("module.create.cuda") is rt.create
    assert registry.get("module.load_from_bytes.cuda") is rt.load_from_bytes
    st = {r["name"]: r for r in backends.status()}["cuda"]
    assert st["runtime_available"] and st["devices_error"] == ""
    assert st["devices"] == ["cuda:0 Fake H100 #0 (sm_90, compute capability 9.0, 80.0 GiB, 132 SMs, "
                             "driver CUDA 13.0) [selected]"]
    assert gpu.calls["retain"] == 0, "listing devices must not create a context"


@pytest.mark.parametrize("setup,reason", [
    (dict(init_error="no CUDA-capable device is detected"), "the CUDA driver did not initialize"),
    (dict(count=0), "the CUDA driver found no device"),
])
def test_driver_failures_are_the_recorded_reason(monkeypatch, setup, reason):
    gpu = FakeGPU(**setup)
    install_fake(monkeypatch, gpu)
    with isolated():
        rec = polykern_cuda.register_backend()
        assert not rec.runtime_available and reason in rec.runtime_reason
        assert registry.get("module.create.cuda") is None and registry.get("module.load_from_bytes.cuda") is None
        if "initialize" in reason:
            assert "CUDA_ERROR_NO_DEVICE" in rec.runtime_reason and "[CUDA_ERROR_NO_DEVICE 100]" in rec.runtime_reason


def test_device_selection_out_of_range(monkeypatch):
    install_fake(monkeypatch, FakeGPU(count=2))
    monkeypatch.setenv("POLYKERN_CUDA_DEVICE", "5")
    with isolated():
        rec = polykern_cuda.register_backend()
        assert "POLYKERN_CUDA_DEVICE=5 but this host has 2 CUDA devices (0..1)" in rec.runtime_reason


def test_missing_pycuda_is_the_recorded_reason(monkeypatch):
    """No fake here: pycuda made unimportable, as on a host without it."""
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    purge_runtime(monkeypatch)
    with isolated():
        rec = polykern_cuda.register_backend()
        assert rec.codegen_ok and not rec.runtime_available
        assert rec.runtime_reason.startswith("pycuda could not be imported: ")
        m = registry.get("target.build.cuda")([saxpy.ir], Target("cuda -fmt=cuda"))
        assert isinstance(m, CUDAFallbackModule)
        with pytest.raises(pk.errors.RuntimeNotLinkedError, match=r"CUDA runtime is not available in this "
                           r"environment \(pycuda could not be imported: .*cannot launch 'saxpy'"):
            m["saxpy"]


# ============================================================== the parameter buffer (pure; runs on the FAKE import)
def test_parameter_layout_aligns_each_argument_to_its_size(fake):
    from polykern_cuda.runtime import abi

    info = FunctionInfo("k", (ArgInfo.scalar("b", bool_), ArgInfo.scalar("h", f16), ArgInfo.scalar("c", i8),
                              ArgInfo.scalar("n", i32), ArgInfo.buffer("p", f32), ArgInfo.scalar("m", i64),
                              ArgInfo.scalar("z", bool_)))
    slots, total = abi.layout(info)
    assert slots == [(0, 1), (2, 2), (4, 1), (8, 4), (16, 8), (24, 8), (32, 1)] and total == 33
    buf = abi.pack(info, {0: b"\x01", 1: np.float16(1.5).tobytes(), 2: b"\xff", 3: (7).to_bytes(4, "little"),
                          5: (-2).to_bytes(8, "little", signed=True), 6: b"\x00"}, {4: 0xDEADBEEF})
    assert buf[0] == 1 and buf[2:4] == np.float16(1.5).tobytes() and buf[4] == 0xFF
    assert struct.unpack_from("<i", buf, 8) == (7,) and struct.unpack_from("<Qq", buf, 16) == (0xDEADBEEF, -2)
    assert len(buf) == 33
    with pytest.raises(ValueError, match="'n'"):
        abi.pack(info, {0: b"\x01", 1: b"\0\0", 2: b"\0", 3: b"\0", 5: bytes(8), 6: b"\0"}, {4: 0})


# ============================================================== modules (FAKE)
def test_real_module_is_byte_identical_to_the_fallback(fake):
    report = check_fallback_contract("cuda", lambda: registry.get("target.build.cuda")(
        [saxpy.ir], Target("cuda -fmt=cuda")))
    assert report["compared_with_real"] and report["functions"] == ["saxpy"]
    m = registry.get("target.build.cuda")([saxpy.ir], Target("cuda -fmt=cuda"))
    assert type(m).__name__ == "CUDAModule" and m.is_runnable and m.inspect_source().startswith("// Generated")


def test_creation_touches_no_device_and_realization_is_lazy(fake):
    gpu, rt = fake
    m = make_module(rt)
    assert gpu.calls["retain"] == gpu.calls["load"] == 0
    k = m["saxpy"]
    assert gpu.calls["retain"] == 1 and gpu.calls["load"] == 1 and m["saxpy"] is k
    assert "saxpy" in repr(k)


def test_many_threads_realize_once_and_launch_together(fake):
    gpu, rt = fake
    m = make_module(rt)
    n = 1000
    results, errors = {}, []
    barrier = threading.Barrier(12)

    def worker(t):
        try:
            barrier.wait()
            x = np.full(n, t, np.float32)
            y = np.ones(n, np.float32)
            m["saxpy"](n, 2.0, x, y, grid=(n + 127) // 128, block=128)
            results[t] = y
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert gpu.calls["retain"] == 1 and gpu.calls["load"] == 1 and gpu.calls["launch"] == 12
    for t, y in results.items():
        np.testing.assert_array_equal(y, np.full(n, 2 * t + 1, np.float32))
    assert rt.stats()["launches"] == 12


def test_failed_realization_is_retried(fake):
    gpu, rt = fake
    m = make_module(rt)
    gpu.load_failures = 1
    with pytest.raises(DeviceError) as info:
        m["saxpy"]
    assert (info.value.code, info.value.name) == (200, "CUDA_ERROR_INVALID_IMAGE")
    assert "built for sm_90; this device is sm_90" in str(info.value)
    assert m["saxpy"] is not None and gpu.calls["load"] == 1


def test_cubin_for_another_architecture_says_so(fake):
    gpu, rt = fake
    info = FunctionInfo("saxpy", SAXPY_INFO.args, SAXPY_INFO.launch_tags, 0, {"entry": "saxpy", "arch": "sm_120"})
    m = rt.create(b"\x7fELF fake cubin sm_120 entry=saxpy", "cubin", {"saxpy": info}, {})
    with pytest.raises(DeviceError, match=r"no code for this GPU.*built for sm_120; this device is sm_90") as e:
        m["saxpy"]
    assert (e.value.code, e.value.name) == (209, "CUDA_ERROR_NO_BINARY_FOR_GPU")
    ok = rt.create(b"\x7fELF fake cubin sm_90 entry=saxpy", "cubin", {"saxpy": SAXPY_INFO}, {})
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    ok["saxpy"](4, 3.0, x, y, grid=1, block=4)
    np.testing.assert_array_equal(y, 3)


def test_missing_entry_is_a_device_error_with_the_code(fake):
    gpu, rt = fake
    m = make_module(rt, payload=ptx_for("other"))
    with pytest.raises(DeviceError) as e:
        m["saxpy"]
    assert (e.value.code, e.value.name) == (500, "CUDA_ERROR_NOT_FOUND")


@pytest.mark.parametrize("fmt,payload,match", [
    ("sass", b"x", r"cuda module: payload layout 1 \(bytes\) with fmt 'sass' is not one that cuda modules hold; "
             r"they accept layout 1 \(bytes\) with fmt 'ptx' or 'cubin' or 'cuda'"),
    ("ptx", b"\x00\x01", "UTF-8 text without NUL"),
    ("ptx", b"// no kernels here", r"declares no kernel \(.entry\)"),
    ("cubin", b"not an elf", "ELF cubin or a fatbinary"),
])
def test_loader_validates_before_trusting(fake, fmt, payload, match):
    gpu, rt = fake
    data = wire.encode_device_payload("cuda", fmt, {"saxpy": SAXPY_INFO}, payload)
    with pytest.raises(ArtifactError, match=match):
        rt.load_from_bytes(data, {})
    assert gpu.calls["retain"] == 0


def test_artifact_round_trip_runs_and_re_exports_the_same_bytes(fake, tmp_path):
    gpu, rt = fake
    m = make_module(rt)
    root = pk.module.RootModule.collect([m], targets=["cuda"])
    data = root.export(tmp_path / "k.kbin")
    loaded = pk.load(tmp_path / "k.kbin")
    mod = loaded.on("cuda")
    assert type(mod).__name__ == "CUDAModule" and mod.save_to_bytes() == m.save_to_bytes()
    assert loaded.export() == data
    x, y = np.arange(10, dtype=np.float32), np.ones(10, np.float32)
    loaded["saxpy"](10, 2.0, x, y, grid=1, block=32)
    np.testing.assert_array_equal(y, 2 * np.arange(10) + 1)


def _cuda_source_artifact(monkeypatch, tmp_path):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    root = pk.build([saxpy], targets=["cuda -fmt=cuda"])
    monkeypatch.delenv("POLYKERN_COMPILE_FORCE_FALLBACK")
    path = tmp_path / "src.kbin"
    root.export(path)
    return path


@pytest.mark.skipif(toolchain.available_compiler() is None, reason="neither NVRTC nor nvcc is installed here")
def test_cuda_source_is_compiled_on_load_for_the_device_arch(fake, monkeypatch, tmp_path):
    gpu, rt = fake
    dev = rt.get_device()  # the receiver's device decides the arch (the artifact says sm_90)
    gpu.cc, dev.compute_capability, dev.arch = (8, 0), (8, 0), "sm_80"
    path = _cuda_source_artifact(monkeypatch, tmp_path)
    loaded = pk.load(path)
    mod = loaded.on("cuda")
    fmt, ptx = mod.image
    assert mod.fmt == "cuda" and fmt == "ptx" and b".target sm_80" in ptx and b".entry saxpy" in ptx
    assert loaded.export() == path.read_bytes()  # still ships the source
    x, y = np.ones(8, np.float32), np.ones(8, np.float32)
    loaded["saxpy"](8, 4.0, x, y, grid=1, block=8)
    np.testing.assert_array_equal(y, 5)


def test_cuda_source_without_a_compiler_degrades_with_the_reason(fake, monkeypatch, tmp_path):
    gpu, rt = fake
    path = _cuda_source_artifact(monkeypatch, tmp_path)
    monkeypatch.setenv(toolchain.COMPILER_ENV, "none")
    mod = pk.load(path).on("cuda")
    assert isinstance(mod, UnavailableModule) and not mod.is_runnable
    assert "the cuda loader failed: cannot compile CUDA C to ptx here" in mod.reason
    with pytest.raises(ArtifactError, match="strict|cannot be loaded here"):
        pk.load(path, strict=True)
    assert gpu.calls["retain"] == 0


def test_collected_module_unloads_with_its_context_current(fake):
    gpu, rt = fake
    m = make_module(rt)
    m["saxpy"](1, 1.0, np.ones(1, np.float32), np.ones(1, np.float32), grid=1, block=1)

    def drop_in_other_thread(holder):
        holder.clear()
        gc.collect()

    holder = [m]
    del m
    t = threading.Thread(target=drop_in_other_thread, args=(holder,))
    t.start()
    t.join()
    gc.collect()
    assert gpu.calls["unload"] == 1  # gpu.errors (checked by the fixture) says whether the context was current


# ============================================================== launches and arguments (FAKE)
def test_numpy_arguments_are_copied_in_and_only_writable_ones_back(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    before = dict(gpu.calls)
    k(100, 0.5, x, y, grid=4, block=32)
    np.testing.assert_array_equal(y, 0.5 * np.arange(100) + 1)
    assert gpu.calls["htod"] - before["htod"] == 2 and gpu.calls["dtoh"] - before["dtoh"] == 1
    name, grid, block, params = gpu.launches[-1]
    assert (name, grid, block, len(params)) == ("saxpy", (4, 1, 1), (32, 1, 1), 24)
    assert struct.unpack_from("<if", params) == (100, 0.5)


def test_the_slow_path_is_the_shared_staged_launch(fake, monkeypatch):
    """CUDA's slow path runs StagedLaunch.staged (the device is chosen by its ``route`` hook), so a check
    added to the staged launch after check_args applies to CUDA too (the review of 2026-11-28 found CUDA
    calling check_args itself and then the later stages)."""
    from polykern.runtime.staged_launch import StagedLaunch

    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = np.arange(8, dtype=np.float32), np.ones(8, np.float32)

    def staged_with_a_check(self, args, grid=None, block=None, note=None):
        raise LaunchError(f"kernel '{self.info.name}': the new check in staged()")

    monkeypatch.setattr(StagedLaunch, "staged", staged_with_a_check)
    launches = len(gpu.launches)
    with pytest.raises(LaunchError, match=r"the new check in staged\(\)"):
        k(8, 0.5, x, y, grid=1, block=8)
    assert len(gpu.launches) == launches
    np.testing.assert_array_equal(y, np.ones(8, np.float32))


def test_same_host_array_twice_is_one_device_buffer(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    y = np.arange(8, dtype=np.float32)
    before = gpu.calls["htod"]
    k(8, 1.0, y, y, grid=1, block=8)
    np.testing.assert_array_equal(y, 2 * np.arange(8))
    assert gpu.calls["htod"] - before == 1
    _, _, _, params = gpu.launches[-1]
    assert struct.unpack_from("<QQ", params, 8)[0] == struct.unpack_from("<QQ", params, 8)[1]


def test_pool_reuses_blocks_across_launches(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    for _ in range(5):
        k(64, 1.0, np.ones(64, np.float32), np.ones(64, np.float32), grid=1, block=64)
    assert gpu.calls["alloc"] == 2
    s = rt.stats()
    assert s["buffers_created"] == 2 and s["buffers_reused"] == 8


def test_out_of_memory_empties_the_pool_and_retries(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    k(64, 1.0, np.ones(64, np.float32), np.ones(64, np.float32), grid=1, block=64)
    gpu.alloc_failures = 1
    k(100_000, 1.0, np.ones(100_000, np.float32), np.ones(100_000, np.float32), grid=782, block=128)
    assert gpu.calls["free"] == 2  # the cached blocks went back to the driver
    gpu.alloc_failures = 2
    with pytest.raises(DeviceError) as e:
        rt.empty(1_000_000, np.float32)
    assert (e.value.code, e.value.name) == (2, "CUDA_ERROR_OUT_OF_MEMORY") and "out of memory" in str(e.value)


def test_device_arrays_are_passed_without_copies(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x = rt.to_device(np.arange(16, dtype=np.float32))
    y = rt.zeros(16, np.float32)
    before = dict(gpu.calls)
    for _ in range(3):
        k(16, 1.0, x, y, grid=1, block=16)
    assert gpu.calls["htod"] == before["htod"] and gpu.calls["dtoh"] == before["dtoh"]
    np.testing.assert_array_equal(y.numpy(), 3 * np.arange(16))
    cai = y.__cuda_array_interface__
    assert cai["data"] == (y.ptr, False) and cai["typestr"] == "<f4" and cai["shape"] == (16,) and cai["version"] == 3
    assert cai["stream"] == 1  # launches are asynchronous on the legacy default stream
    assert "cuda:0" in repr(y) and len(y) == 16 and np.asarray(x).sum() == 120
    e = rt.empty((2, 3), np.int32)
    assert e.shape == (2, 3) and e.nbytes == 24 and rt.empty(0, np.float32).ptr == 0
    y.free()
    with pytest.raises(LaunchError, match="freed"):
        k(16, 1.0, x, y, grid=1, block=16)
    with pytest.raises(LaunchError, match="expected 16 float32"):
        x.copy_from_host(np.zeros(3, np.float32))
    with pytest.raises(LaunchError, match=r"expected float32 elements \(f32\), got int32"):
        k(16, 1.0, rt.zeros(16, np.int32), x, grid=1, block=16)


def test_device_array_freed_from_another_thread_uses_the_context(fake):
    gpu, rt = fake
    arrays = [rt.zeros(1000, np.float32) for _ in range(3)]
    t = threading.Thread(target=lambda: (arrays.clear(), gc.collect()))
    t.start()
    t.join()
    assert rt.get_device().pool.cached_bytes >= 3 * 4096  # returned to the pool with the context pushed


def test_cuda_array_interface_is_zero_copy_and_honours_its_stream(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = CAI(gpu, 8, stream=0x5000), CAI(gpu, 8, stream=1)
    gpu.write(x.ptr, np.arange(8, dtype=np.float32).tobytes())
    before = dict(gpu.calls, stream_sync=list(gpu.calls["stream_sync"]))
    k(8, 2.0, x, y, grid=1, block=8)
    assert np.frombuffer(gpu.read(y.ptr, 32), np.float32).tolist() == [2.0 * i for i in range(8)]
    assert gpu.calls["htod"] == before["htod"] and gpu.calls["dtoh"] == before["dtoh"]
    # no host sync: the launch waits for stream 0x5000 through an event, and 0x5000 for the launch;
    # the legacy default stream (1) is the launch stream itself and needs nothing
    assert gpu.calls["stream_sync"] == [] and gpu.calls["sync"] == before["sync"]
    ev = [e for e in gpu.calls["events"] if e[0] != "create"]
    (_, handle, flags), = [e for e in gpu.calls["events"] if e[0] == "create"]
    assert handle == 0x1000 and flags == 0x2  # created in the primary context, no timing
    e = ev[0][1]
    assert ev == [("record", e, 0x5000), ("wait", 0, e), ("record", e, 0), ("wait", 0x5000, e)]
    k(8, 2.0, x, y, grid=1, block=8)  # the fast path does the same, with the same event
    assert gpu.calls["events"][-4:] == ev and len([e for e in gpu.calls["events"] if e[0] == "create"]) == 1
    assert np.frombuffer(gpu.read(y.ptr, 32), np.float32).tolist() == [4.0 * i for i in range(8)]


class _GradCAI:
    """A CUDA tensor that requires grad, as torch has it: its __cuda_array_interface__ and DLPack refuse,
    detach() is the same memory outside autograd."""

    requires_grad = True

    def __init__(self, cai):
        self.cai = cai

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")

    def __dlpack__(self, stream=None):
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")

    def __dlpack_device__(self):
        return (2, 0)

    def detach(self):
        return self.cai


def test_a_tensor_that_requires_grad_is_read_through_detach_and_never_written(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = CAI(gpu, 8, stream=0x5000), CAI(gpu, 8, stream=1)
    gpu.write(x.ptr, np.arange(8, dtype=np.float32).tobytes())
    for _ in range(2):  # the fast path refuses it (its CAI raises); check_args reads the detached view
        k(8, 2.0, _GradCAI(x), y, grid=1, block=8)
    assert np.frombuffer(gpu.read(y.ptr, 32), np.float32).tolist() == [4.0 * i for i in range(8)]
    assert ("wait", 0x5000) in [e[:2] for e in gpu.calls["events"]]  # the detached view's stream is honoured
    with pytest.raises(LaunchError, match=r"argument 'y' .*requires grad and the kernel may write it"):
        k(8, 2.0, x, _GradCAI(y), grid=1, block=8)


@pytest.mark.parametrize("make,match", [
    (lambda g: CAI(g, 8, dtype=np.float64), r"expected float32 elements \(f32\), got float64"),
    (lambda g: CAI(g, 8, strides=(8,)), "not C-contiguous"),
    (lambda g: CAI(g, 8, ctx=0x9999), "another CUDA context.*pycuda.autoprimaryctx"),
    (lambda g: CAI(g, 8, ctx=0x1001), r"argument 'x' \(#3\) is on cuda:0 but argument 'y' \(#4\) is on cuda:1"),
    (lambda g: types.SimpleNamespace(__cuda_array_interface__={"shape": (8,), "typestr": "<f4", "data": (12345, False),
                                                               "version": 3}),
     "not memory the CUDA driver knows"),
    (lambda g: CAI(g, 8, readonly=True), "read-only but the kernel may write it"),
])
def test_bad_foreign_arrays_are_launch_errors(fake, make, match):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    launches = gpu.calls["launch"]
    with pytest.raises(LaunchError, match=match):
        k(8, 1.0, rt.zeros(8, np.float32), make(gpu), grid=1, block=8)
    assert gpu.calls["launch"] == launches


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLManaged(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackCUDA:
    """A DLPack producer of a CUDA tensor (device type 2) over FAKE device memory."""

    _new = ctypes.pythonapi.PyCapsule_New
    _new.restype = ctypes.py_object
    _new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

    def __init__(self, gpu, n, device_id=0, device_type=2):
        self.ptr = gpu.alloc_raw(4 * n, 0x1000 + device_id)
        self.device = (device_type, device_id)
        self._shape = (ctypes.c_int64 * 1)(n)
        self._t = _DLManaged(self.ptr, _DLDevice(device_type, device_id), 1, _DLDataType(2, 32, 1),
                             self._shape, None, 0, None, None)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        return self._new(ctypes.addressof(self._t), b"dltensor", None)


def test_dlpack_cuda_tensors_are_zero_copy(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = DLPackCUDA(gpu, 4), DLPackCUDA(gpu, 4)
    gpu.write(x.ptr, np.full(4, 3, np.float32).tobytes())
    k(4, 2.0, x, y, grid=1, block=4)
    assert np.frombuffer(gpu.read(y.ptr, 16), np.float32).tolist() == [6.0] * 4
    with pytest.raises(LaunchError, match=r"argument 'x' \(#3\) is on cuda:0 but argument 'y' \(#4\) is on cuda:1"):
        k(4, 2.0, x, DLPackCUDA(gpu, 4, device_id=1), grid=1, block=4)
    with pytest.raises(LaunchError, match="lives on a 'vulkan' device"):
        k(4, 2.0, x, DLPackCUDA(gpu, 4, device_type=7), grid=1, block=4)


@pytest.mark.parametrize("grid,block,match", [
    (1, 2048, r"block \(2048, 1, 1\) exceeds .*maximum block size \(1024, 1024, 64\) in dimension x"),
    (1, (1, 1, 128), "in dimension z"),
    (1, (64, 32), "has 2048 threads; .* allows 1024 per block"),
    ((1, 70000), 32, r"grid \(1, 70000, 1\) exceeds .*maximum grid size .* in dimension y"),
    ((2 ** 20, 2 ** 20, 2 ** 20), 1, r"maximum grid size \(2147483647, 65535, 65535\) in dimension y"),
    (2 ** 31 - 1, 2, r"global_id\(0\) is an i32: at most 2147483648"),  # within MAX_GRID_DIM_X, not the language
    (None, 32, "grid= is required"),
])
def test_grid_and_block_are_checked_against_the_device(fake, grid, block, match):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    with pytest.raises(LaunchError, match=match):
        k(4, 1.0, np.ones(4, np.float32), np.ones(4, np.float32), grid=grid, block=block)
    assert gpu.calls["launch"] == 0


def test_register_bound_thread_limit_of_the_kernel(fake):
    gpu, rt = fake
    gpu.fn_max_threads = 256
    k = make_module(rt)["saxpy"]
    with pytest.raises(LaunchError, match="uses 32 registers per thread, so at most 256 threads per block"):
        k(4, 1.0, np.ones(4, np.float32), np.ones(4, np.float32), grid=1, block=512)
    k(4, 1.0, np.ones(4, np.float32), np.ones(4, np.float32), grid=1, block=256)


def test_argument_errors_come_before_any_device_work(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    allocs = gpu.calls["alloc"]
    with pytest.raises(LaunchError, match="takes 4 arguments"):
        k(4, 1.0, np.ones(4, np.float32), grid=1, block=4)
    with pytest.raises(LaunchError, match="expected an integer for i32"):
        k(4.5, 1.0, np.ones(4, np.float32), np.ones(4, np.float32), grid=1, block=4)
    with pytest.raises(LaunchError, match="read-only"):
        ro = np.ones(4, np.float32)
        ro.flags.writeable = False
        k(4, 1.0, np.ones(4, np.float32), ro, grid=1, block=4)
    assert gpu.calls["alloc"] == allocs


def test_kernel_fault_is_a_sticky_device_error_and_its_buffers_are_not_reused(fake):
    gpu, rt = fake
    gpu.kernels["oob"] = emu_scale_oob
    info = FunctionInfo("oob", (ArgInfo.buffer("x", f32),), (), 0, {"entry": "oob"})
    m = rt.create(ptx_for("oob"), "ptx", {"oob": info}, {})
    with pytest.raises(DeviceError) as e:
        m["oob"](np.ones(4, np.float32), grid=1, block=1)
    err = e.value
    assert (err.code, err.name) == (700, "CUDA_ERROR_ILLEGAL_ADDRESS") and err.sticky
    assert "running kernel 'oob'" in str(err) and "restart the process" in str(err)
    assert rt.get_device().pool.cached_bytes == 0  # the block was discarded, not pooled


def test_scalar_types_are_packed_as_declared(fake):
    gpu, rt = fake
    info = FunctionInfo("scalars", (ArgInfo.scalar("b", bool_), ArgInfo.scalar("h", f16), ArgInfo.scalar("q", i64),
                                    ArgInfo.buffer("out", i8)), (), 0, {"entry": "scalars"})
    m = rt.create(ptx_for("scalars"), "ptx", {"scalars": info}, {})
    m["scalars"](True, 0.25, -(2 ** 40), np.zeros(1, np.int8), grid=1, block=1)
    params = gpu.launches[-1][3]
    assert len(params) == 24 and params[0] == 1 and params[2:4] == np.float16(0.25).tobytes()
    assert struct.unpack_from("<qQ", params, 8)[0] == -(2 ** 40)


def test_module_device_array_helper(fake):
    gpu, rt = fake
    m = make_module(rt)
    a = m.device_array(np.arange(3, dtype=np.int64))
    assert a.numpy().tolist() == [0, 1, 2] and m.device_array(shape=4, dtype=np.float32).shape == (4,)
    with pytest.raises(TypeError):
        m.device_array()


def test_user_code_can_use_the_polykern_context(fake):
    gpu, rt = fake
    with rt.context():
        assert gpu.stack()[-1].handle == 0x1000
    assert gpu.stack() == []


def test_a_failing_pop_does_not_hide_the_error_on_its_way_out(fake, monkeypatch):
    gpu, rt = fake
    dev = rt.get_device()
    real_pop = gpu.driver.Context.pop

    def bad_pop():
        real_pop()
        raise gpu.driver.LogicError("cuCtxPopCurrent failed: an illegal memory access was encountered")

    monkeypatch.setattr(gpu.driver.Context, "pop", staticmethod(bad_pop))
    with pytest.raises(KeyError, match="original"):
        with dev.scope():
            raise KeyError("original")
    with pytest.raises(DeviceError) as e:
        with dev.scope():
            pass
    assert e.value.code == 700 and rt.stats()["pop_errors"] == 1


def test_exit_frees_the_pool_and_stops_caching(fake):
    gpu, rt = fake
    a = rt.zeros(100, np.float32)
    b = rt.zeros(100, np.float32)
    a.free()
    assert rt.get_device().pool.cached_bytes > 0
    frees = gpu.calls["free"]
    rt.get_device().close_pool()
    assert rt.get_device().pool.cached_bytes == 0 and gpu.calls["free"] == frees + 1
    b.free()
    assert gpu.calls["free"] == frees + 2 and rt.get_device().pool.cached_bytes == 0


class _RaisingFinder:
    """Makes `import pycuda` fail the way a missing NVIDIA driver does (OSError from the extension)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pycuda" or name.startswith("pycuda."):
            raise OSError("libcuda.so.1: cannot open shared object file: No such file or directory")
        return None


def test_driver_library_missing_is_the_recorded_reason(monkeypatch):
    monkeypatch.delitem(sys.modules, "pycuda", raising=False)
    monkeypatch.delitem(sys.modules, "pycuda.driver", raising=False)
    purge_runtime(monkeypatch)
    monkeypatch.setattr(sys, "meta_path", [_RaisingFinder()] + sys.meta_path)
    with isolated():
        rec = polykern_cuda.register_backend()
        assert rec.runtime_reason == ("pycuda could not be imported: OSError: libcuda.so.1: cannot open shared "
                                      "object file: No such file or directory")


