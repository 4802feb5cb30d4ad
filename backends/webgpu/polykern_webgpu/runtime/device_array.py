"""Device-resident arrays for the WebGPU runtime.

``DeviceArray`` owns a storage buffer on the process-wide device. Passing one to a
kernel binds the buffer directly (no copy); NumPy arrays are instead copied in and,
for writable parameters, back out on every launch. The launch check
(``polykern.runtime.launch.check_args``) sees these through ``__polykern_buffer__``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from polykern.runtime.device_array import DeviceArrayBase, array_factories
from polykern.errors import LaunchError

from .wgpu_context import STORAGE_USAGE, Context, context

__all__ = ["DeviceArray", "to_device", "empty", "zeros"]


def _padded(nbytes: int) -> int:
    return max(4, nbytes + (-nbytes % 4))


class DeviceArray(DeviceArrayBase):
    """A C-contiguous array in a WebGPU storage buffer."""

    _zero_initialized = True  # WebGPU zero-initializes every new buffer; there is no cheaper uninitialized one

    @property
    def ctx(self) -> Context:
        return self.device

    @property
    def buffer(self):
        """The storage buffer (None once released)."""
        return self._handle

    # ------------------------------------------------------------ device hooks
    @staticmethod
    def _default_device() -> Context:
        return context()

    def _allocate(self):
        limit = self.ctx.limits.get("max-storage-buffer-binding-size", 1 << 27)
        if self.nbytes > limit:
            raise LaunchError(f"a {self.nbytes}-byte array exceeds this WebGPU device's storage buffer "
                              f"binding limit ({limit} bytes)")
        return self.ctx.device.create_buffer(size=_padded(self.nbytes), usage=STORAGE_USAGE)

    @staticmethod
    def _release(ctx, buf) -> None:
        pass  # garbage collection: wgpu releases a dropped buffer itself; free() destroys it

    def _address(self) -> int:
        return id(self._handle)

    def _device_key(self):
        return ("webgpu", 0)

    def _device_label(self) -> str:
        return self.ctx.name

    def _upload(self, data: np.ndarray) -> None:
        pad = -data.size % 4
        if pad:
            data = np.concatenate([data, np.zeros(pad, np.uint8)])
        if data.size:
            with self.ctx.lock:
                self.ctx.device.queue.write_buffer(self._live_handle(), 0, data)

    def _download(self, out: np.ndarray) -> None:
        if self.nbytes:
            with self.ctx.lock:
                raw = self.ctx.device.queue.read_buffer(self._live_handle(), 0, _padded(self.nbytes))
            out[:] = np.frombuffer(raw, np.uint8, self.nbytes)

    # ------------------------------------------------------------ copies
    def copy_to_host(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        if out is None:
            return self.numpy()
        if out.dtype != self.dtype or out.size != self.size or not out.flags.c_contiguous:
            raise LaunchError(f"copy_to_host: out must be a C-contiguous {self.dtype} array of {self.size} elements")
        self._download(out.reshape(-1).view(np.uint8))
        return out

    def free(self) -> None:
        """Free the device memory now (the array is unusable afterwards)."""
        buf = self._handle
        super().free()
        if buf is not None:
            buf.destroy()

    release = free



to_device, empty, zeros = array_factories(DeviceArray)
