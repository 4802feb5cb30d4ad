"""``DeviceArray``: data that stays on the OpenCL device across launches.

Passing a DeviceArray to a kernel binds its ``cl.Buffer`` directly (no copy in, no copy back), so a
chain of launches keeps intermediate results on the device; NumPy arrays, in contrast, are copied
in and (for writable parameters) back on every launch. ``numpy()`` copies to the host.

    x = polykern_opencl.runtime.to_device(np.arange(n, dtype=np.float32))   # or mod.to_device(...)
    y = polykern_opencl.runtime.zeros(n, np.float32)
    mod["saxpy"](n, 2.0, x, y, grid=..., block=...)
    y.numpy()

Element storage is the kernels' ABI: bool elements are bytes 0/1 (uchar), f16 elements are IEEE
halves, so a DeviceArray of ``numpy.bool_``/``numpy.float16`` holds exactly NumPy's bytes.
Launches are synchronous: after a launch returns, its writes are visible to the next launch and to
``numpy()``. The buffer returns to the device's pool on ``free()`` or garbage collection.
"""
from __future__ import annotations

import math
import weakref
from typing import Optional, Sequence, Union

import numpy as np
import pyopencl as cl

from polykern.errors import LaunchError
from polykern.ir.types import scalar_from_numpy

from . import device as _device
from .clerrors import cl_call

__all__ = ["DeviceArray", "to_device", "empty", "zeros"]

Shape = Union[int, Sequence[int]]


def _release(dev, buf) -> None:
    dev.pool.release(buf)


class DeviceArray:
    """A C-contiguous array in a pooled OpenCL buffer (contents undefined until written)."""

    def __init__(self, shape: Shape, dtype, *, device: Optional["_device.Device"] = None):
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
        if any(n < 0 for n in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        self.dtype = np.dtype(dtype)
        t = scalar_from_numpy(self.dtype) if self.dtype.isnative else None
        if t is None:
            raise TypeError(f"no polykern scalar type for dtype {self.dtype}")
        self._type = t
        self.device = device or _device.get()
        self._buffer: Optional[cl.Buffer] = self.device.pool.acquire(self.nbytes)
        self._finalizer = weakref.finalize(self, _release, self.device, self._buffer)

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
    def buffer(self) -> "cl.Buffer":
        if self._buffer is None:
            raise LaunchError("this DeviceArray was freed")
        return self._buffer

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        state = "" if self._buffer is not None else ", freed"
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device.name!r}{state})"

    def __polykern_buffer__(self) -> dict:
        return {"ptr": int(self.buffer.int_ptr), "size": self.size, "code": self._type.code,
                "bits": self._type.bits, "device": ("opencl", self.device.index), "readonly": False}

    # ------------------------------------------------------------ copies
    def copy_from_host(self, array) -> "DeviceArray":
        a = np.ascontiguousarray(array)
        if a.dtype != self.dtype or a.size != self.size:
            raise LaunchError(f"copy_from_host: expected {self.size} {self.dtype} elements, got {a.size} {a.dtype}")
        if self.nbytes:
            with cl_call(f"copying {self.nbytes} bytes to {self.device.name}"):
                cl.enqueue_copy(self.device.queue, self.buffer, a.reshape(-1).view(np.uint8), is_blocking=True)
        return self

    def numpy(self) -> np.ndarray:
        """A new host array with the contents (launches are synchronous: nothing to wait for)."""
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            with cl_call(f"copying {self.nbytes} bytes from {self.device.name}"):
                cl.enqueue_copy(self.device.queue, out.reshape(-1).view(np.uint8), self.buffer, is_blocking=True)
        return out

    copy_to_host = numpy

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def fill(self, value) -> "DeviceArray":
        return self.copy_from_host(np.full(self.shape, value, self.dtype))

    def free(self) -> None:
        """Return the buffer to the pool now; the array cannot be used afterwards."""
        if self._buffer is not None:
            self._buffer = None
            self._finalizer()


def to_device(array, *, device: Optional["_device.Device"] = None) -> DeviceArray:
    """A DeviceArray with a copy of ``array`` (any NumPy-convertible, kept in its dtype)."""
    a = np.ascontiguousarray(array)
    return DeviceArray(a.shape, a.dtype, device=device).copy_from_host(a)


def empty(shape: Shape, dtype, *, device: Optional["_device.Device"] = None) -> DeviceArray:
    return DeviceArray(shape, dtype, device=device)


def zeros(shape: Shape, dtype, *, device: Optional["_device.Device"] = None) -> DeviceArray:
    return DeviceArray(shape, dtype, device=device).fill(0)
