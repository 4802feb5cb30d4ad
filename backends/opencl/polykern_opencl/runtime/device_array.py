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
A launch with only DeviceArrays returns once enqueued; the host waits for every queue of the device
(``Device.finish_all``) before it reads or writes a DeviceArray, and before its buffer returns to the
device's pool (on ``free()`` or garbage collection).
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from polykern.errors import DeviceError, DeviceUnavailableError
from polykern.runtime.device_array import DeviceArrayBase, Shape, array_factories  # noqa: F401 (Shape: re-exported)

from . import device as _device
from .clerrors import cl_call

__all__ = ["DeviceArray", "to_device", "empty", "zeros"]


class DeviceArray(DeviceArrayBase):
    """A C-contiguous array in a pooled OpenCL buffer (contents undefined until written)."""

    @property
    def buffer(self) -> "cl.Buffer":
        return self._live_handle()

    # ------------------------------------------------------------ device hooks
    @staticmethod
    def _default_device() -> "_device.Device":
        return _device.get()

    def _allocate(self) -> "cl.Buffer":
        return self.device.pool.acquire(self.nbytes)

    @staticmethod
    def _release(dev, buf) -> None:
        try:
            dev.finish_all()  # no queued launch may still use the buffer when it is handed out again
        except DeviceError:  # also at garbage collection: a failed queue never uses the buffer again
            dev.count("release_wait_errors")
        dev.pool.release(buf)

    def _address(self) -> int:
        return int(self.buffer.int_ptr)

    @classmethod
    def _device_at(cls, index):
        """Any enumerated OpenCL device (``polykern_opencl.runtime.get_device(i)``), not only the chosen one."""
        if index is not None and not 0 <= index < len(_device.probe_result().entries):
            raise DeviceUnavailableError(f"no OpenCL device {index} here ({len(_device.probe_result().entries)} "
                                         "enumerated; `polykern backends` lists them)")
        return _device.get(index)

    def _device_key(self):
        return ("opencl", self.device.index)

    def _device_label(self) -> str:
        return self.device.name

    def _upload(self, data: np.ndarray) -> None:
        self.device.finish_all()
        if self.nbytes:
            with cl_call(f"copying {self.nbytes} bytes to {self.device.name}"):
                cl.enqueue_copy(self.device.queue, self.buffer, data, is_blocking=True)

    def _download(self, out: np.ndarray) -> None:
        self.device.finish_all()
        if self.nbytes:
            with cl_call(f"copying {self.nbytes} bytes from {self.device.name}"):
                cl.enqueue_copy(self.device.queue, out, self.buffer, is_blocking=True)


to_device, empty, zeros = array_factories(DeviceArray)
