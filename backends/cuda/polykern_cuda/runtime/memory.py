"""Device memory: ``cuMemAlloc`` blocks kept in a small size-class cache.

Launches with NumPy arguments need a device buffer per argument per launch; the pool hands
back a freed block of the same size class instead of calling ``cuMemAlloc``/``cuMemFree`` (which
synchronizes the device) every time. Size classes are powers of two from 256 bytes up to 64 MiB,
then multiples of 2 MiB. Cached bytes are capped (``POLYKERN_CUDA_POOL_MB``, default 256; 0 turns
caching off); an allocation that fails for lack of memory empties the cache and tries once more.
Every method must run inside ``device.scope()`` (the primary context current on this thread).
"""
from __future__ import annotations

import threading
from typing import Dict, List, Optional

import pycuda.driver as drv

from .cuerrors import device_error

__all__ = ["Block", "Pool", "size_class"]

_MIN = 256
_POW2_MAX = 64 << 20
_STEP = 2 << 20


def size_class(nbytes: int) -> int:
    if nbytes <= _MIN:
        return _MIN
    if nbytes <= _POW2_MAX:
        return 1 << (nbytes - 1).bit_length()
    return -(-nbytes // _STEP) * _STEP


class Block:
    """One device allocation (``ptr`` is the device address)."""

    __slots__ = ("alloc", "size", "ptr")

    def __init__(self, alloc, size: int):
        self.alloc = alloc
        self.size = size
        self.ptr = int(alloc)

    def __repr__(self) -> str:
        return f"<Block 0x{self.ptr:x} {self.size} bytes>"


class Pool:
    def __init__(self, device, cap_bytes: int):
        self.device = device
        self.cap = cap_bytes
        self._lock = threading.Lock()
        self._free: Dict[int, List[Block]] = {}
        self.cached_bytes = 0
        self._leaked: List[Block] = []

    def acquire(self, nbytes: int) -> Optional[Block]:
        """A block of at least ``nbytes`` (None for 0 bytes: the kernel gets a null pointer)."""
        if nbytes <= 0:
            return None
        size = size_class(nbytes)
        with self._lock:
            free = self._free.get(size)
            if free:
                self.cached_bytes -= size
                self.device.count("buffers_reused")
                return free.pop()
        try:
            alloc = drv.mem_alloc(size)
        except drv.Error as e:
            if not isinstance(e, drv.MemoryError) or not self.trim():
                raise device_error(f"allocating {nbytes} bytes of device memory", e) from e
            try:
                alloc = drv.mem_alloc(size)
            except drv.Error as e2:
                raise device_error(f"allocating {nbytes} bytes of device memory", e2) from e2
        self.device.count("buffers_created")
        return Block(alloc, size)

    def release(self, block: Optional[Block]) -> None:
        if block is None:
            return
        with self._lock:
            if self.cached_bytes + block.size <= self.cap:
                self._free.setdefault(block.size, []).append(block)
                self.cached_bytes += block.size
                return
        block.alloc.free()

    def discard(self, block: Optional[Block]) -> None:
        """Never reuse or free ``block`` (after a sticky error the context is unusable and a free
        would only fail): it is kept referenced until the process ends."""
        if block is not None:
            with self._lock:
                self._leaked.append(block)

    def trim(self) -> int:
        """Free every cached block; returns the bytes freed."""
        with self._lock:
            blocks = [b for bs in self._free.values() for b in bs]
            self._free.clear()
            self.cached_bytes = 0
        for b in blocks:
            b.alloc.free()
        return sum(b.size for b in blocks)
