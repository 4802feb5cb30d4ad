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

from typing import TYPE_CHECKING, Optional

import numpy as np
import vulkan as vk

from polykern.runtime.buffer_pool import MIN_CLASS, SizeClassPool, size_class

from .vkresult import BINDING_ERRORS, device_error

if TYPE_CHECKING:  # the device owns its pool (device.py imports this module)
    from .device import Device

__all__ = ["Buffer", "BufferPool", "size_class", "POOL_ENV"]

POOL_ENV = "POLYKERN_VULKAN_POOL_MB"
HOST_VISIBLE = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
HOST_CACHED = vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
DEVICE_LOCAL = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
USAGE = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
         | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)


class Buffer:
    """A VkBuffer with its own memory; ``mapped`` is a writable uint8 view when host-visible."""

    __slots__ = ("dev", "kind", "size", "handle", "memory", "mapped", "token", "__weakref__")

    def __init__(self, dev: "Device", kind: str, size: int):
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


class BufferPool(SizeClassPool):
    def __init__(self, dev: "Device"):
        super().__init__(dev, POOL_ENV, strict=True)

    def acquire(self, nbytes: int, kind: str = "device") -> Buffer:
        size = size_class(nbytes)
        buf = self._take((kind, size), size)
        if buf is not None:
            return buf
        self.dev.check_open()
        try:
            return self._allocate_or_trim(size, kind)
        except BINDING_ERRORS as e:
            raise device_error(f"allocating a {size}-byte {kind} buffer", e) from None

    def _out_of_memory(self, exc: BaseException) -> bool:
        return isinstance(exc, (vk.VkErrorOutOfDeviceMemory, vk.VkErrorOutOfHostMemory))

    def _create(self, size: int, kind: str = "device") -> Buffer:
        return Buffer(self.dev, kind, size)

    def _key_of(self, buf: Buffer):
        return (buf.kind, buf.size), buf.size

    def _keep(self, buf: Buffer, size: int) -> bool:
        return not self.dev.closed

    def _destroy(self, buf: Buffer) -> None:
        self.dev.release(buf.token)
