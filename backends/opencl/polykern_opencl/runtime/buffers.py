"""Pooled ``cl.Buffer`` objects, by size class.

Every device buffer polykern creates (the device copies of NumPy arguments and DeviceArray
storage) comes from the device's :class:`BufferPool`. Capacities are rounded up to a size class
(256 B minimum, then four classes per power of two: at most 25% slack) and a released buffer is
kept for the next request of the same class, so repeated launches with the same shapes allocate
nothing. Free buffers are kept up to ``POLYKERN_OPENCL_POOL_MB`` MiB (default 256); an
allocation that fails for lack of memory empties the pool and tries once more.
"""
from __future__ import annotations

import os
import threading
from typing import Dict, List

import pyopencl as cl

from polykern.errors import LaunchError

from .clerrors import CL_ERRORS, device_error

__all__ = ["BufferPool", "size_class", "POOL_ENV", "MIN_CLASS"]

POOL_ENV = "POLYKERN_OPENCL_POOL_MB"
MIN_CLASS = 256
_OUT_OF_MEMORY = {-4, -5, -6}  # CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES, CL_OUT_OF_HOST_MEMORY


def size_class(nbytes: int) -> int:
    """The capacity a request of ``nbytes`` gets: >= nbytes, 256 B minimum, <= 25% slack."""
    if nbytes <= MIN_CLASS:
        return MIN_CLASS
    step = 1 << max((nbytes - 1).bit_length() - 3, 0)
    return -(-nbytes // step) * step


def _pool_limit() -> int:
    raw = os.environ.get(POOL_ENV, "256")
    try:
        return max(0, int(float(raw) * (1 << 20)))
    except ValueError:
        return 256 << 20


class BufferPool:
    def __init__(self, dev):
        self.dev = dev
        self.limit = _pool_limit()
        self._lock = threading.Lock()
        self._free: Dict[int, List["cl.Buffer"]] = {}
        self.free_bytes = 0

    def acquire(self, nbytes: int) -> "cl.Buffer":
        """A read-write buffer of at least ``nbytes`` (and at least 256) bytes."""
        size = size_class(nbytes)
        with self._lock:
            free = self._free.get(size)
            buf = free.pop() if free else None
            if buf is not None:
                self.free_bytes -= size
        if buf is not None:
            self.dev.count("buffers_reused")
            return buf
        limit = self.dev.limits.max_mem_alloc_size
        if size > limit and nbytes <= limit:
            size = nbytes  # the class would exceed the device's largest allocation: allocate exactly
        if size > limit:
            raise LaunchError(f"a {nbytes}-byte buffer exceeds {self.dev.name}'s largest allocation "
                              f"({limit} bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
        try:
            buf = self._create(size)
        except CL_ERRORS as e:
            if getattr(e, "code", None) not in _OUT_OF_MEMORY:
                raise device_error(f"allocating a {size}-byte buffer on {self.dev.name}", e) from e
            self.trim()  # hand the cached buffers back to the driver and try once more
            try:
                buf = self._create(size)
            except CL_ERRORS as e2:
                raise device_error(f"allocating a {size}-byte buffer on {self.dev.name}", e2) from e2
        return buf

    def _create(self, size: int) -> "cl.Buffer":
        buf = cl.Buffer(self.dev.context, cl.mem_flags.READ_WRITE, size)
        self.dev.count("buffers_created")
        self.dev.count("bytes_allocated", size)
        return buf

    def release(self, buf: "cl.Buffer") -> None:
        size = int(buf.size)
        with self._lock:
            if self.free_bytes + size <= self.limit and size == size_class(size):
                self._free.setdefault(size, []).append(buf)
                self.free_bytes += size
                return
        self._destroy(buf)

    def _destroy(self, buf: "cl.Buffer") -> None:
        self.dev.count("buffers_destroyed")
        try:
            buf.release()
        except CL_ERRORS:  # already released / device lost: nothing left to free
            pass

    def trim(self) -> None:
        """Release every cached free buffer."""
        with self._lock:
            bufs = [b for lst in self._free.values() for b in lst]
            self._free.clear()
            self.free_bytes = 0
        for b in bufs:
            self._destroy(b)
