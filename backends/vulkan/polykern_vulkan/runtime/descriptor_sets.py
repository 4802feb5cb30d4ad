"""The descriptor sets of one command context, kept across launches.

A launch binds its buffers through one descriptor set. Allocating and writing it costs a dozen binding
calls and structs per launch (most of a small launch's host time besides the submit and the wait),
and a loop of launches binds the same buffers again and again. So a context keeps up to ``SETS`` sets,
keyed by the set layout and the (binding, VkBuffer, range) list: a launch with the same bindings reuses
its set unchanged. Safe because

- a context serves one launch at a time and is reused only after that launch's fence: no set is
  written or freed while the device may read it, and a cached set is never written again;
- a VkBuffer handle can be reused by the driver only after its buffer is destroyed, and every destroy
  goes through ``Device.release``, which advances ``Device.release_epoch``: a context that sees a new
  epoch drops all its sets (the pool is reset) before binding anything.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

import vulkan as vk

__all__ = ["DescriptorSets", "SETS"]

SETS = 16  # sets kept per context (a loop alternating up to 16 launch shapes reuses them all)


class DescriptorSets:
    def __init__(self, dev, capacity: int, on_reset=lambda: None):
        self.dev = dev
        self.pool = None
        self.capacity = 0
        self.sets: Dict[tuple, object] = {}
        self.epoch = dev.release_epoch
        self.on_reset = on_reset  # called whenever the kept sets go (what recorded them must go too)
        self.grow(capacity)

    def grow(self, capacity: int) -> None:
        """A pool for SETS sets of ``capacity`` storage buffers each (the cached sets go with the old one)."""
        d = self.dev.handle
        if self.pool is not None:
            vk.vkDestroyDescriptorPool(d, self.pool, None)
            self.pool = None
        self.sets.clear()
        self.on_reset()
        self.pool = vk.vkCreateDescriptorPool(d, vk.VkDescriptorPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, maxSets=SETS, poolSizeCount=1,
            pPoolSizes=[vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                descriptorCount=capacity * SETS)]), None)
        self.capacity = capacity

    def _reset(self) -> None:
        vk.vkResetDescriptorPool(self.dev.handle, self.pool, 0)
        self.sets.clear()
        self.on_reset()

    def check_epoch(self) -> None:
        """Drop every kept set if an object was destroyed since they were written (a handle may name
        another object now)."""
        epoch = self.dev.release_epoch
        if epoch != self.epoch:
            self._reset()
            self.epoch = epoch

    def make_room(self) -> None:
        """Make sure the next :meth:`get` cannot reset the pool (a launch being recorded for replay
        must not lose the set it binds while it is recorded)."""
        self.check_epoch()
        if len(self.sets) >= SETS:
            self._reset()

    def get(self, layout, buffers: List[Tuple[int, object, int]]):
        """The set for ``layout`` with binding b pointing at each (b, VkBuffer, range): the cached one for
        these bindings, else a new one (written once)."""
        self.check_epoch()
        key = (layout, tuple(buffers))
        dset = self.sets.get(key)
        if dset is not None:
            return dset
        if len(self.sets) >= SETS:
            self._reset()
        d = self.dev.handle
        dset = vk.vkAllocateDescriptorSets(d, vk.VkDescriptorSetAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, descriptorPool=self.pool,
            descriptorSetCount=1, pSetLayouts=[layout]))[0]
        if buffers:
            writes = [vk.VkWriteDescriptorSet(
                sType=vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, dstSet=dset, dstBinding=b, descriptorCount=1,
                descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=buf, offset=0, range=rng)])
                for b, buf, rng in buffers]
            vk.vkUpdateDescriptorSets(d, len(writes), writes, 0, None)
        self.dev.count("descriptor_sets_written")
        self.sets[key] = dset
        return dset

    def destroy(self) -> None:
        vk.vkDestroyDescriptorPool(self.dev.handle, self.pool, None)
