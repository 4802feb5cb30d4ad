"""Pooled ``cl.Buffer`` objects, by size class.

Every device buffer polykern creates (the device copies of NumPy arguments and DeviceArray
storage) comes from the device's :class:`BufferPool`. Capacities are rounded up to a size class
(256 B minimum, then four classes per power of two: at most 25% slack) and a released buffer is
kept for the next request of the same class, so repeated launches with the same shapes allocate
nothing. Free buffers are kept up to ``POLYKERN_OPENCL_POOL_MB`` MiB (default 256); an
allocation that fails for lack of memory empties the pool and tries once more.
"""
from __future__ import annotations

import pyopencl as cl

from polykern.runtime.buffer_pool import MIN_CLASS, SizeClassPool, size_class
from polykern.errors import LaunchError

from .clerrors import CL_ERRORS, device_error

__all__ = ["BufferPool", "size_class", "POOL_ENV", "MIN_CLASS"]

POOL_ENV = "POLYKERN_OPENCL_POOL_MB"
_OUT_OF_MEMORY = {-4, -5, -6}  # CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES, CL_OUT_OF_HOST_MEMORY


class BufferPool(SizeClassPool):
    def __init__(self, dev):
        super().__init__(dev, POOL_ENV)

    def acquire(self, nbytes: int) -> "cl.Buffer":
        """A read-write buffer of at least ``nbytes`` (and at least 256) bytes."""
        size = size_class(nbytes)
        buf = self._take(size, size)
        if buf is not None:
            return buf
        limit = self.dev.limits.max_mem_alloc_size
        if size > limit and nbytes <= limit:
            size = nbytes  # the class would exceed the device's largest allocation: allocate exactly
        if size > limit:
            raise LaunchError(f"a {nbytes}-byte buffer exceeds {self.dev.name}'s largest allocation "
                              f"({limit} bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
        try:
            return self._allocate_or_trim(size)
        except CL_ERRORS as e:
            raise device_error(f"allocating a {size}-byte buffer on {self.dev.name}", e) from e

    def _out_of_memory(self, exc: BaseException) -> bool:
        return isinstance(exc, CL_ERRORS) and getattr(exc, "code", None) in _OUT_OF_MEMORY

    def _create(self, size: int) -> "cl.Buffer":
        return cl.Buffer(self.dev.context, cl.mem_flags.READ_WRITE, size)

    def _keep(self, buf: "cl.Buffer", size: int) -> bool:
        return size == size_class(size)

    def _destroy(self, buf: "cl.Buffer") -> None:
        try:
            buf.release()
        except CL_ERRORS:  # already released / device lost: nothing left to free
            pass
