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
device="cuda")``). Its block returns to the device pool when the array is freed (``free()``) or
garbage collected, from any thread.
"""
from __future__ import annotations

import math
import warnings
import weakref
from typing import Optional, Sequence, Union

import numpy as np
import pycuda.driver as drv

from polykern.errors import LaunchError
from polykern.ir.types import scalar_from_numpy

from . import device as _device
from .cuerrors import cuda_call
from .memory import Block

__all__ = ["DeviceArray", "to_device", "empty", "zeros"]

Shape = Union[int, Sequence[int]]


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


class DeviceArray:
    """A C-contiguous array in device memory of the polykern CUDA device (contents undefined until written)."""

    def __init__(self, shape: Shape, dtype, *, device=None):
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
        if any(n < 0 for n in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        self.dtype = np.dtype(dtype)
        t = scalar_from_numpy(self.dtype) if self.dtype.isnative else None
        if t is None:
            raise TypeError(f"no polykern scalar type for dtype {self.dtype}")
        self._type = t
        self.device = device or _device.get()
        with self.device.scope():
            self._block: Optional[Block] = self.device.pool.acquire(self.nbytes)
        self._freed = False
        self._finalizer = weakref.finalize(self, _release, self.device, self._block)

    # ------------------------------------------------------------ properties
    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def ptr(self) -> int:
        """The device address (0 for an empty array)."""
        if self._freed:
            raise LaunchError("this DeviceArray was freed")
        return self._block.ptr if self._block is not None else 0

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        state = ", freed" if self._freed else ""
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device='cuda:{self.device.ordinal}'{state})"

    def __polykern_buffer__(self) -> dict:
        return {"ptr": self.ptr, "size": self.size, "code": self._type.code, "bits": self._type.bits,
                "device": ("cuda", self.device.ordinal), "readonly": False}

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "strides": None,
                "version": 3, "stream": 1}

    # ------------------------------------------------------------ copies
    def copy_from_host(self, array) -> "DeviceArray":
        a = np.ascontiguousarray(array)
        if a.dtype != self.dtype or a.size != self.size:
            raise LaunchError(f"copy_from_host: expected {self.size} {self.dtype} elements, got {a.size} {a.dtype}")
        if self.nbytes:
            ptr = self.ptr
            with self.device.scope(), cuda_call("copying to the device"):
                drv.memcpy_htod(ptr, a.reshape(-1).view(np.uint8))
        return self

    def numpy(self) -> np.ndarray:
        """A new host array with the contents."""
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            ptr = self.ptr
            with self.device.scope(), cuda_call("copying to the host"):
                drv.memcpy_dtoh(out.reshape(-1).view(np.uint8), ptr)
        return out

    copy_to_host = numpy

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def fill(self, value) -> "DeviceArray":
        return self.copy_from_host(np.full(self.shape, value, self.dtype))

    def free(self) -> None:
        """Return the memory to the pool now; the array cannot be used afterwards."""
        if not self._freed:
            self._freed = True
            self._finalizer()


def to_device(array, *, device=None) -> DeviceArray:
    a = np.ascontiguousarray(array)
    return DeviceArray(a.shape, a.dtype, device=device).copy_from_host(a)


def empty(shape: Shape, dtype, *, device=None) -> DeviceArray:
    return DeviceArray(shape, dtype, device=device)


def zeros(shape: Shape, dtype, *, device=None) -> DeviceArray:
    return DeviceArray(shape, dtype, device=device).fill(0)
