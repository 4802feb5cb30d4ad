"""``CUDAKernel``: ``mod["k"](*args, grid=, block=)`` on the CUDA device.

Launches are **asynchronous** on the legacy default stream (the stream CuPy's and PyTorch's default
work and every synchronous copy are ordered with), as in CuPy: the call returns once the kernel is
queued. A fault of the kernel (an illegal address, say) surfaces at the next synchronizing call —
``polykern_cuda.synchronize()``, ``DeviceArray.numpy()``, a launch with NumPy arguments, or a later
launch once the context is lost — as a ``DeviceError`` with the CUresult. Launches that take NumPy
(host) arrays stay synchronous: they copy in, launch, wait (a fault is reported by that call) and
copy written arrays back.

Streams (streams.py): a launch made while a ``pk.Stream`` of this device is current goes to that stream;
with none current, one whose arguments include a PyTorch CUDA tensor or a CuPy array goes to
PyTorch's / CuPy's current stream; otherwise to the legacy default stream. pycuda launches only on the
default stream or its own streams, so a launch on another stream goes through ``cuLaunchKernel`` with
``kernelParams`` (tensor_maps.ParamLauncher, which loads the image once more through ctypes).

Fast path (every launch whose arguments are common cases; nothing else changes): grid/block exact
``int``/``tuple`` already checked against the device's and the kernel's limits; scalars of the
declared type in range (``polykern.runtime.launch.scalar_converter``); buffers that are ``DeviceArray``s of
this device or ``__cuda_array_interface__`` arrays of exactly the declared dtype, C-contiguous
(``strides`` None), writable where the kernel may write, whose pointer the driver says belongs to
polykern's (primary) context (one ``cuPointerGetAttribute``; not repeated while the same live object
reports the same pointer), or to no context but this device (VMM memory: XLA's buffers, ``polykern.jax``). It
packs the parameter buffer with one precomputed ``struct`` (``abi.packer``), skips the context push/pop when the primary context is
already current on this thread (one ``cuCtxGetCurrent``), orders the launch after (and a foreign
CAI stream after the launch) with an event, and calls ``cuLaunchKernel`` on the cached function.
Anything else — NumPy arrays, DLPack, other runtimes' arrays, a first grid/block, and every
mistake — goes through ``check_args`` and ``buffers.Staging`` (the slow path), which raises the
precise ``LaunchError``. Threads may launch at once.

Several devices (routing.py): a kernel is bound to one device; the launch goes to the kernel of the device its
arrays live on (``module.kernel_on``): a DeviceArray of another device is tried on that device's fast path,
and the slow path routes by every argument (two devices: a LaunchError).
"""
from __future__ import annotations

import weakref
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pycuda.driver as drv

from polykern.runtime import kernel_output
from polykern.errors import DeviceError, LaunchError
from polykern.runtime.launch import MISS, BufferArg, fast_dims, names_bfloat16, scalar_converter
from polykern.module import ArgInfo, FunctionInfo
from polykern.ir import hopper as H
from polykern.runtime.shared_launch import dynamic_shared_of
from polykern.runtime.staged_launch import HostCopy, Launch, StagedLaunch

from ..driver_limits import dynamic_allowance
from . import abi, libcuda, tensor_maps
from .buffers import Staging, device_memory_of
from .cuerrors import cuda_call, device_error
from .device_array import DeviceArray
from .routing import launch_device, quick_device
from .streams import check_capturable, launch_handle

__all__ = ["CUDAKernel"]

_CAI, _OTHER = 1, 2
_KINDS: Dict[type, int] = {}  # buffer argument type -> _CAI / _OTHER, where the type alone decides
_MAX_DIMS = 256  # grid/block pairs remembered as checked, per kernel


def _classify(cls: type, v: Any) -> int:
    if issubclass(cls, (np.ndarray, np.generic, bool, int, float, complex, str, bytes)) or hasattr(
            cls, "__polykern_buffer__"):
        _KINDS[cls] = _OTHER
        return _OTHER
    if hasattr(cls, "__cuda_array_interface__"):  # a class attribute (property): no evaluation here
        _KINDS[cls] = _CAI
        return _CAI
    if hasattr(v, "__polykern_buffer__"):  # instance attributes: decided per object
        return _OTHER
    return _CAI if hasattr(v, "__cuda_array_interface__") else _OTHER


def _elements(v: Any) -> Optional[int]:
    """Elements of a device array the fast path accepted (a DeviceArray or a __cuda_array_interface__ object)."""
    if type(v) is DeviceArray:
        return int(v.size)
    try:
        n = 1
        for d in v.__cuda_array_interface__["shape"]:
            n *= int(d)
        return n
    except Exception:  # noqa: BLE001 - the slow path says what is wrong
        return None


class CUDAKernel(StagedLaunch):
    runtime = "cuda"

    def __init__(self, module, info: FunctionInfo, loaded, entry: str):
        self.module = module  # keeps the module (and its loaded image) alive while the kernel is used
        self.info = info
        self.loaded = loaded
        self.entry = entry
        self.dev = loaded.dev
        FA = drv.function_attribute
        fn = loaded.function(entry)
        try:
            with self.dev.scope(), cuda_call(f"querying kernel '{info.name}'"):
                self.max_threads = int(fn.get_attribute(FA.MAX_THREADS_PER_BLOCK))
                self.num_regs = int(fn.get_attribute(FA.NUM_REGS))
        finally:
            fn = None  # the function object stays only in ``loaded`` (see _Loaded.unload)
        self._ctx = self.dev.context_handle  # retained by loading the module
        self._struct = abi.packer(info)
        self._nargs = len(info.args)
        self._is_buffer = tuple(a.is_buffer for a in info.args)
        self._convs = tuple(self._buffer_converter(a) if a.is_buffer else scalar_converter(a) for a in info.args)
        self._dims_ok: set = set()
        # pk.shared_dynamic: (size argument, element bytes); dynamic bytes a launch may use before
        # cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) must raise the kernel's limit (48 KiB in all)
        self._dyn = dynamic_shared_of(info)
        self._dyn_allowed = dynamic_allowance(info.shared_bytes)
        self._max_shared: Optional[int] = None
        # Hopper kernels: hidden tensor maps encoded per launch, the declared block (runtime/tensor_maps.py)
        self._tmaps = tensor_maps.plan(info)
        self._param_launcher = None
        self._dyn_slack = H.SWIZZLE_ALIGN if info.attrs.get(H.ATTR_DYNAMIC_ALIGN) else 0

    @property
    def max_shared_bytes(self) -> int:
        """Static + dynamic shared memory per block with opt-in (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
        227 KiB on an H100): shared_launch.py checks shared_size= against it."""
        if self._max_shared is None:
            with self.dev.scope(), cuda_call(f"querying the shared memory limit for kernel '{self.info.name}'"):
                self._max_shared = int(self.dev.handle.get_attribute(
                    drv.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
        return self._max_shared

    def _dynamic_bytes(self, values) -> int:
        """sharedMemBytes of a launch: the pk.shared_dynamic array's bytes (0 without one)."""
        if self._dyn is None:
            return 0
        index, elem = self._dyn
        return int(values[index]) * elem + self._dyn_slack

    @property
    def name(self) -> str:
        return self.info.name

    def __repr__(self) -> str:
        return f"<CUDAKernel {self.info.signature()} on cuda:{self.dev.ordinal}>"

    def check_limits(self, grid3: Tuple[int, int, int], block3: Tuple[int, int, int]) -> None:
        dev, where = self.dev, f"kernel '{self.name}'"
        for axis, (b, mb) in enumerate(zip(block3, dev.max_block)):
            if b > mb:
                raise LaunchError(f"{where}: block {block3} exceeds {dev.name}'s maximum block size {dev.max_block} "
                                  f"in dimension {'xyz'[axis]}")
        threads = block3[0] * block3[1] * block3[2]
        if threads > dev.max_threads:
            raise LaunchError(f"{where}: block {block3} has {threads} threads; {dev.name} allows {dev.max_threads} "
                              "per block")
        if threads > self.max_threads:
            raise LaunchError(f"{where}: block {block3} has {threads} threads, but this kernel uses {self.num_regs} "
                              f"registers per thread, so at most {self.max_threads} threads per block fit on "
                              f"{dev.name}; use a smaller block")
        for axis, (g, mg) in enumerate(zip(grid3, dev.max_grid)):
            if g > mg:
                raise LaunchError(f"{where}: grid {grid3} exceeds {dev.name}'s maximum grid size {dev.max_grid} "
                                  f"in dimension {'xyz'[axis]}")

    # ------------------------------------------------------------ launch
    def __call__(self, *args: Any, grid=None, block=None) -> None:
        if self._fast(args, grid, block):
            return
        dev = quick_device(args)
        if dev is not None and dev is not self.dev and self.module.kernel_on(self.name, dev)._fast(args, grid, block):
            return
        self._slow(args, grid, block)

    def _buffer_converter(self, a: ArgInfo):
        """``conv(v, streams)`` -> the device address of buffer argument ``v``, or MISS."""
        want = a.dtype.numpy
        typestr = want.str
        void = typestr[1:] == "V2"  # bf16: a void 2-byte typestr is bfloat16 only where the object names it so
        writable = not a.readonly
        dev, ctx = self.dev, self._ctx
        # (weakref to the CAI object, pointer) that last passed the pointer check: the same live
        # object reporting the same pointer still owns that allocation, so it is not asked again
        last: Any = None

        def conv(v: Any, streams: list) -> Any:
            nonlocal last
            cls = type(v)
            if cls is DeviceArray:
                dt = v.dtype
                if v.device is not dev or v._freed or (dt is not want and dt != want):
                    return MISS
                block = v._handle
                return block.ptr if block is not None else 0
            kind = _KINDS.get(cls) or _classify(cls, v)
            if kind != _CAI:
                return MISS
            try:
                cai = v.__cuda_array_interface__
                ts = cai["typestr"]
                if (not names_bfloat16(v, cai) if void else ts != typestr) or cai.get("strides") is not None \
                        or cai.get("mask") is not None:
                    return MISS
                ptr, readonly = cai["data"]
                shape = cai["shape"]
                stream = cai.get("stream")
            except Exception:  # noqa: BLE001 - anything odd: check_args says what is wrong
                return MISS
            if type(ptr) is not int or ptr <= 0 or (readonly and writable) or type(shape) is not tuple:
                return MISS
            for n in shape:
                if type(n) is not int or n <= 0:
                    return MISS
            seen = last
            if seen is None or seen[1] != ptr or seen[0]() is not v:
                owner = libcuda.pointer_context(ptr)
                if owner != ctx and not (owner == 0 and device_memory_of(dev, ptr)):
                    return MISS  # another context, unknown memory, managed...: the full check says what
                try:
                    last = (weakref.ref(v), ptr)
                except TypeError:  # not weak-referenceable: checked on every launch
                    pass
            if stream is not None and stream != 1 and stream != 0:
                if type(stream) is not int:
                    return MISS
                if stream not in streams:
                    streams.append(stream)
            return ptr
        return conv

    def _fast(self, args, grid, block) -> bool:
        """Launch if every argument is a common case (module docstring); False (nothing done) otherwise."""
        if len(args) != self._nargs:
            return False
        g = fast_dims(grid)
        if g is None:
            return False
        b = fast_dims(block)
        if b is None or (g, b) not in self._dims_ok:
            return False
        streams: list = []
        values = []
        is_buffer, convs = self._is_buffer, self._convs
        for i, v in enumerate(args):
            x = convs[i](v, streams) if is_buffer[i] else convs[i](v)
            if x is MISS:
                return False
            values.append(x)
        params = self._struct.pack(*values)
        if self._tmaps is not None:  # the maps' buffers: their lengths for the shape checks
            sizes = {i: _elements(args[i]) for i in self._tmaps.buffers}
            if None in sizes.values():
                return False
            params = self._tmaps.append(params, values, sizes)
        shared = self._dynamic_bytes(values)
        target = launch_handle(self.dev, self.name, args)
        if libcuda.current_context() == self._ctx:
            self._enqueue(g, b, params, streams, shared, target)
        else:
            with self.dev.scope():
                self._enqueue(g, b, params, streams, shared, target)
        return True

    def _enqueue(self, grid3, block3, params, streams, shared: int = 0, target: int = 0) -> None:
        """Queue the launch on CUstream ``target`` (0: the legacy default stream; the primary context must be
        current); ``shared``: the dynamic shared memory bytes. pycuda launches only on its own streams, so a
        launch on another stream goes through the ctypes ``ParamLauncher`` (tensor_maps.py)."""
        dev = self.dev
        if target:
            streams = [s for s in streams if s != target]
        if streams:
            dev.streams.wait_for(streams, target)
        if shared > self._dyn_allowed:  # over 48 KiB in all: opt in (the limit was checked before)
            with cuda_call(f"allowing {shared} bytes of dynamic shared memory for kernel '{self.name}'"):
                (self.loaded.functions.get(self.entry) or self.loaded.function(self.entry)).set_attribute(
                    drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
            self._dyn_allowed = shared
        if self._tmaps is not None or target:  # tensor maps, or a stream: launched through kernelParams
            if self._param_launcher is None:
                self._param_launcher = tensor_maps.ParamLauncher(self.module.image[1] + b"\0" * (
                    self.module.image[0] == "ptx"), self.entry, self.info)
            try:
                self._param_launcher.launch(grid3, block3, params, shared, target)
            except DeviceError as e:
                raise DeviceError(f"{e} (kernel '{self.name}')", code=e.code, name=e.name) from None
            if streams:
                dev.streams.signal(streams, target)
            next(dev.launched)
            return
        try:
            # one expression: no frame variable keeps the pycuda Function (and its module) alive
            (self.loaded.functions.get(self.entry) or self.loaded.function(self.entry))._launch_kernel(
                grid3, block3, params, shared, None)
        except drv.Error as e:
            e.__traceback__ = None  # its frames may hold the Function (a fake's, or a wrapper's): drop them
            err = device_error(f"launching kernel '{self.name}' (grid {grid3}, block {block3})", e)
            if getattr(err, "sticky", False):
                err = DeviceError(f"{err} (launches are asynchronous: the fault may come from a kernel launched "
                                  "earlier; polykern_cuda.synchronize() after a launch reports it there)",
                                  code=err.code, name=err.name)
                err.sticky = True  # type: ignore[attr-defined]
            raise err from e
        if streams:
            dev.streams.signal(streams)
        next(dev.launched)

    def _slow(self, args, grid, block) -> None:
        # the staged launch (polykern/runtime/staged_launch.py), routed to the arrays' device (route); host arrays
        # are copied one by one (the same memory twice shares one copy), so overlapping views are refused
        # (they lost writes on the H100: tests/test_issue15_redteam.py)
        self.staged(args, grid, block, note=args)

    # ------------------------------------------------------------ staged launch hooks (staged_launch.py)
    def route(self, prepared) -> "CUDAKernel":
        dev = launch_device(self.name, prepared, self.dev)
        return self if dev is self.dev else self.module.kernel_on(self.name, dev)

    def limits(self, launch: Launch) -> None:
        grid3, block3 = launch.grid, launch.block
        self.check_limits(grid3, block3)
        if self._tmaps is not None:
            self._tmaps.check_block(block3)
        if len(self._dims_ok) >= _MAX_DIMS:
            self._dims_ok.clear()
        self._dims_ok.add((grid3, block3))

    def prepare(self, launch: Launch) -> None:
        if any(isinstance(a, BufferArg) and a.is_host for a in launch.prepared):  # copies: not while capturing
            check_capturable(self.dev, self.name, launch.note or ())
        launch.staging = Staging(self.dev, self.name)
        launch.reusable = True

    def exclusive(self, launch: Launch):
        return self.dev.scope()

    def bind_device(self, launch: Launch, arg: BufferArg) -> int:
        return launch.staging.device_pointer(arg)

    def stage_in(self, launch: Launch, arg: BufferArg) -> int:
        return launch.staging.host_copy(arg)

    def dispatch(self, launch: Launch) -> None:
        dev, prepared, grid3, block3 = self.dev, launch.prepared, launch.grid, launch.block
        pointers = {a.index: v for a, v in zip(prepared, launch.bindings) if isinstance(a, BufferArg)}
        scalars = {a.index: a.tobytes() for a in prepared if not isinstance(a, BufferArg)}
        params = abi.pack(self.info, scalars, pointers)
        if self._tmaps is not None:
            values = {a.index: (pointers[a.index] if isinstance(a, BufferArg) else a.value) for a in prepared}
            params = self._tmaps.append(params, values, {a.index: a.size for a in prepared
                                                         if isinstance(a, BufferArg)})
        shared = self._dynamic_bytes([getattr(a, "value", 0) for a in prepared])
        self._enqueue(grid3, block3, params, sorted(launch.staging.streams), shared,
                      launch_handle(dev, self.name, launch.note))
        if launch.host_copies:  # host arrays: wait, report a fault here, then copy back (stage_out)
            with cuda_call(f"running kernel '{self.name}' (grid {grid3}, block {block3})"):
                drv.Context.synchronize()
            if kernel_output.prints(self.info):  # the driver wrote the device's printf buffer
                kernel_output.launched()

    def stage_out(self, launch: Launch, copies: List[HostCopy]) -> None:
        for hc in copies:
            Staging.copy_back(hc.arg.array, hc.handle, hc.nbytes)

    def launch_failed(self, launch: Launch, error: BaseException):
        if isinstance(error, DeviceError):
            launch.reusable = not getattr(error, "sticky", False)
        return None

    def release(self, launch: Launch) -> None:
        launch.staging.release(launch.reusable)
