"""Buffer arguments of one launch -> device pointers.

- NumPy (and other host) arrays: copied into a pooled device block before the launch; copied back
  after it only for parameters the kernel may write (not ``Buffer[T, "readonly"]``). The same
  host memory passed twice gets one device block, so the kernel sees one array.
- :class:`DeviceArray` of this runtime: its pointer, no copy.
- Foreign CUDA memory (``__cuda_array_interface__``: CuPy, PyTorch, Numba, pycuda GPUArray; or
  ``__dlpack__`` with a CUDA device): its pointer, no copy, after checking with the driver that it
  is memory this device can use in polykern's (primary) context. A ``__cuda_array_interface__``
  ``stream`` other than the legacy default stream is collected in ``Staging.streams``: the launch
  waits for it, and it for the launch, through an event (``device.StreamJoin``; CAI v3).
- Anything else (e.g. another runtime's device array) is a LaunchError.
Must run inside ``device.scope()``.
"""
from __future__ import annotations

from typing import Any, List, Optional, Set

import numpy as np
import pycuda.driver as drv

from polykern.errors import LaunchError
from polykern.runtime.launch import BufferArg

from . import libcuda
from .cuerrors import cuda_call
from .device_array import DeviceArray
from .memory import Block

__all__ = ["Staging", "check_foreign_pointer", "device_memory_of"]

_CUDA_DEVICES = ("cuda", "cuda_managed", "cuda_host")
_LEGACY_STREAM = 1


def _where(kernel: str, a: BufferArg) -> str:
    return f"kernel '{kernel}', argument '{a.name}' (#{a.index + 1}, {a.info.type_str})"


def check_foreign_pointer(dev, kernel: str, a: BufferArg) -> None:
    """LaunchError unless ``a`` (device memory not from this runtime) is usable on ``dev`` here."""
    where = _where(kernel, a)
    name, index = a.device
    if name not in _CUDA_DEVICES:
        raise LaunchError(f"{where}: the array lives on a {name!r} device; the CUDA runtime takes NumPy arrays, "
                          "CUDA device arrays (__cuda_array_interface__, DLPack) or polykern_cuda DeviceArrays. "
                          "Copy it to the host first")
    if name == "cuda" and index is not None and index != dev.ordinal:
        raise LaunchError(f"{where}: the array is on cuda:{index} but the launch runs on cuda:{dev.ordinal} "
                          f"(copy it there: pk.to_device(x, device='cuda:{dev.ordinal}'))")
    if a.size == 0:
        return
    try:
        info = libcuda.pointer_info(a.ptr)
    except OSError:  # cannot ask the driver: trust the producer's description
        return
    if info is None:
        raise LaunchError(f"{where}: 0x{a.ptr:x} is not memory the CUDA driver knows (a host pointer "
                          "behind a __cuda_array_interface__?)")
    if info.managed or info.memory_type == libcuda.MEMORY_HOST:
        return  # managed and page-locked host memory are usable from any context
    if info.ordinal is not None and info.ordinal != dev.ordinal:
        raise LaunchError(f"{where}: the array is on cuda:{info.ordinal} but the launch runs on cuda:{dev.ordinal} "
                          f"(copy it there: pk.to_device(x, device='cuda:{dev.ordinal}'))")
    if info.context is not None and info.context != dev.context_handle:
        raise LaunchError(f"{where}: the array was allocated in another CUDA context than the device's primary "
                          "context that polykern (and CuPy, PyTorch, the CUDA runtime API) uses; pycuda users: "
                          "import pycuda.autoprimaryctx instead of pycuda.autoinit")


def device_memory_of(dev, ptr: int) -> bool:
    """Whether ``ptr`` is device memory of ``dev`` that no context owns (VMM memory, ``cuMemCreate``: XLA's
    buffers); :func:`check_foreign_pointer` accepts such memory, and so does the launch fast path."""
    info = libcuda.pointer_info(ptr)
    return (info is not None and info.context is None and not info.managed
            and info.memory_type == libcuda.MEMORY_DEVICE and info.ordinal == dev.ordinal)


def _cai_stream(obj: Any) -> Optional[int]:
    try:
        stream = obj.__cuda_array_interface__.get("stream")
    except Exception:
        return None
    if stream is None or isinstance(stream, bool) or not isinstance(stream, int):
        return None
    return stream


class Staging:
    """The device side of one launch's buffer arguments (the staged launch, polykern/runtime/staged_launch.py,
    asks for one copy per distinct host memory); ``release()`` returns the temporary blocks."""

    def __init__(self, dev, kernel: str):
        self.dev = dev
        self.kernel = kernel
        self.streams: Set[int] = set()
        self._blocks: List[Optional[Block]] = []

    def device_pointer(self, a: BufferArg) -> int:
        """The pointer of device-memory argument ``a`` (a DeviceArray of this device, or foreign memory)."""
        if isinstance(a.obj, DeviceArray):
            if a.obj.device is not self.dev:
                raise LaunchError(f"{_where(self.kernel, a)}: the DeviceArray is on cuda:{a.obj.device.ordinal} but "
                                  f"the launch runs on cuda:{self.dev.ordinal}")
            return a.obj.ptr
        check_foreign_pointer(self.dev, self.kernel, a)
        stream = _cai_stream(a.obj) if a.keepalive is None else None
        if stream is not None and stream not in (0, _LEGACY_STREAM):  # 0 is not valid CAI; treat as legacy
            self.streams.add(stream)
        return a.ptr

    def host_copy(self, a: BufferArg) -> int:
        """A pooled device block holding host argument ``a``: its pointer (0 for no bytes)."""
        nbytes = a.nbytes
        block = self.dev.pool.acquire(nbytes)
        self._blocks.append(block)
        if nbytes:
            with cuda_call(f"copying argument '{a.name}' to the device"):
                drv.memcpy_htod(block.ptr, a.array.view(np.uint8))
        return block.ptr if block is not None else 0

    @staticmethod
    def copy_back(host: np.ndarray, ptr: int, nbytes: int) -> None:
        """Copy a written host argument's ``nbytes`` back from device pointer ``ptr``."""
        if nbytes:
            with cuda_call("copying a result to the host"):
                drv.memcpy_dtoh(host.view(np.uint8), ptr)

    def release(self, reusable: bool = True) -> None:
        for block in self._blocks:
            if reusable:
                self.dev.pool.release(block)
            else:
                self.dev.pool.discard(block)
        self._blocks.clear()
