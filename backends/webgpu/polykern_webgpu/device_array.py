"""Device-resident arrays for the WebGPU runtime.

``DeviceArray`` owns a storage buffer on the process-wide device. Passing one to a
kernel binds the buffer directly (no copy); NumPy arrays are instead copied in and,
for writable parameters, back out on every launch. The launch check
(``polykern.launch.check_args``) sees these through ``__polykern_buffer__``.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import numpy as np

from polykern.errors import LaunchError
from polykern.ir.types import scalar_from_numpy

from .wgpu_context import STORAGE_USAGE, Context, context

__all__ = ["DeviceArray", "to_device", "empty", "zeros"]


def _padded(nbytes: int) -> int:
    return max(4, nbytes + (-nbytes % 4))


class DeviceArray:
    """A C-contiguous array in a WebGPU storage buffer."""

    def __init__(self, shape: Union[int, Sequence[int]], dtype, ctx: Optional[Context] = None):
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
        if any(n < 0 for n in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        self.dtype = np.dtype(dtype)
        t = scalar_from_numpy(self.dtype)
        if t is None:
            raise TypeError(f"no polykern scalar type for dtype {self.dtype}")
        self._stype = t
        self.ctx = ctx or context()
        limit = self.ctx.limits.get("max-storage-buffer-binding-size", 1 << 27)
        if self.nbytes > limit:
            raise LaunchError(f"a {self.nbytes}-byte array exceeds this WebGPU device's storage buffer "
                              f"binding limit ({limit} bytes)")
        self.buffer = self.ctx.device.create_buffer(size=_padded(self.nbytes), usage=STORAGE_USAGE)

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

    def __len__(self) -> int:
        return self.shape[0] if self.shape else 1

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.ctx.name!r})"

    def __polykern_buffer__(self) -> dict:
        return {"ptr": id(self.buffer), "size": self.size, "code": self._stype.code, "bits": self._stype.bits,
                "device": ("webgpu", 0), "readonly": False}

    # ------------------------------------------------------------ copies

    def copy_from_host(self, array) -> "DeviceArray":
        a = np.ascontiguousarray(array)
        if a.dtype != self.dtype or a.size != self.size:
            raise LaunchError(f"copy_from_host: expected {self.size} {self.dtype} elements, got {a.size} {a.dtype}")
        data = a.reshape(-1).view(np.uint8)
        pad = -data.size % 4
        if pad:
            data = np.concatenate([data, np.zeros(pad, np.uint8)])
        if data.size:
            with self.ctx.lock:
                self.ctx.device.queue.write_buffer(self.buffer, 0, data)
        return self

    def copy_to_host(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        if out is None:
            out = np.empty(self.shape, self.dtype)
        elif out.dtype != self.dtype or out.size != self.size or not out.flags.c_contiguous:
            raise LaunchError(f"copy_to_host: out must be a C-contiguous {self.dtype} array of {self.size} elements")
        if self.nbytes:
            with self.ctx.lock:
                raw = self.ctx.device.queue.read_buffer(self.buffer, 0, _padded(self.nbytes))
            out.reshape(-1).view(np.uint8)[:] = np.frombuffer(raw, np.uint8, self.nbytes)
        return out

    def numpy(self) -> np.ndarray:
        return self.copy_to_host()

    def release(self) -> None:
        """Free the device memory now (the array is unusable afterwards)."""
        buf, self.buffer = self.buffer, None
        if buf is not None:
            buf.destroy()


def to_device(array) -> DeviceArray:
    a = np.ascontiguousarray(array)
    return DeviceArray(a.shape, a.dtype).copy_from_host(a)


def zeros(shape, dtype) -> DeviceArray:
    return DeviceArray(shape, dtype)  # WebGPU zero-initializes every new buffer


empty = zeros  # there is no cheaper uninitialized allocation in WebGPU
