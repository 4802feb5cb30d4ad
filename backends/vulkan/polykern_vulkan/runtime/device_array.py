"""``DeviceArray``: data that stays on the Vulkan device across launches.

Passing a DeviceArray to a kernel binds its buffer directly (no copy in, no copy back), so a
chain of launches can keep intermediate results on the device; NumPy arrays, in contrast, are
copied in and (for writable parameters) back on every launch. ``numpy()`` copies to the host.

    x = polykern_vulkan.to_device(np.arange(n, dtype=np.float32))   # or mod.device_array(...)
    y = polykern_vulkan.zeros(n, np.float32)
    mod["saxpy"](n, 2.0, x, y, grid=..., block=...)
    y.numpy()

Launches are synchronous, so after a launch returns its writes are visible to the next launch
and to ``numpy()``. A DeviceArray's buffer returns to the pool when the array is freed
(``free()``) or garbage collected.
"""
from __future__ import annotations

import math
import weakref
from typing import Optional, Sequence, Union

import numpy as np

from polykern.errors import LaunchError
from polykern.ir.types import scalar_from_numpy

from . import device as _device
from .buffers import Buffer
from .device import Device

__all__ = ["DeviceArray", "to_device", "empty", "zeros", "upload", "download"]

Shape = Union[int, Sequence[int]]


def upload(dev: Device, buf: Buffer, data: np.ndarray) -> None:
    """Copy host bytes (a flat uint8 array) into ``buf`` and wait."""
    n = data.size
    if n == 0:
        return
    if buf.mapped is not None:
        buf.mapped[:n] = data
        return
    staging = dev.pool.acquire(n, "staging")
    staging.mapped[:n] = data
    try:
        dev.execute(lambda ctx: ctx.copy(staging.handle, buf.handle, max(n, 1)), what="host-to-device copy")
    except Exception as e:
        if not getattr(e, "submitted", False):
            dev.pool.release(staging)
        raise
    dev.pool.release(staging)


def download(dev: Device, buf: Buffer, nbytes: int) -> np.ndarray:
    """A new uint8 host array with the first ``nbytes`` of ``buf``."""
    if buf.mapped is not None or nbytes == 0:
        return buf.mapped[:nbytes].copy() if nbytes else np.zeros(0, np.uint8)
    staging = dev.pool.acquire(nbytes, "staging")
    try:
        dev.execute(lambda ctx: ctx.copy(buf.handle, staging.handle, max(nbytes, 1)), what="device-to-host copy")
    except Exception as e:
        if not getattr(e, "submitted", False):
            dev.pool.release(staging)
        raise
    out = staging.mapped[:nbytes].copy()
    dev.pool.release(staging)
    return out


def _release(dev: Device, buf: Buffer) -> None:
    dev.pool.release(buf)


class DeviceArray:
    """A C-contiguous array in a pooled Vulkan storage buffer (contents undefined until written)."""

    def __init__(self, shape: Shape, dtype, *, device: Optional[Device] = None):
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
        if any(n < 0 for n in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        self.dtype = np.dtype(dtype)
        t = scalar_from_numpy(self.dtype) if self.dtype.isnative else None
        if t is None:
            raise TypeError(f"no polykern scalar type for dtype {self.dtype}")
        self._type = t
        self.device = device or _device.get()
        limit = self.device.limits.max_storage_range
        if self.nbytes > limit:
            raise LaunchError(f"a {self.nbytes}-byte array exceeds this Vulkan device's storage buffer range "
                              f"({limit} bytes, maxStorageBufferRange)")
        self._buffer: Optional[Buffer] = self.device.pool.acquire(self.nbytes)
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
    def buffer(self) -> Buffer:
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
        return {"ptr": self.buffer.address, "size": self.size, "code": self._type.code, "bits": self._type.bits,
                "device": ("vulkan", self.device.index), "readonly": False}

    # ------------------------------------------------------------ copies
    def copy_from_host(self, array) -> "DeviceArray":
        a = np.ascontiguousarray(array)
        if a.dtype != self.dtype or a.size != self.size:
            raise LaunchError(f"copy_from_host: expected {self.size} {self.dtype} elements, got {a.size} {a.dtype}")
        upload(self.device, self.buffer, a.reshape(-1).view(np.uint8))
        return self

    def numpy(self) -> np.ndarray:
        """A new host array with the contents (waits for nothing: launches are synchronous)."""
        return download(self.device, self.buffer, self.nbytes).view(self.dtype).reshape(self.shape)

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


def to_device(array, *, device: Optional[Device] = None) -> DeviceArray:
    a = np.ascontiguousarray(array)
    return DeviceArray(a.shape, a.dtype, device=device).copy_from_host(a)


def empty(shape: Shape, dtype, *, device: Optional[Device] = None) -> DeviceArray:
    return DeviceArray(shape, dtype, device=device)


def zeros(shape: Shape, dtype, *, device: Optional[Device] = None) -> DeviceArray:
    return DeviceArray(shape, dtype, device=device).fill(0)
