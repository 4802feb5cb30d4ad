"""``DeviceArray``: data that stays on the Vulkan device across launches.

Passing a DeviceArray to a kernel binds its buffer directly (no copy in, no copy back), so a
chain of launches can keep intermediate results on the device; NumPy arrays, in contrast, are
copied in and (for writable parameters) back on every launch. ``numpy()`` copies to the host.

    x = polykern_vulkan.to_device(np.arange(n, dtype=np.float32))   # or mod.device_array(...)
    y = polykern_vulkan.zeros(n, np.float32)
    mod["saxpy"](n, 2.0, x, y, grid=..., block=...)
    y.numpy()

A launch whose arguments are all DeviceArrays (and scalars) returns once it is submitted; the
next launch on its stream runs after it, and ``numpy()``, ``copy_from_host`` and ``free`` first wait
for the work submitted to every queue of the device (streams.py, queues.py). A DeviceArray's buffer returns to the
pool when the array is freed (``free()``) or garbage collected, once no submitted work can use it.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from polykern.runtime.device_array import DeviceArrayBase, Shape, array_factories  # noqa: F401 (Shape: re-exported)
from polykern.errors import DeviceError, DeviceUnavailableError, LaunchError

from . import device as _device
from .buffers import Buffer
from .device import Device
from .instance import instance

__all__ = ["DeviceArray", "to_device", "empty", "zeros", "upload", "download"]


def upload(dev: Device, buf: Buffer, data: np.ndarray) -> None:
    """Copy host bytes (a flat uint8 array) into ``buf`` (after the submitted work) and wait."""
    n = data.size
    if n == 0:
        return
    if buf.mapped is not None:
        dev.wait_all("the work submitted before a copy to the device")
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


def download(dev: Device, buf: Buffer, nbytes: int, out: Optional[np.ndarray] = None) -> np.ndarray:
    """A new uint8 host array with the first ``nbytes`` of ``buf`` (or ``out``, a flat uint8 array of
    ``nbytes``, filled with them)."""
    if out is None:
        out = np.empty(nbytes, np.uint8)
    if nbytes == 0:
        return out
    if buf.mapped is not None:
        dev.wait_all("the work submitted before a copy to the host")
        out[:] = buf.mapped[:nbytes]
        return out
    staging = dev.pool.acquire(nbytes, "staging")
    try:
        dev.execute(lambda ctx: ctx.copy(buf.handle, staging.handle, max(nbytes, 1)), what="device-to-host copy")
    except Exception as e:
        if not getattr(e, "submitted", False):
            dev.pool.release(staging)
        raise
    out[:] = staging.mapped[:nbytes]
    dev.pool.release(staging)
    return out


class DeviceArray(DeviceArrayBase):
    """A C-contiguous array in a pooled Vulkan storage buffer (contents undefined until written)."""

    @property
    def buffer(self) -> Buffer:
        return self._live_handle()

    # ------------------------------------------------------------ device hooks
    @staticmethod
    def _default_device() -> Device:
        return _device.get()

    def _allocate(self) -> Buffer:
        limit = self.device.limits.max_storage_range
        if self.nbytes > limit:
            raise LaunchError(f"a {self.nbytes}-byte array exceeds this Vulkan device's storage buffer range "
                              f"({limit} bytes, maxStorageBufferRange)")
        return self.device.pool.acquire(self.nbytes)

    @staticmethod
    def _release(dev: Device, buf: Buffer) -> None:
        try:
            dev.wait_all("the work that may use a buffer being freed")  # then it may be handed out again
        except DeviceError:  # also at garbage collection: a lost device never uses the buffer again
            dev.count("release_wait_errors")
        dev.pool.release(buf)

    def _address(self) -> int:
        return self.buffer.address

    @staticmethod
    def _index_of(device) -> int:
        return device.index

    @classmethod
    def _device_at(cls, index):
        """The process' device (one per process, ``POLYKERN_VULKAN_DEVICE``); another index is refused by name."""
        dev = _device.get()
        if index is None or index == dev.index:
            return dev
        physical = instance().physical
        if not any(p.index == index for p in physical):
            raise DeviceUnavailableError(f"device 'vulkan:{index}': no such Vulkan device here ({len(physical)} "
                                         f"enumerated: vulkan:0..vulkan:{len(physical) - 1}; `polykern backends` "
                                         "lists them)")
        raise DeviceUnavailableError(f"device 'vulkan:{index}': the Vulkan runtime uses one device per process, "
                                     f"vulkan:{dev.index}; POLYKERN_VULKAN_DEVICE={index} selects vulkan:{index}")

    def _device_key(self):
        return ("vulkan", self.device.index)

    def _device_label(self) -> str:
        return self.device.name

    def _upload(self, data: np.ndarray) -> None:
        upload(self.device, self.buffer, data)

    def _download(self, out: np.ndarray) -> None:
        download(self.device, self.buffer, self.nbytes, out)


to_device, empty, zeros = array_factories(DeviceArray)
