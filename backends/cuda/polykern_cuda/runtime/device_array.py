"""``DeviceArray``: data that stays on the CUDA device across launches.

    x = polykern_cuda.runtime.to_device(np.arange(n, dtype=np.float32))
    y = polykern_cuda.runtime.zeros(n, np.float32)
    mod["saxpy"](n, 2.0, x, y, grid=..., block=...)   # no copies
    y.numpy()

A DeviceArray is passed to kernels as its device pointer (no copy in or back). Launches that take
it are asynchronous on the legacy default stream; ``numpy()``/``copy_from_host`` are synchronous
copies ordered after them (so they also report an earlier kernel's fault). It also exposes
``__cuda_array_interface__`` (v3, ``stream`` 1 = the legacy default stream: a consumer on another
stream synchronizes with polykern's pending launches first), so CuPy, PyTorch and Numba can use it
without a copy (``cupy.asarray(x)``, ``torch.as_tensor(x,
device="cuda")``). An array lives on one device (``"cuda:1"``: ``pk.to_device(x, device="cuda:1")``);
``x.to("cuda:0")`` copies it to another device without the host (``cuMemcpyPeer``, ordered after the work
queued on both devices; ``cuMemcpyPeerAsync`` on the current ``pk.Stream`` when that stream is on one of
the two devices). Its block returns to the device pool when the array is freed (``free()``) or
garbage collected, from any thread.
"""
from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import pycuda.driver as drv

from polykern.runtime import devices
from polykern.runtime.device_array import DeviceArrayBase, Shape, array_factories  # noqa: F401 (Shape: re-exported)
from polykern.errors import StreamError
from polykern.streams import current_runtime_stream

from . import device as _device
from . import libcuda
from .cuerrors import cuda_call, result_error
from .memory import Block

__all__ = ["DeviceArray", "to_device", "empty", "zeros"]


class DeviceArray(DeviceArrayBase):
    """A C-contiguous array in device memory of the polykern CUDA device (contents undefined until written)."""

    @property
    def ptr(self) -> int:
        """The device address (0 for an empty array)."""
        block = self._live_handle()
        return block.ptr if block is not None else 0

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "strides": None,
                "version": 3, "stream": 1}

    # ------------------------------------------------------------ device hooks
    @staticmethod
    def _default_device():
        return _device.get()

    def _allocate(self) -> Optional[Block]:
        with self.device.scope():
            return self.device.pool.acquire(self.nbytes)

    @staticmethod
    def _release(dev, block: Optional[Block]) -> None:
        if block is None:
            return
        try:
            with dev.scope():
                dev.pool.release(block)
        except Exception as e:  # a finalizer cannot raise; say what leaked and why
            dev.count("release_errors")
            warnings.warn(f"polykern CUDA: a DeviceArray's device memory could not be released: {e}",
                          RuntimeWarning, stacklevel=1)

    def _address(self) -> int:
        return self.ptr

    @staticmethod
    def _index_of(device) -> int:
        return device.ordinal

    @classmethod
    def _device_at(cls, index):
        return _device.get() if index is None else _device.at(index)

    def to(self, device: str):
        """A copy on ``device`` (``"cuda:0"``, ``"cpu"``, ...): ``pk.to_device(self, device=device)``."""
        return devices.to_device(self, device=device)

    def _device_copy(self, device) -> Optional["DeviceArray"]:
        """A copy on CUDA device ``device`` without the host (None: no ctypes driver library; copy through it)."""
        src = self.device
        what = f"copying {self.nbytes} bytes from cuda:{src.ordinal} to cuda:{device.ordinal}"
        impl = current_runtime_stream("cuda", what)
        if impl is not None and impl.device is not src and impl.device is not device:
            raise StreamError(f"{what}: the current stream is on cuda:{impl.device.ordinal}; make a stream of "
                              "either device current (or none)")
        out = DeviceArray(self.shape, self.dtype, device=device)
        if self.nbytes:
            ptr = self.ptr
            scope = (impl.device if impl is not None else device).scope
            with scope():
                rc = libcuda.memcpy_peer(out.ptr, device.context_handle, ptr, src.context_handle, self.nbytes,
                                         None if impl is None else impl.handle)
            if rc == -1:
                out.free()
                return None
            if rc != 0:
                raise result_error(what, rc)
            device.count("peer_copies")
        return out

    def _device_key(self):
        return ("cuda", self.device.ordinal)

    def _device_label(self) -> str:
        return f"cuda:{self.device.ordinal}"

    def _upload(self, data: np.ndarray) -> None:
        if self.nbytes:
            ptr = self.ptr
            with self.device.scope(), cuda_call("copying to the device"):
                drv.memcpy_htod(ptr, data)

    def _download(self, out: np.ndarray) -> None:
        if self.nbytes:
            ptr = self.ptr
            with self.device.scope(), cuda_call("copying to the host"):
                drv.memcpy_dtoh(out, ptr)


to_device, empty, zeros = array_factories(DeviceArray)
