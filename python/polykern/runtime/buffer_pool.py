"""The size-class buffer pool shared by the device runtimes (no device dependency).

Capacities are rounded up to a size class (256 B minimum, then four classes per power of two: at
most 25% slack) and a released buffer is kept for the next request of the same class, so repeated
launches with the same shapes allocate nothing. Free buffers are kept up to a byte cap read from an
environment variable (MiB). A runtime subclasses :class:`SizeClassPool` and supplies the
``_create(size, *args)`` / ``_destroy(handle)`` hooks; the device it is given must provide
``count(name, n=1)``, which receives the ``buffers_reused``, ``buffers_created``,
``bytes_allocated`` and ``buffers_destroyed`` counters.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, Hashable, List, Optional, Tuple

__all__ = ["size_class", "pool_limit", "SizeClassPool", "MIN_CLASS"]

MIN_CLASS = 256


def size_class(nbytes: int) -> int:
    """The capacity a request of ``nbytes`` gets: >= nbytes, 256 B minimum, <= 25% slack."""
    if nbytes <= MIN_CLASS:
        return MIN_CLASS
    step = 1 << max((nbytes - 1).bit_length() - 3, 0)
    return -(-nbytes // step) * step


def pool_limit(env: str, default_mb: int = 256, strict: bool = False) -> int:
    """The cap in bytes from ``$env`` (MiB). ``strict``: a malformed value raises ValueError;
    otherwise it falls back to ``default_mb`` and negative values count as 0."""
    raw = os.environ.get(env, str(default_mb))
    if strict:
        return int(float(raw) * (1 << 20))
    try:
        return max(0, int(float(raw) * (1 << 20)))
    except ValueError:
        return default_mb << 20


class SizeClassPool:
    """Per-key free lists under one lock, capped at ``limit`` free bytes.

    Subclasses implement ``_create(size, *args)`` (a new handle of ``size`` bytes) and
    ``_destroy(handle)``, and may override ``_key_of(handle)`` (the free-list key and size of a
    released handle), ``_keep(handle, size)`` (whether it may be cached at all) and
    ``_out_of_memory(exc)`` (whether a failed ``_create`` is worth a :meth:`trim` and a retry).
    """

    def __init__(self, dev: Any, env: str, default_mb: int = 256, strict: bool = False):
        self.dev = dev
        self.limit = pool_limit(env, default_mb, strict)
        self._lock = threading.Lock()
        self._free: Dict[Hashable, List[Any]] = {}
        self.free_bytes = 0

    # -- hooks -------------------------------------------------------------------------------
    def _create(self, size: int, *args: Any) -> Any:
        raise NotImplementedError

    def _destroy(self, handle: Any) -> None:
        raise NotImplementedError

    def _key_of(self, handle: Any) -> Tuple[Hashable, int]:
        size = int(handle.size)
        return size, size

    def _keep(self, handle: Any, size: int) -> bool:
        return True

    def _out_of_memory(self, exc: BaseException) -> bool:
        return False

    # -- mechanism ---------------------------------------------------------------------------
    def _take(self, key: Hashable, size: int) -> Optional[Any]:
        """A cached handle for ``key`` (counted as reused), or None."""
        with self._lock:
            free = self._free.get(key)
            buf = free.pop() if free else None
            if buf is not None:
                self.free_bytes -= size
        if buf is not None:
            self.dev.count("buffers_reused")
        return buf

    def _allocate(self, size: int, *args: Any) -> Any:
        buf = self._create(size, *args)
        self.dev.count("buffers_created")
        self.dev.count("bytes_allocated", size)
        return buf

    def _allocate_or_trim(self, size: int, *args: Any) -> Any:
        """``_allocate``; when that runs out of memory, empty the pool and try once more."""
        try:
            return self._allocate(size, *args)
        except Exception as e:
            if not self._out_of_memory(e):
                raise
        self.trim()  # hand the cached buffers back to the driver
        return self._allocate(size, *args)

    def _discard(self, handle: Any) -> None:
        self.dev.count("buffers_destroyed")
        self._destroy(handle)

    def release(self, handle: Any) -> None:
        key, size = self._key_of(handle)
        with self._lock:
            if self.free_bytes + size <= self.limit and self._keep(handle, size):
                self._free.setdefault(key, []).append(handle)
                self.free_bytes += size
                return
        self._discard(handle)

    def trim(self) -> None:
        """Release every cached free buffer."""
        with self._lock:
            bufs = [b for lst in self._free.values() for b in lst]
            self._free.clear()
            self.free_bytes = 0
        for b in bufs:
            self._discard(b)
