"""The OpenCL device polykern runs on: context, in-order queue, limits, buffer pool, counters.

One :class:`Device` per enumerated device, created on first use (thread-safe, a failed creation is
retried); :func:`get` returns the one ``POLYKERN_OPENCL_DEVICE`` chose when the plugin was imported.
Launches from many threads share the device's one in-order command queue (OpenCL queues are
thread-safe; only ``clSetKernelArg`` on one kernel object is not, see program.py); a launch with host
arrays waits for its own commands only, one with only DeviceArrays waits for nothing. Each
``pk.Stream`` of the device is one more in-order queue (streams.py); :meth:`Device.finish_all` waits
for all of them, as the host does before it touches a DeviceArray.
"""
from __future__ import annotations

import collections
import threading
import weakref
from typing import Dict, FrozenSet, Optional, Tuple

import pyopencl as cl

from polykern.runtime.lazy import LazyMap

from . import platforms
from .clerrors import CL_ERRORS, cl_call

__all__ = ["Device", "Limits", "get", "peek", "probe_result"]


class Limits:
    def __init__(self, dev):
        self.max_work_group_size = int(dev.max_work_group_size)
        sizes = [int(x) for x in dev.max_work_item_sizes] + [1, 1, 1]
        self.max_work_item_sizes: Tuple[int, int, int] = (sizes[0], sizes[1], sizes[2])
        self.max_work_item_dimensions = int(dev.max_work_item_dimensions)
        self.local_mem_size = int(dev.local_mem_size)
        self.max_mem_alloc_size = int(dev.max_mem_alloc_size)
        self.address_bits = int(dev.address_bits)

    def as_dict(self) -> dict:
        return dict(vars(self))


class Device:
    """A context and queue on one OpenCL device, with its buffer pool and creation counters."""

    def __init__(self, entry: "platforms.DeviceEntry"):
        self.entry = entry
        self.index = entry.index
        self.name = entry.name
        self.cl_device = entry.device
        self.description = entry.describe()
        with cl_call(f"creating a context on {self.name}"):
            self.context = cl.Context([self.cl_device])
            self.profiling = bool(self.cl_device.queue_properties & cl.command_queue_properties.PROFILING_ENABLE)
            self.queue = self.new_queue()
            self.limits = Limits(self.cl_device)
            self.extensions: FrozenSet[str] = frozenset(str(self.cl_device.extensions).split())
            try:
                self.opencl_c_version = str(self.cl_device.opencl_c_version)
            except CL_ERRORS:  # OpenCL 1.0 devices have no CL_DEVICE_OPENCL_C_VERSION
                self.opencl_c_version = ""
            # f32 / and sqrt can be correctly rounded (the -cl-fp32-correctly-rounded-divide-sqrt option)
            self.correctly_rounded_divide_sqrt = bool(
                self.cl_device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
        self.stats: collections.Counter = collections.Counter()
        self._lock = threading.Lock()
        self.streams: "weakref.WeakSet" = weakref.WeakSet()  # the streams.OpenCLStream of pk.Streams
        self.queued = False  # a launch returned without waiting since the last finish_all
        from .buffers import BufferPool

        self.pool = BufferPool(self)

    def __repr__(self) -> str:
        return f"<polykern_opencl Device {self.description}>"

    def new_queue(self) -> "cl.CommandQueue":
        """An in-order queue on the context (profiling on where the device has it)."""
        props = cl.command_queue_properties.PROFILING_ENABLE if self.profiling else 0
        return cl.CommandQueue(self.context, self.cl_device, properties=props)

    def finish_all(self) -> None:
        """Wait for the work of every queue of the device (the host is about to touch a DeviceArray or
        hand a buffer out again)."""
        if not self.queued:
            return
        with cl_call(f"waiting for {self.name}"):
            for queue in [self.queue, *(s.queue for s in list(self.streams))]:
                if queue is not None:
                    queue.finish()
        self.queued = False

    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.stats[key] += n

    def has_extension(self, name: str) -> bool:
        return name in self.extensions


_PROBE: Dict[str, "platforms.Probe"] = {}
_DEVICES: "LazyMap[int, Device]" = LazyMap(lambda index: Device(_PROBE["probe"].entries[index]))


def set_probe(result: "platforms.Probe") -> None:
    _PROBE["probe"] = result


def probe_result() -> "platforms.Probe":
    return _PROBE["probe"]


def get(index: Optional[int] = None) -> Device:
    """The chosen device (or enumeration entry ``index``), created on first call."""
    pr = probe_result()
    entry = pr.chosen if index is None else pr.entries[index]
    if entry.problem:
        from polykern.errors import DeviceError

        raise DeviceError(f"OpenCL device {entry.describe()} cannot be used: {entry.problem}")
    return _DEVICES.get(entry.index)


def peek(index: Optional[int] = None) -> Optional[Device]:
    """The device if it was created, else None (never creates it)."""
    pr = _PROBE.get("probe")
    if pr is None:
        return None
    i = pr.chosen.index if index is None else index
    return _DEVICES.get(i) if i in _DEVICES else None
