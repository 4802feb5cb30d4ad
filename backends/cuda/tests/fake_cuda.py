"""The FAKE pycuda driver the host-side CUDA runtime tests run on (no GPU, no libcuda).

*** ``FakeGPU`` stands in for ``pycuda`` / ``pycuda.driver`` and the ctypes helpers in
*** ``runtime/libcuda.py``. Kernels "run" as Python emulations that read the packed parameter buffer
*** and the fake device memory. It proves nothing about the real driver (test_cuda_runtime.py does,
*** on a GPU machine).

The fake follows pycuda 2026.1's API as the runtime uses it (read from its sdist): ``init``,
``Device`` (``count``, ``name``, ``compute_capability``, ``total_memory``, ``get_attribute``,
``retain_primary_context``), ``Context`` (``push``, static ``pop``/``synchronize``, ``handle``),
``module_from_buffer`` -> ``Module.get_function`` -> ``Function`` (``get_attribute``,
``_launch_kernel(grid, block, buf, shared, stream)``), ``mem_alloc`` -> allocation (``int()``,
``free``), ``memcpy_htod``/``memcpy_dtoh``, ``get_driver_version``, and the ``Error`` classes with
pycuda's "<routine> failed: <text>" messages. Unlike pycuda it is strict: every call that needs a
current context raises if none is pushed on the calling thread, so a missing ``scope()`` fails.
Used by test_cuda_runtime_fake.py, test_cuda_runtime_fake_async.py, test_cuda_streams_fake.py (the ``fake``
fixture) and test_cuda_multidevice_fake.py (``fake2``: two devices).
"""
from __future__ import annotations

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
from polykern import backends
from polykern.errors import LaunchError
from polykern.module import FunctionInfo
from polykern.testing.isolation import isolated
import polykern_cuda
from polykern_cuda.driver_limits import DEFAULT_SHARED, FUNC_ATTR_MAX_DYNAMIC_SHARED

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
        self.launch_contexts = []  # the context handle each pycuda launch ran in (0x1000 + device ordinal)
        self.peer_copies = []  # (dst, dst_ctx, src, src_ctx, nbytes, stream) of each cuMemcpyPeer[Async]
        self.shared = []  # sharedMemBytes of each launch
        self.fn_attrs = {}  # (function name, attribute) -> value set by cuFuncSetAttribute
        self.load_failures = 0  # next N module loads fail
        self.alloc_failures = 0  # next N allocations fail with out of memory
        self.pending_fault = None
        self.errors = []  # strictness violations (also raised)
        self.capturing = {}  # stream handle -> capture status (1 active, 2 invalidated)
        self.graphs = {}  # CUgraph / CUgraphExec handle -> "graph" / "exec" (the live ones)
        self.replays = []  # (CUgraphExec, stream) of each cuGraphLaunch
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
        ctx = self.owner[base]  # 0: memory no context owns (VMM, cuMemCreate: XLA's buffers), on device 0
        return libcuda.PointerInfo(libcuda.MEMORY_DEVICE, ctx or None, False,
                                   ctx - 0x1000 if 0x1000 <= ctx < 0x1010 else 0)

    def stream_synchronize(self, handle):
        self.calls["stream_sync"].append(handle)
        if handle in self.capturing:  # the real driver refuses and invalidates the capture
            self.capturing[handle] = 2
            return 900  # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
        return 0

    def stream_is_capturing(self, handle):
        """(CUresult, status): 1 (CAPTURE_ACTIVE) while ``stream_begin_capture`` captures it, 2 once invalidated (the
        real call on a fake handle would crash)."""
        self.current("cuStreamIsCapturing")
        return 0, self.capturing.get(handle, 0)

    # CUDA graphs (FAKE: a graph is a handle; replaying appends (exec, stream) to ``replays``)
    def stream_begin_capture(self, handle):
        self.current("cuStreamBeginCapture")
        if handle in self.capturing:
            return 401  # CUDA_ERROR_ILLEGAL_STATE: the stream captures already
        self.capturing[handle] = 1
        self.calls["events"].append(("begin_capture", handle))
        return 0

    def stream_end_capture(self, handle):
        self.current("cuStreamEndCapture")
        status = self.capturing.pop(handle, None)
        if status is None:
            return 401, 0  # CUDA_ERROR_ILLEGAL_STATE: not capturing
        self.calls["events"].append(("end_capture", handle))
        if status != 1:
            return 901, 0  # CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
        graph = 0x6000 + 2 * len(self.calls["events"])
        self.graphs[graph] = "graph"
        return 0, graph

    def graph_instantiate(self, graph):
        self.current("cuGraphInstantiateWithFlags")
        if self.graphs.get(graph) != "graph":
            return 400, 0  # CUDA_ERROR_INVALID_HANDLE
        self.graphs[graph + 1] = "exec"
        return 0, graph + 1

    def graph_launch(self, graph_exec, stream):
        self.current("cuGraphLaunch")
        if self.graphs.get(graph_exec) != "exec":
            self.errors.append(f"cuGraphLaunch of 0x{graph_exec:x}, not a live executable graph")
            return 400
        self.replays.append((graph_exec, stream))
        return 0

    def graph_exec_destroy(self, graph_exec):
        self.current("cuGraphExecDestroy")
        return 0 if self.graphs.pop(graph_exec, None) == "exec" else 400

    def graph_destroy(self, graph):
        self.current("cuGraphDestroy")
        return 0 if self.graphs.pop(graph, None) == "graph" else 400

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

    # streams and events of pk.Stream (runtime/streams.py); FAKE: work is done when it is queued
    def stream_create(self):
        ctx = self.current("cuStreamCreate")
        self.calls["events"].append(("stream_create", ctx.handle))
        return 0, 0x5000 + len(self.calls["events"])

    def stream_destroy(self, handle):
        self.current("cuStreamDestroy")
        self.calls["events"].append(("stream_destroy", handle))
        return 0

    def event_synchronize(self, event):
        self.calls["events"].append(("event_sync", event))
        return 0

    def event_query(self, event):
        return 0

    def event_elapsed_ms(self, start, end):
        return 0, 0.5

    def event_destroy(self, event):
        self.current("cuEventDestroy")
        return 0

    def memcpy_peer(self, dst, dst_ctx, src, src_ctx, nbytes, stream=None):
        """cuMemcpyPeer[Async] (FAKE: done at once); strict: each pointer must belong to the context named for it."""
        for ptr, ctx in ((dst, dst_ctx), (src, src_ctx)):
            base, _ = self.find(ptr)
            if base is None or self.owner[base] != ctx:
                self.errors.append(f"cuMemcpyPeer: 0x{ptr:x} is not memory of context 0x{ctx:x}")
                return 1  # CUDA_ERROR_INVALID_VALUE
        self.peer_copies.append((dst, dst_ctx, src, src_ctx, nbytes, stream))
        self.write(dst, self.read(src, nbytes))
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
                ctx = gpu.current("cuLaunchKernel")
                if ctx.handle != self.module.ctx.handle:
                    gpu.errors.append("a function launched in another context than its module's")
                    raise LogicError("cuLaunchKernel failed: invalid resource handle")
                gpu.launch_contexts.append(ctx.handle)
                assert isinstance(grid, tuple) and isinstance(block, tuple) and stream is None
                if shared > gpu.fn_attrs.get((self.name, FUNC_ATTR_MAX_DYNAMIC_SHARED), DEFAULT_SHARED):
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


# ============================================================== a foreign CUDA array (FAKE)
class CAI:
    """A foreign CUDA array (FAKE memory) exposing __cuda_array_interface__ v3."""

    def __init__(self, gpu, n, dtype=np.float32, ctx=0x1000, stream=None, strides=None, readonly=False):
        self.ptr = gpu.alloc_raw(n * np.dtype(dtype).itemsize, ctx)
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": np.dtype(dtype).str, "data": (self.ptr, readonly),
                                         "version": 3, "strides": strides, "stream": stream}


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


def purge_runtime(monkeypatch):
    for name in [m for m in sys.modules if m == "polykern_cuda.runtime" or m.startswith("polykern_cuda.runtime.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(polykern_cuda, "runtime", raising=False)


def install_fake(monkeypatch, gpu):
    pkg = types.ModuleType("pycuda")
    pkg.__path__ = []
    pkg.driver = gpu.driver
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", gpu.driver)
    purge_runtime(monkeypatch)


def import_runtime(monkeypatch, gpu):
    rt = importlib.import_module("polykern_cuda.runtime")
    from polykern_cuda.runtime import libcuda

    monkeypatch.setattr(libcuda, "pointer_info", gpu.pointer_info)
    monkeypatch.setattr(libcuda, "stream_synchronize", gpu.stream_synchronize)
    for name in ("pointer_context", "current_context", "event_create", "event_record", "stream_wait_event",
                 "stream_create", "stream_destroy", "event_synchronize", "event_query", "event_elapsed_ms",
                 "event_destroy", "memcpy_peer", "stream_is_capturing", "stream_begin_capture",
                 "stream_end_capture", "graph_instantiate", "graph_launch", "graph_exec_destroy", "graph_destroy"):
        monkeypatch.setattr(libcuda, name, getattr(gpu, name))
    monkeypatch.setattr(libcuda, "error_codes", lambda: {})
    monkeypatch.setattr(libcuda, "error_name", lambda code: None)
    return rt


@pytest.fixture
def fake(monkeypatch):
    """(gpu, runtime module) with the fake driver, in a private registry where only cuda is declared."""
    yield from fake_runtime(monkeypatch, FakeGPU())


@pytest.fixture
def fake2(monkeypatch):
    """``fake`` with two devices (cuda:0 and cuda:1; contexts 0x1000 and 0x1001)."""
    yield from fake_runtime(monkeypatch, FakeGPU(count=2))


def fake_runtime(monkeypatch, gpu):
    gpu.kernels["saxpy"] = emu_saxpy
    install_fake(monkeypatch, gpu)
    with isolated():
        polykern_cuda.register_backend()
        rec = backends.record_for_kind("cuda")
        assert rec.runtime_available, rec.runtime_reason
        rt = import_runtime(monkeypatch, gpu)
        yield gpu, rt
        gc.collect()
    assert not gpu.errors, gpu.errors
    assert gpu.stack() == [], "unbalanced context push/pop on the test thread"


def param_launches(gpu, monkeypatch, entry) -> list:
    """Replace the ctypes launcher (launches on a pk.Stream, tensor maps) with the fake's: each launch runs the
    saxpy emulation and appends ``entry(stream, context handle)``; strict: a launch in another context than the
    one its module was loaded in is an error."""
    from polykern_cuda.runtime import tensor_maps

    seen = []

    class FakeParamLauncher:
        def __init__(self, image, entry_name, info):
            self.ctx = gpu.current("cuModuleLoadData").handle

        def launch(self, grid3, block3, params, shared, stream=0):
            ctx = gpu.current("cuLaunchKernel").handle
            if ctx != self.ctx:
                gpu.errors.append("a kernel launched in another context than its module's (ctypes launcher)")
            seen.append(entry(stream, ctx))
            emu_saxpy(gpu, bytes(params), grid3, block3)

    monkeypatch.setattr(tensor_maps, "ParamLauncher", FakeParamLauncher)
    return seen


def make_module(rt, names=("saxpy",), fmt="ptx", payload=None, infos=None):
    infos = infos or {n: SAXPY_INFO if n == "saxpy" else FunctionInfo(n, (), (), 0, {"entry": n}) for n in names}
    return rt.create(payload if payload is not None else ptx_for(*names), fmt, infos, {})


