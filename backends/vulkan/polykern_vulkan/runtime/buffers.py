"""Pooled Vulkan buffers.

Every storage buffer polykern uses (the device copies of NumPy arguments, DeviceArray storage,
staging buffers) comes from the device's :class:`BufferPool`: capacities are rounded up to a
size class (256 B minimum, then four classes per power of two: at most 25% slack) and a released
buffer is kept for the next request of the same class, so repeated launches with the same shapes
allocate nothing. Free buffers are kept up to ``POLYKERN_VULKAN_POOL_MB`` (default 256) MiB; an
allocation that runs out of memory empties the pool and tries once more.

Memory: on UMA and CPU devices (lavapipe) storage buffers live in host-visible, coherent device
memory that stays mapped, and arguments are copied with a memcpy. Where ``device.staging`` is set
(discrete GPUs, or ``POLYKERN_VULKAN_STAGING=1``) they live in device-local memory and data moves
through host-visible "staging" buffers with ``vkCmdCopyBuffer`` in the launch's command buffer.
"""
from __future__ import annotations

import os
import threading
from typing import Dict, List, Optional, Tuple

import numpy as np
import vulkan as vk

from .device import DEVICE_LOCAL, HOST_VISIBLE, Device
from .vkresult import BINDING_ERRORS, device_error

__all__ = ["Buffer", "BufferPool", "size_class", "POOL_ENV"]

POOL_ENV = "POLYKERN_VULKAN_POOL_MB"
MIN_CLASS = 256
HOST_CACHED = vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
USAGE = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
         | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)


def size_class(nbytes: int) -> int:
    """The capacity a request of ``nbytes`` gets: >= nbytes, 256 B minimum, <= 25% slack."""
    if nbytes <= MIN_CLASS:
        return MIN_CLASS
    step = 1 << max((nbytes - 1).bit_length() - 3, 0)
    return -(-nbytes // step) * step


class Buffer:
    """A VkBuffer with its own memory; ``mapped`` is a writable uint8 view when host-visible."""

    __slots__ = ("dev", "kind", "size", "handle", "memory", "mapped", "token", "__weakref__")

    def __init__(self, dev: Device, kind: str, size: int):
        self.dev, self.kind, self.size = dev, kind, size
        d = dev.handle
        self.handle = vk.vkCreateBuffer(d, vk.VkBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, size=size, usage=USAGE,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        try:
            req = vk.vkGetBufferMemoryRequirements(d, self.handle)
            if kind == "staging":
                prefs = (HOST_VISIBLE | HOST_CACHED, HOST_VISIBLE)
            elif dev.staging:
                prefs = (DEVICE_LOCAL, 0)
            else:
                prefs = (DEVICE_LOCAL | HOST_VISIBLE, HOST_VISIBLE)
            index = dev.memory_type(req.memoryTypeBits, prefs)
            self.memory = vk.vkAllocateMemory(d, vk.VkMemoryAllocateInfo(
                sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, allocationSize=req.size,
                memoryTypeIndex=index), None)
        except BaseException:
            vk.vkDestroyBuffer(d, self.handle, None)
            raise
        try:
            vk.vkBindBufferMemory(d, self.handle, self.memory, 0)
            self.mapped: Optional[np.ndarray] = None
            if kind == "staging" or not dev.staging:
                self.mapped = np.frombuffer(vk.vkMapMemory(d, self.memory, 0, size, 0), dtype=np.uint8)
        except BaseException:
            vk.vkDestroyBuffer(d, self.handle, None)
            vk.vkFreeMemory(d, self.memory, None)
            raise
        self.token = dev.own(self._destroy)

    def _destroy(self) -> None:
        d = self.dev.handle
        self.mapped = None  # unmapped by vkFreeMemory
        vk.vkDestroyBuffer(d, self.handle, None)
        vk.vkFreeMemory(d, self.memory, None)

    @property
    def address(self) -> int:
        """The VkBuffer handle as an int (what DeviceArray reports as its ``ptr``)."""
        return int(vk.ffi.cast("uintptr_t", self.handle))

    def __repr__(self) -> str:
        return f"<vulkan {self.kind} buffer {self.size} B>"


class BufferPool:
    def __init__(self, dev: Device):
        self.dev = dev
        self.limit = int(float(os.environ.get(POOL_ENV, "256")) * (1 << 20))
        self._lock = threading.Lock()
        self._free: Dict[Tuple[str, int], List[Buffer]] = {}
        self.free_bytes = 0

    def acquire(self, nbytes: int, kind: str = "device") -> Buffer:
        size = size_class(nbytes)
        with self._lock:
            free = self._free.get((kind, size))
            buf = free.pop() if free else None
            if buf is not None:
                self.free_bytes -= size
        if buf is not None:
            self.dev.count("buffers_reused")
            return buf
        self.dev.check_open()
        try:
            buf = self._create(kind, size)
        except (vk.VkErrorOutOfDeviceMemory, vk.VkErrorOutOfHostMemory):
            self.trim()  # give the cached buffers back to the driver and try once more
            try:
                buf = self._create(kind, size)
            except BINDING_ERRORS as e:
                raise device_error(f"allocating a {size}-byte {kind} buffer", e) from None
        except BINDING_ERRORS as e:
            raise device_error(f"allocating a {size}-byte {kind} buffer", e) from None
        return buf

    def _create(self, kind: str, size: int) -> Buffer:
        buf = Buffer(self.dev, kind, size)
        self.dev.count("buffers_created")
        self.dev.count("bytes_allocated", size)
        return buf

    def release(self, buf: Buffer) -> None:
        with self._lock:
            if self.free_bytes + buf.size <= self.limit and not self.dev.closed:
                self._free.setdefault((buf.kind, buf.size), []).append(buf)
                self.free_bytes += buf.size
                return
        self._destroy(buf)

    def _destroy(self, buf: Buffer) -> None:
        self.dev.count("buffers_destroyed")
        self.dev.release(buf.token)

    def trim(self) -> None:
        """Destroy every cached free buffer."""
        with self._lock:
            bufs = [b for lst in self._free.values() for b in lst]
            self._free.clear()
            self.free_bytes = 0
        for b in bufs:
            self._destroy(b)
