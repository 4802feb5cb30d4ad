"""Host-side tests of the CUDA runtime plugin against a FAKE pycuda driver (no GPU, no libcuda).

*** Everything here runs on a FAKE: ``FakeGPU`` below stands in for ``pycuda`` / ``pycuda.driver``
*** and the ctypes helpers in ``runtime/libcuda.py``. Kernels "run" as Python emulations that read
*** the packed parameter buffer and the fake device memory. These tests check polykern's own logic
*** (registration and its failure reasons, lazy thread-safe realization, context push/pop
*** discipline, argument staging and copies, parameter packing, foreign-pointer checks, limits,
*** error mapping, load paths, asynchronous launches and their fast path, event ordering of foreign
*** streams, cubin architecture checks); they prove nothing about the real driver, which
*** ``test_cuda_runtime.py`` covers on a GPU machine.

The fake follows pycuda 2026.1's API as the runtime uses it (read from its sdist): ``init``,
``Device`` (``count``, ``name``, ``compute_capability``, ``total_memory``, ``get_attribute``,
``retain_primary_context``), ``Context`` (``push``, static ``pop``/``synchronize``, ``handle``),
``module_from_buffer`` -> ``Module.get_function`` -> ``Function`` (``get_attribute``,
``_launch_kernel(grid, block, buf, shared, stream)``), ``mem_alloc`` -> allocation (``int()``,
``free``), ``memcpy_htod``/``memcpy_dtoh``, ``get_driver_version``, and the ``Error`` classes with
pycuda's "<routine> failed: <text>" messages. Unlike pycuda it is strict: every call that needs a
current context raises if none is pushed on the calling thread, so a missing ``scope()`` fails.
"""
from __future__ import annotations

import ctypes
import gc
import importlib
import re
import struct
import sys
import threading
import types

import numpy as np
import pytest

import polykern as pk
from polykern import backends, registry, wire
from polykern.errors import ArtifactError, DeviceError, LaunchError
from polykern.ir.types import bool_, f16, f32, i8, i32, i64
from polykern.module import ArgInfo, FunctionInfo, UnavailableModule
from polykern.target import Target
from polykern.testing.fallback_contract import check_fallback_contract
from polykern.testing.isolation import isolated
import polykern_cuda
from polykern_cuda import toolchain
from polykern_cuda.fallback import CUDAFallbackModule

BASE = 0x7F00_0000_0000


# ============================================================== the fake driver (FAKE)
class FakeGPU:
    """A fake CUDA device + pycuda.driver module. ``kernels[name] = fn(gpu, params, grid, block)``
    emulates a kernel; it may raise ``Fault`` to simulate an illegal address."""

    class Fault(Exception):
        pass

    def __init__(self, count=1, cc=(9, 0), name="Fake H100", init_error=None, fn_max_threads=1024):
        self.count, self.cc, self.name, self.init_error = count, cc, name, init_error
        self.fn_max_threads = fn_max_threads
        self.mem = {}  # base -> bytearray
        self.owner = {}  # base -> context handle
        self.next_addr = BASE
        self.kernels = {}
        self.calls = {"htod": 0, "dtoh": 0, "alloc": 0, "free": 0, "load": 0, "retain": 0, "launch": 0,
                      "unload": 0, "stream_sync": [], "sync": 0, "push": 0, "events": []}
        self.launch_error = None  # next launches fail with this cuLaunchKernel error text (a lost context)
        self.launches = []  # (name, grid, block, params)
        self.shared = []  # sharedMemBytes of each launch
        self.fn_attrs = {}  # (function name, attribute) -> value set by cuFuncSetAttribute
        self.load_failures = 0  # next N module loads fail
        self.alloc_failures = 0  # next N allocations fail with out of memory
        self.pending_fault = None
        self.errors = []  # strictness violations (also raised)
        self.lock = threading.Lock()
        self.tls = threading.local()
        self.driver = self._make_driver()

    # ------------------------------------------------------------ helpers
    def stack(self):
        if not hasattr(self.tls, "stack"):
            self.tls.stack = []
        return self.tls.stack

    def current(self, routine):
        st = self.stack()
        if not st:
            msg = f"{routine} failed: invalid device context"
            self.errors.append(msg)
            raise self.driver.LogicError(msg)
        return st[-1]

    def find(self, ptr):
        for base, buf in self.mem.items():
            if base <= ptr < base + max(len(buf), 1):
                return base, buf
        return None, None

    def read(self, ptr, n):
        base, buf = self.find(ptr)
        if base is None or ptr - base + n > len(buf):
            raise FakeGPU.Fault(f"read of {n} bytes at 0x{ptr:x}")
        return bytes(buf[ptr - base:ptr - base + n])

    def write(self, ptr, data):
        base, buf = self.find(ptr)
        if base is None or ptr - base + len(data) > len(buf):
            raise FakeGPU.Fault(f"write of {len(data)} bytes at 0x{ptr:x}")
        buf[ptr - base:ptr - base + len(data)] = data

    def alloc_raw(self, n, ctx_handle):
        with self.lock:
            base = self.next_addr
            self.next_addr += -(-max(n, 1) // 512) * 512 + 512
            self.mem[base] = bytearray(n)
            self.owner[base] = ctx_handle
        return base

    # ------------------------------------------------------------ libcuda stand-ins
    def pointer_info(self, ptr):
        from polykern_cuda.runtime import libcuda

        base, _ = self.find(ptr)
        if base is None:
            return None
        ctx = self.owner[base]
        return libcuda.PointerInfo(libcuda.MEMORY_DEVICE, ctx, False, ctx - 0x1000 if 0x1000 <= ctx < 0x1010 else 0)

    def stream_synchronize(self, handle):
        self.calls["stream_sync"].append(handle)
        return 0

    def pointer_context(self, ptr):
        base, _ = self.find(ptr)
        return None if base is None else self.owner[base]

    def current_context(self):
        st = self.stack()
        return st[-1].handle if st else 0

    def event_create(self, flags):
        ctx = self.current("cuEventCreate")
        self.calls["events"].append(("create", ctx.handle, flags))
        return 0, 0xE0000 + len(self.calls["events"])

    def event_record(self, event, stream):
        self.current("cuEventRecord")
        self.calls["events"].append(("record", event, stream))
        return 0

    def stream_wait_event(self, stream, event):
        self.current("cuStreamWaitEvent")
        self.calls["events"].append(("wait", stream, event))
        return 0

    # ------------------------------------------------------------ pycuda.driver
    def _make_driver(self):
        gpu = self
        d = types.ModuleType("pycuda.driver")

        class Error(Exception):
            pass

        class LogicError(Error):
            pass

        class LaunchError(Error):
            pass

        class RuntimeError_(Error):
            pass

        class MemoryError_(Error):
            pass

        d.Error, d.LogicError, d.LaunchError, d.RuntimeError, d.MemoryError = (
            Error, LogicError, LaunchError, RuntimeError_, MemoryError_)
        d.device_attribute = types.SimpleNamespace(
            MAX_BLOCK_DIM_X=1, MAX_BLOCK_DIM_Y=2, MAX_BLOCK_DIM_Z=3, MAX_GRID_DIM_X=4, MAX_GRID_DIM_Y=5,
            MAX_GRID_DIM_Z=6, MAX_THREADS_PER_BLOCK=7, MULTIPROCESSOR_COUNT=8, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN=9)
        limits = {1: 1024, 2: 1024, 3: 64, 4: 2 ** 31 - 1, 5: 65535, 6: 65535, 7: 1024, 8: 132, 9: 232448}
        d.function_attribute = types.SimpleNamespace(MAX_THREADS_PER_BLOCK=0, NUM_REGS=4,
                                                     MAX_DYNAMIC_SHARED_SIZE_BYTES=8)

        def init():
            if gpu.init_error:
                raise RuntimeError_(f"cuInit failed: {gpu.init_error}")

        class Context:
            def __init__(self, handle):
                self.handle = handle

            def push(self):
                gpu.calls["push"] += 1
                gpu.stack().append(self)

            @staticmethod
            def pop():
                st = gpu.stack()
                if not st:
                    raise LogicError("context::pop failed: invalid device context - cannot pop non-current context")
                st.pop()

            @staticmethod
            def synchronize():
                gpu.current("cuCtxSynchronize")
                gpu.calls["sync"] += 1
                fault, gpu.pending_fault = gpu.pending_fault, None
                if fault is not None:
                    raise LaunchError(f"cuCtxSynchronize failed: {fault}")

        class Device:
            def __init__(self, i):
                if not 0 <= i < gpu.count:
                    raise LogicError("cuDeviceGet failed: invalid device ordinal")
                self.i = i

            @staticmethod
            def count():
                return gpu.count

            def name(self):
                return f"{gpu.name} #{self.i}"

            def compute_capability(self):
                return gpu.cc

            def total_memory(self):
                return 80 * 2 ** 30

            def get_attribute(self, a):
                return limits[a]

            def retain_primary_context(self):
                gpu.calls["retain"] += 1
                return Context(0x1000 + self.i)

        class Allocation:
            def __init__(self, base):
                self.base = base

            def __int__(self):
                return self.base

            __index__ = __int__

            def free(self):
                ctx = gpu.current("cuMemFree")
                if gpu.owner.get(self.base) != ctx.handle:
                    gpu.errors.append("free in a foreign context")
                    raise LogicError("cuMemFree failed: invalid device context")
                with gpu.lock:
                    del gpu.mem[self.base]
                gpu.calls["free"] += 1

        def mem_alloc(n):
            ctx = gpu.current("cuMemAlloc")
            if gpu.alloc_failures:
                gpu.alloc_failures -= 1
                raise MemoryError_("cuMemAlloc failed: out of memory")
            gpu.calls["alloc"] += 1
            return Allocation(gpu.alloc_raw(n, ctx.handle))

        def memcpy_htod(dst, src):
            gpu.current("cuMemcpyHtoD")
            gpu.calls["htod"] += 1
            gpu.write(int(dst), memoryview(src).cast("B").tobytes())

        def memcpy_dtoh(dst, src):
            gpu.current("cuMemcpyDtoH")
            gpu.calls["dtoh"] += 1
            view = memoryview(dst).cast("B")
            view[:] = gpu.read(int(src), view.nbytes)

        class Function:
            def __init__(self, module, name):
                self.module, self.name = module, name

            def get_attribute(self, a):
                gpu.current("cuFuncGetAttribute")
                return gpu.fn_max_threads if a == 0 else 32

            def set_attribute(self, a, value):
                gpu.current("cuFuncSetAttribute")
                gpu.fn_attrs[(self.name, a)] = value

            def _launch_kernel(self, grid, block, params, shared, stream):
                gpu.current("cuLaunchKernel")
                assert isinstance(grid, tuple) and isinstance(block, tuple) and stream is None
                if shared > gpu.fn_attrs.get((self.name, 8), 48 * 1024):
                    raise LaunchError("cuLaunchKernel failed: invalid argument (dynamic shared memory over the "
                                      "function's limit)")
                gpu.shared.append(shared)
                if gpu.launch_error:
                    raise LaunchError(f"cuLaunchKernel failed: {gpu.launch_error}")
                gpu.calls["launch"] += 1
                params = bytes(params)
                gpu.launches.append((self.name, grid, block, params))
                emu = gpu.kernels.get(self.name)
                if emu is not None:
                    try:
                        emu(gpu, params, grid, block)
                    except FakeGPU.Fault:
                        gpu.pending_fault = "an illegal memory access was encountered"

        class Module:
            def __init__(self, entries, ctx):
                self.entries, self.ctx = entries, ctx

            def get_function(self, name):
                gpu.current("cuModuleGetFunction")
                if name not in self.entries:
                    del self  # pycuda raises from C++: no Python frame of it keeps the module alive
                    raise LogicError("cuModuleGetFunction failed: named symbol not found")
                return Function(self, name)

            def __del__(self):
                st = gpu.stack()
                if not st or st[-1] is not self.ctx and st[-1].handle != self.ctx.handle:
                    gpu.errors.append("module unloaded without its context current")
                gpu.calls["unload"] += 1

        def module_from_buffer(blob):
            ctx = gpu.current("cuModuleLoadDataEx")
            blob = bytes(blob)
            if gpu.load_failures:
                gpu.load_failures -= 1
                raise LogicError("cuModuleLoadDataEx failed: device kernel image is invalid - fake failure")
            if blob.startswith(b"\x7fELF"):
                if b"sm_%d%d" % gpu.cc not in blob:
                    raise LogicError("cuModuleLoadDataEx failed: no kernel image is available for execution on "
                                     "the device")
                entries = set(re.findall(rb"entry=(\w+)", blob))
            else:
                if not blob.endswith(b"\x00"):
                    gpu.errors.append("PTX handed to the driver without a NUL terminator")
                entries = set(re.findall(rb"\.entry\s+(\w+)", blob))
            gpu.calls["load"] += 1
            return Module({e.decode() for e in entries}, ctx)

        def get_driver_version():
            return 13000

        for f in (init, mem_alloc, memcpy_htod, memcpy_dtoh, module_from_buffer, get_driver_version):
            setattr(d, f.__name__, f)
        d.Context, d.Device = Context, Device
        return d


# ============================================================== emulated kernels (FAKE)
def emu_saxpy(gpu, params, grid, block):
    n, a, x, y = struct.unpack_from("<ifQQ", params, 0)
    xs = np.frombuffer(gpu.read(x, 4 * n), np.float32)
    ys = np.frombuffer(gpu.read(y, 4 * n), np.float32)
    gpu.write(y, (np.float32(a) * xs + ys).astype(np.float32).tobytes())


def emu_scale_oob(gpu, params, grid, block):
    (x,) = struct.unpack_from("<Q", params, 0)
    gpu.read(x + (1 << 40), 4)


@pk.kernel
def saxpy(n: pk.i32, a: pk.f32, x: pk.Buffer[pk.f32, "readonly"], y: pk.Buffer[pk.f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


def ptx_for(*names):
    return ("//\n// fake PTX\n.version 8.0\n.target sm_90\n.address_size 64\n"
            + "".join(f".visible .entry {n}(\n)\n{{\n\tret;\n}}\n" for n in names)).encode()


SAXPY_INFO = FunctionInfo.from_ir(saxpy.ir)
SAXPY_INFO = FunctionInfo(SAXPY_INFO.name, SAXPY_INFO.args, SAXPY_INFO.launch_tags, 0,
                          dict(SAXPY_INFO.attrs, entry="saxpy", arch="sm_90"))


# ============================================================== fixtures


def _purge(monkeypatch):
    for name in [m for m in sys.modules if m == "polykern_cuda.runtime" or m.startswith("polykern_cuda.runtime.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(polykern_cuda, "runtime", raising=False)


def _install(monkeypatch, gpu):
    pkg = types.ModuleType("pycuda")
    pkg.__path__ = []
    pkg.driver = gpu.driver
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", gpu.driver)
    _purge(monkeypatch)


def _import_runtime(monkeypatch, gpu):
    rt = importlib.import_module("polykern_cuda.runtime")
    from polykern_cuda.runtime import libcuda

    monkeypatch.setattr(libcuda, "pointer_info", gpu.pointer_info)
    monkeypatch.setattr(libcuda, "stream_synchronize", gpu.stream_synchronize)
    for name in ("pointer_context", "current_context", "event_create", "event_record", "stream_wait_event"):
        monkeypatch.setattr(libcuda, name, getattr(gpu, name))
    monkeypatch.setattr(libcuda, "error_codes", lambda: {})
    monkeypatch.setattr(libcuda, "error_name", lambda code: None)
    return rt


@pytest.fixture
def fake(monkeypatch):
    """(gpu, runtime module) with the fake driver, in a private registry where only cuda is declared."""
    gpu = FakeGPU()
    gpu.kernels["saxpy"] = emu_saxpy
    _install(monkeypatch, gpu)
    with isolated():
        polykern_cuda.register_backend()
        rec = backends.record_for_kind("cuda")
        assert rec.runtime_available, rec.runtime_reason
        rt = _import_runtime(monkeypatch, gpu)
        yield gpu, rt
        gc.collect()
    assert not gpu.errors, gpu.errors
    assert gpu.stack() == [], "unbalanced context push/pop on the test thread"


def make_module(rt, names=("saxpy",), fmt="ptx", payload=None, infos=None):
    infos = infos or {n: SAXPY_INFO if n == "saxpy" else FunctionInfo(n, (), (), 0, {"entry": n}) for n in names}
    return rt.create(payload if payload is not None else ptx_for(*names), fmt, infos, {})


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
    _install(monkeypatch, gpu)
    with isolated():
        rec = polykern_cuda.register_backend()
        assert not rec.runtime_available and reason in rec.runtime_reason
        assert registry.get("module.create.cuda") is None and registry.get("module.load_from_bytes.cuda") is None
        if "initialize" in reason:
            assert "CUDA_ERROR_NO_DEVICE" in rec.runtime_reason and "[CUDA_ERROR_NO_DEVICE 100]" in rec.runtime_reason


def test_device_selection_out_of_range(monkeypatch):
    _install(monkeypatch, FakeGPU(count=2))
    monkeypatch.setenv("POLYKERN_CUDA_DEVICE", "5")
    with isolated():
        rec = polykern_cuda.register_backend()
        assert "POLYKERN_CUDA_DEVICE=5 but this host has 2 CUDA devices (0..1)" in rec.runtime_reason


def test_missing_pycuda_is_the_recorded_reason(monkeypatch):
    """No fake here: pycuda made unimportable, as on a host without it."""
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    _purge(monkeypatch)
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


class CAI:
    """A foreign CUDA array (FAKE memory) exposing __cuda_array_interface__ v3."""

    def __init__(self, gpu, n, dtype=np.float32, ctx=0x1000, stream=None, strides=None, readonly=False):
        self.ptr = gpu.alloc_raw(n * np.dtype(dtype).itemsize, ctx)
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": np.dtype(dtype).str, "data": (self.ptr, readonly),
                                         "version": 3, "strides": strides, "stream": stream}


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


@pytest.mark.parametrize("make,match", [
    (lambda g: CAI(g, 8, dtype=np.float64), r"expected float32 elements \(f32\), got float64"),
    (lambda g: CAI(g, 8, strides=(8,)), "not C-contiguous"),
    (lambda g: CAI(g, 8, ctx=0x9999), "another CUDA context.*pycuda.autoprimaryctx"),
    (lambda g: CAI(g, 8, ctx=0x1001), "on cuda:1 but polykern runs on cuda:0"),
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
    with pytest.raises(LaunchError, match="on cuda:1 but polykern runs on cuda:0"):
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
    _purge(monkeypatch)
    monkeypatch.setattr(sys, "meta_path", [_RaisingFinder()] + sys.meta_path)
    with isolated():
        rec = polykern_cuda.register_backend()
        assert rec.runtime_reason == ("pycuda could not be imported: OSError: libcuda.so.1: cannot open shared "
                                      "object file: No such file or directory")


# ============================================================== asynchronous launches and the fast path (FAKE)
def _count_check_args(monkeypatch):
    """Counts the launches that took the slow path (polykern.launch.check_args)."""
    from polykern_cuda.runtime import kernel as kmod

    calls = []
    real = kmod.check_args

    def counting(*a, **kw):
        calls.append(a[0].name)
        return real(*a, **kw)

    monkeypatch.setattr(kmod, "check_args", counting)
    return calls


def test_device_array_launches_are_asynchronous_and_take_the_fast_path(fake, monkeypatch):
    gpu, rt = fake
    slow = _count_check_args(monkeypatch)
    k = make_module(rt)["saxpy"]
    x = rt.to_device(np.arange(16, dtype=np.float32))
    y = rt.zeros(16, np.float32)
    syncs, pushes = gpu.calls["sync"], gpu.calls["push"]
    k(16, 1.0, x, y, grid=1, block=16)  # a first grid/block: checked on the slow path
    assert len(slow) == 1
    for _ in range(3):
        k(16, 1.0, x, y, grid=1, block=16)
    k(np.int32(16), np.float32(1.0), x, y, grid=(1,), block=(16, 1, 1))  # same dims, NumPy scalars
    assert len(slow) == 1 and gpu.calls["launch"] == 5
    assert gpu.calls["sync"] == syncs, "a launch without host arrays must not wait for the device"
    np.testing.assert_array_equal(y.numpy(), 5 * np.arange(16))
    # outside any context the fast path pushes polykern's; where it is current, it pushes nothing
    assert gpu.calls["push"] - pushes >= 4
    with rt.context():
        pushes = gpu.calls["push"]
        k(16, 1.0, x, y, grid=1, block=16)
        assert gpu.calls["push"] == pushes
    assert rt.stats()["launches"] == 6


def test_numpy_launches_stay_synchronous(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    for _ in range(2):
        syncs = gpu.calls["sync"]
        y = np.ones(8, np.float32)
        k(8, 2.0, np.ones(8, np.float32), y, grid=1, block=8)
        assert gpu.calls["sync"] == syncs + 1
        np.testing.assert_array_equal(y, 3)


def test_a_fault_of_an_asynchronous_launch_surfaces_at_synchronize(fake):
    gpu, rt = fake
    gpu.kernels["oob"] = emu_scale_oob
    info = FunctionInfo("oob", (ArgInfo.buffer("x", f32),), (), 0, {"entry": "oob"})
    m = rt.create(ptx_for("oob"), "ptx", {"oob": info}, {})
    x = rt.zeros(4, np.float32)
    m["oob"](x, grid=1, block=1)  # returns: the kernel is only queued
    with pytest.raises(DeviceError) as e:
        polykern_cuda.synchronize()
    assert (e.value.code, e.value.name) == (700, "CUDA_ERROR_ILLEGAL_ADDRESS") and e.value.sticky
    assert "asynchronous kernel launched earlier failed" in str(e.value)
    rt.synchronize()  # nothing pending any more
    # once the context is lost, the next launch fails and says the fault may be an earlier launch's
    gpu.launch_error = "an illegal memory access was encountered"
    with pytest.raises(DeviceError, match="launching kernel 'oob'.*asynchronous.*launched earlier") as e:
        m["oob"](x, grid=1, block=1)
    assert e.value.code == 700 and e.value.sticky


ALL_SCALARS = FunctionInfo("all_scalars", (
    ArgInfo.scalar("b", bool_), ArgInfo.scalar("h", f16), ArgInfo.scalar("c", i8), ArgInfo.scalar("n", i32),
    ArgInfo.buffer("p", f32), ArgInfo.scalar("m", i64), ArgInfo.scalar("u", pk.u64), ArgInfo.scalar("f", f32),
    ArgInfo.scalar("d", pk.f64), ArgInfo.scalar("s", pk.u16), ArgInfo.scalar("z", bool_)), (), 0,
    {"entry": "all_scalars"})


def test_fast_path_packs_exactly_what_the_checked_path_packs(fake, monkeypatch):
    gpu, rt = fake
    slow = _count_check_args(monkeypatch)
    m = rt.create(ptx_for("all_scalars"), "ptx", {"all_scalars": ALL_SCALARS}, {})
    k = m["all_scalars"]
    p = rt.zeros(4, np.float32)
    rng = np.random.default_rng(7)
    cases = [(True, 0.1, -128, 2 ** 31 - 1, p, -(2 ** 63), 2 ** 64 - 1, 1e-40, -0.0, 65535, False),
             (np.bool_(False), np.float16(-65504), np.int8(127), np.int32(-7), p, np.int64(5), np.uint64(9),
              np.float32(3.4e38), float("inf"), np.uint16(1), True),
             (False, float("nan"), 0, 0, p, 0, 0, float("-inf"), float("nan"), 0, True),
             (True, 6e-8, 1, 1, p, 1, 1, 16777217, 2 ** 80, 2, False)]
    cases += [(bool(rng.integers(2)), float(rng.standard_normal() * 10.0 ** rng.integers(-8, 4)), 3, 4, p, 5, 6,
               float(rng.standard_normal() * 10.0 ** rng.integers(-40, 37)), float(rng.standard_normal()), 7, True)
              for _ in range(200)]
    k(*cases[0], grid=1, block=1)  # remember the dims
    for args in cases:
        before = len(slow)
        k(*args, grid=1, block=1)
        assert len(slow) == before, f"fast path not taken for {args}"
        fast = gpu.launches[-1][3]
        want = rt.create(ptx_for("all_scalars"), "ptx", {"all_scalars": ALL_SCALARS}, {})["all_scalars"]
        want(*args, grid=1, block=1)  # a new kernel: its first launch is the checked (slow) path
        assert len(slow) == before + 1
        assert fast == gpu.launches[-1][3], args


def test_fast_path_keeps_every_launch_error(fake, monkeypatch):
    """After a good launch (dims cached, fast path armed), every mistake still raises the LaunchError
    that check_args raises, and nothing is launched."""
    from polykern.launch import check_args

    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = rt.to_device(np.ones(8, np.float32)), rt.zeros(8, np.float32)
    k(8, 1.0, x, y, grid=1, block=8)
    freed = rt.zeros(8, np.float32)
    freed.free()
    ro = CAI(gpu, 8, readonly=True)
    bad = [
        ((8, 1.0, x), dict(grid=1, block=8), "takes 4 arguments"),
        ((8.0, 1.0, x, y), dict(grid=1, block=8), "expected an integer for i32"),
        ((True, 1.0, x, y), dict(grid=1, block=8), "expected a i32 value, got bool"),
        ((2 ** 31, 1.0, x, y), dict(grid=1, block=8), "out of range for i32"),
        ((8, 1e39, x, y), dict(grid=1, block=8), "out of range for f32"),
        ((8, 10 ** 400, x, y), dict(grid=1, block=8), "too large for f32"),
        ((8, "1", x, y), dict(grid=1, block=8), "expected a scalar f32"),
        ((8, 1.0, x, rt.zeros(8, np.int32)), dict(grid=1, block=8), r"expected float32 elements \(f32\), got int32"),
        ((8, 1.0, x, freed), dict(grid=1, block=8), "freed"),
        ((8, 1.0, x, ro), dict(grid=1, block=8), "read-only but the kernel may write it"),
        ((8, 1.0, x, CAI(gpu, 8, dtype=np.float64)), dict(grid=1, block=8), "got float64"),
        ((8, 1.0, x, CAI(gpu, 8, strides=(8,))), dict(grid=1, block=8), "not C-contiguous"),
        ((8, 1.0, x, CAI(gpu, 8, ctx=0x9999)), dict(grid=1, block=8), "another CUDA context"),
        ((8, 1.0, x, [1.0] * 8), dict(grid=1, block=8), "expected an array"),
        ((8, 1.0, x, y), dict(grid=True, block=8), "not bool"),
        ((8, 1.0, x, y), dict(grid=(True,), block=8), "must contain ints"),
        ((8, 1.0, x, y), dict(grid=1, block=(8, 0)), r"dimensions must be in 1\.\."),
        ((8, 1.0, x, y), dict(grid=1, block=2048), "maximum block size"),
        ((8, 1.0, x, y), dict(grid=None, block=8), "grid= is required"),
    ]
    launches = gpu.calls["launch"]
    for args, dims, match in bad:
        with pytest.raises(LaunchError, match=match) as e:
            k(*args, **dims)
        if "maximum" not in match and "freed" not in match and "context" not in match:
            with pytest.raises(LaunchError) as want:  # the very message check_args gives
                check_args(SAXPY_INFO, args, dims["grid"], dims["block"])
            assert str(e.value) == str(want.value)
    assert gpu.calls["launch"] == launches
    k(8, 1.0, ro, y, grid=1, block=8)  # read-only memory for the readonly parameter is fine
    assert gpu.calls["launch"] == launches + 1


def test_dims_cache_never_turns_a_bool_into_a_dimension(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = rt.to_device(np.ones(8, np.float32)), rt.zeros(8, np.float32)
    k(8, 1.0, x, y, grid=1, block=8)
    k(8, 1.0, x, y, grid=(1, 1, 1), block=(8, 1, 1))
    for grid in (True, (True,), (1, True), np.int64(1)):
        if isinstance(grid, np.integer):
            k(8, 1.0, x, y, grid=grid, block=8)  # NumPy ints are fine (checked path)
            continue
        with pytest.raises(LaunchError, match="bool|ints"):
            k(8, 1.0, x, y, grid=grid, block=8)


# ============================================================== cubin architecture check (pure + FAKE)
def fake_cubin(sm: int, abi: int = 8, accel: bool = False, tail: bytes = b"") -> bytes:
    """A 64-byte ELF header the way nvcc/NVRTC write a cubin's (EM_CUDA, SM in e_flags), then ``tail``."""
    if abi == 7:
        flags = sm | 0x400 | (0x800 if accel else 0)
    else:
        flags = 0x06000000 | (sm << 8) | 0x04
    hdr = bytearray(64)
    hdr[:4] = b"\x7fELF"
    hdr[4], hdr[5], hdr[6], hdr[7], hdr[8] = 2, 1, 1, 0x33, abi
    struct.pack_into("<HHI", hdr, 16, 2, 190, 1)
    struct.pack_into("<I", hdr, 48, flags)
    return bytes(hdr) + tail


@pytest.mark.parametrize("blob,built,cc,ok", [
    (fake_cubin(90), (), (9, 0), True),
    (fake_cubin(90, abi=7), (), (9, 0), True),
    (fake_cubin(120), (), (9, 0), False),          # another major
    (fake_cubin(120, abi=7), (), (9, 0), False),
    (fake_cubin(86), (), (8, 9), True),            # same major, newer minor device
    (fake_cubin(89), (), (8, 6), False),           # needs a newer minor
    (fake_cubin(80), (), (9, 0), False),
    (fake_cubin(90, abi=7, accel=True), (), (9, 0), True),
    (fake_cubin(100), ("sm_100a",), (10, 0), True),
    (fake_cubin(100), ("sm_100a",), (10, 3), False),  # "a": exactly that architecture
    (fake_cubin(100), ("sm_100",), (10, 3), True),
    (fake_cubin(90, abi=7, accel=True), (), (9, 1), False),
    (b"\x7fELF short", ("sm_120",), (9, 0), False),  # no header to read: the declared arch decides
    (b"\x7fELF short", (), (9, 0), True),            # nothing known: the driver decides
])
def test_cubin_compatibility_rules(fake, blob, built, cc, ok):
    from polykern_cuda.runtime import cubin

    arch = cubin.cubin_arch(blob, built)
    assert (arch is None or cubin.incompatibility(arch, cc) is None) == ok, (arch, cc)


def test_cubin_header_is_decoded_in_both_abi_layouts(fake):
    from polykern_cuda.runtime import cubin

    assert cubin.elf_arch(fake_cubin(90)) == (9, 0, "")
    assert cubin.elf_arch(fake_cubin(120)) == (12, 0, "")
    assert cubin.elf_arch(fake_cubin(75, abi=7)) == (7, 5, "")
    assert cubin.elf_arch(fake_cubin(90, abi=7, accel=True)) == (9, 0, "a")
    assert cubin.elf_arch(ptx_for("k")) is None and cubin.elf_arch(b"\x50\xed\x55\xba" + bytes(80)) is None


def test_foreign_arch_cubin_is_refused_before_the_driver_loads_it(fake):
    gpu, rt = fake
    info = FunctionInfo("saxpy", SAXPY_INFO.args, SAXPY_INFO.launch_tags, 0, {"entry": "saxpy", "arch": "sm_120"})
    # the fake driver would load this one (it names sm_90): only the header says sm_120
    m = rt.create(fake_cubin(120, tail=b" sm_90 entry=saxpy"), "cubin", {"saxpy": info}, {})
    with pytest.raises(DeviceError, match=r"sm_120 code.*not on sm_90.*built for sm_120; this device is sm_90") as e:
        m["saxpy"]
    assert (e.value.code, e.value.name) == (209, "CUDA_ERROR_NO_BINARY_FOR_GPU") and gpu.calls["load"] == 0
    ok = rt.create(fake_cubin(90, tail=b" sm_90 entry=saxpy"), "cubin", {"saxpy": SAXPY_INFO}, {})
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    ok["saxpy"](4, 3.0, x, y, grid=1, block=4)
    np.testing.assert_array_equal(y, 3)


# ============================================================== fast-path converters against check_args (pure)
_SCALAR_TYPES = [bool_, i8, pk.i16, i32, i64, pk.u8, pk.u16, pk.u32, pk.u64, f16, f32, pk.f64]
_VALUES = [0, 1, -1, 127, 128, -129, 255, 256, 2 ** 15, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 63, 2 ** 64,
           -(2 ** 63), 10 ** 40, True, False, 0.5, -0.0, 1e-45, 6e-8, 65504.0, 65519.0, 65520.0, 3.4028235e38,
           3.5e38, 1e308, float("inf"), float("-inf"), float("nan"), np.int32(7), np.int64(-3), np.uint64(2 ** 63),
           np.float32(1.5), np.float16(2.5), np.float64(0.1), np.bool_(True), np.int8(-8), np.uint16(9), "1", None,
           np.array(3), 1 + 2j]


@pytest.mark.parametrize("t", _SCALAR_TYPES, ids=str)
def test_scalar_converter_agrees_with_check_args(fake, t):
    """Whatever the fast path accepts, check_args accepts, and the bytes are the same."""
    from polykern.launch import MISS, check_args, scalar_converter
    from polykern_cuda.runtime.abi import packer

    info = FunctionInfo("k", (ArgInfo.scalar("v", t),))
    conv, st = scalar_converter(info.args[0]), packer(info)
    rng = np.random.default_rng(1)
    values = _VALUES + [float(v) for v in rng.standard_normal(300) * 10.0 ** rng.integers(-40, 40, 300)]
    accepted = 0
    for v in values:
        got = conv(v)
        try:
            _, _, (arg,) = check_args(info, (v,), 1, 1)
        except LaunchError:
            assert got is MISS, (t, v)
            continue
        if got is MISS:
            continue
        accepted += 1
        assert st.pack(got) == arg.tobytes(), (t, v)
    assert accepted >= 3  # bool: True, False, numpy.bool_


@pytest.mark.skipif(toolchain.available_compiler() is None, reason="neither NVRTC nor nvcc is installed here")
def test_real_cubin_of_another_arch_is_refused(fake):
    """A cubin the real NVRTC/nvcc made for sm_120, loaded on the (fake) sm_90 device: refused before
    the driver sees it (the fake driver would load it: the cubin's strings name sm_90 too)."""
    gpu, rt = fake
    m = pk.build([saxpy], targets=["cuda -arch=sm_120 -fmt=cubin"])
    fmt, blob = m.on("cuda").image
    assert fmt == "cubin" and blob.startswith(b"\x7fELF")
    with pytest.raises(DeviceError, match="built for sm_120; this device is sm_90") as e:
        m.on("cuda")["saxpy"]  # (the root's m["saxpy"] is a lazy Launcher: it loads nothing)
    assert e.value.name == "CUDA_ERROR_NO_BINARY_FOR_GPU" and gpu.calls["load"] == 0
    with pytest.raises(DeviceError, match="sm_120 code, which runs only on compute capability 12.x"):
        m["saxpy"](4, 1.0, np.ones(4, np.float32), np.ones(4, np.float32), grid=1, block=4)


def test_pointer_check_is_repeated_only_for_a_new_object_or_pointer(fake, monkeypatch):
    gpu, rt = fake
    from polykern_cuda.runtime import libcuda

    asked = []
    monkeypatch.setattr(libcuda, "pointer_context", lambda ptr: asked.append(ptr) or gpu.pointer_context(ptr))
    k = make_module(rt)["saxpy"]
    x, y = CAI(gpu, 8), CAI(gpu, 8)
    for _ in range(4):
        k(8, 1.0, x, y, grid=1, block=8)
    # the first launch is checked on the slow path (pointer_info); the first fast one asks once per
    # array, and then the same live objects reporting the same pointers are not asked again
    assert asked == [x.ptr, y.ptr]
    z = CAI(gpu, 8, ctx=0x9999)  # a new object (another context): asked, and refused
    with pytest.raises(LaunchError, match="another CUDA context"):
        k(8, 1.0, x, z, grid=1, block=8)
    y.__cuda_array_interface__["data"] = (z.ptr, False)  # the same object, another pointer: asked again
    with pytest.raises(LaunchError, match="another CUDA context"):
        k(8, 1.0, x, y, grid=1, block=8)


# ============================================================== checked mode through this runtime (FAKE)
def test_checked_kernel_passes_hidden_arguments_and_reads_the_record(fake):
    """pk.build(..., bounds_check=True) on CUDA: the wrapper appends the buffer lengths (a u32 buffer)
    and the error record; the runtime copies the record back before the launch returns."""
    import copy as _copy

    from polykern.passes import run_default_passes
    from polykern.passes.bounds_check import bounds_check

    gpu, rt = fake
    base = FunctionInfo.from_ir(bounds_check(run_default_passes(_copy.deepcopy(saxpy.ir))))
    info = FunctionInfo(base.name, base.args, base.launch_tags, 0, dict(base.attrs, entry="saxpy", arch="sm_90"))
    write_id = next(k for k in range(int(info.attrs["bounds_accesses"]))
                    if '"y","write"' in info.attrs[f"bounds_at_{k}"])
    seen = []

    def emu_checked(gpu, params, grid, block):
        n, a, x, y, lens, err = struct.unpack_from("<ifQQQQ", params, 0)
        x_len, y_len = struct.unpack("<II", gpu.read(lens, 8))
        seen.append((n, x_len, y_len))
        if n > y_len:
            gpu.write(err, struct.pack("<iiii", write_id + 1, y_len, 0, 0))

    gpu.kernels["saxpy"] = emu_checked
    k = make_module(rt, infos={"saxpy": info})["saxpy"]
    k(4, 1.0, np.ones(4, np.float32), np.ones(4, np.float32), grid=1, block=4)
    with pytest.raises(LaunchError, match=r"kernel 'saxpy': out-of-bounds write to buffer 'y' at index 3 \(length 3\)"):
        k(5, 1.0, np.ones(5, np.float32), np.ones(3, np.float32), grid=1, block=8)
    assert seen == [(4, 4, 4), (5, 5, 3)]


@pk.kernel
def rev_tile(n: pk.i32, x: pk.Buffer[pk.f32], y: pk.Buffer[pk.f32]):
    tile = pk.shared_dynamic(pk.f32)
    i = pk.local_id(0)
    tile[i] = x[i]
    pk.barrier()
    y[i] = tile[pk.local_size(0) - 1 - i]


def test_dynamic_shared_memory_is_the_launchs_shared_bytes_with_opt_in(fake):
    """pk.shared_dynamic: sharedMemBytes = shared_size * element bytes (fast and slow paths); above 48 KiB
    the kernel opts in with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) once; over the device's
    opt-in limit (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) is a LaunchError before anything is launched."""
    gpu, rt = fake
    info = FunctionInfo.from_ir(rev_tile.ir)
    info = FunctionInfo(info.name, info.args, info.launch_tags, 0, dict(info.attrs, entry="rev_tile", arch="sm_90"))
    assert info.attrs["dynamic_shared"] == "3,4"
    mod = make_module(rt, names=("rev_tile",), infos={"rev_tile": info})
    k = mod.get_function("rev_tile")
    assert k.limit == 232448
    x = rt.to_device(np.zeros(64, np.float32))
    y = rt.empty(64, np.float32)
    k(64, x, y, grid=1, block=64, shared_size=64)            # slow path first, then the fast path
    k(64, x, y, grid=1, block=64, shared_size=256)
    k(64, np.zeros(64, np.float32), np.zeros(64, np.float32), grid=1, block=64, shared_size=20000)
    k(64, x, y, grid=1, block=64, shared_size=30000)
    k(64, x, y, grid=1, block=64, shared_size=100)
    assert gpu.shared == [256, 1024, 80000, 120000, 400]
    assert gpu.fn_attrs == {("rev_tile", 8): 120000}
    with pytest.raises(LaunchError, match="shared_size=60000 is 240000 bytes; the device's limit is 232448"):
        k(64, x, y, grid=1, block=64, shared_size=60000)
    assert len(gpu.shared) == 5
