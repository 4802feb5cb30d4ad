"""The device's compute queues: how many, which one a new stream gets, and each one's timeline semaphore.

The device asks for ``min(queueCount of its compute family, POLYKERN_VULKAN_QUEUES (default 8))`` queues
of the family (``lane_queues``). Queue 0 serves the default stream (and the device's own copies);
every ``pk.Stream`` made later gets the next of queues 1.. in turn (``stream_lane``), so two streams
run on two queues and may overlap. Where the family has one queue (lavapipe) every stream shares it,
in submission order, as before there were several.

A :class:`Queue` signals its own timeline semaphore: its n-th submission signals value n, and a queue
runs its submissions in order (each command buffer starts with a full barrier: device.py), so "value v
reached" means every earlier submission of that queue is done. Order across queues is by semaphore
waits that a submission carries (device.py ``Device.execute``): a stream's ``wait_event``, and the
default stream's CUDA-legacy rule (a default-stream submission runs after the work submitted to every
queue; a stream's submission after the default stream's). ``vkQueueSubmit`` on one VkQueue needs
external synchronization: one lock per VkQueue.
"""
from __future__ import annotations

import os
import threading
from typing import Dict, List

import vulkan as vk

from polykern.errors import DeviceError

from .vkresult import vk_call

__all__ = ["Queue", "QUEUES_ENV", "MAX_QUEUES", "queue_cap", "lane_queues", "stream_lane", "make_queues"]

QUEUES_ENV = "POLYKERN_VULKAN_QUEUES"
MAX_QUEUES = 8  # queues asked for when the family has more (NVIDIA: 16) and the environment says nothing

_lib = vk._vulkan.lib  # raw entry points (no argument conversion): they run on every launch


def queue_cap() -> int:
    """The most queues to use: ``POLYKERN_VULKAN_QUEUES`` (an integer >= 1), else MAX_QUEUES."""
    raw = os.environ.get(QUEUES_ENV, "").strip()
    if not raw:
        return MAX_QUEUES
    cap = int(raw) if raw.isascii() and raw.isdigit() else 0  # decimal digits only: int() also takes "3_0", "+3"
    if cap < 1:
        raise DeviceError(f"{QUEUES_ENV}={raw!r}: expected the number of Vulkan queues to use, an integer >= 1",
                          name=QUEUES_ENV)
    return cap


def lane_queues(family_count: int, cap: int) -> List[int]:
    """The family's queue index of each of the device's queues (lanes): 0 .. min(family_count, cap) - 1."""
    return list(range(max(1, min(family_count, cap))))


def stream_lane(lanes: int, k: int) -> int:
    """The lane of the ``k``-th (from 0) non-default stream of a device with ``lanes`` lanes: 1, 2, ..,
    lanes - 1, 1, 2, .. (lane 0 is the default stream's), or 0 where there is one."""
    return 0 if lanes <= 1 else 1 + k % (lanes - 1)


class Queue:
    """One lane: a VkQueue (``handle``, its index in the family ``family_index``), the lock its submissions
    hold, its timeline semaphore (None: Vulkan 1.1, every submission waits for a fence), ``submitted`` (the
    value of its latest submission), ``completed`` (a value known reached) and ``seen[j]`` (the value of
    lane j that a submission of this lane already waited for: later ones need not wait again)."""

    def __init__(self, dev, index: int, family_index: int, lock: threading.Lock, lanes: int, timeline: bool):
        self.dev, self.index, self.family_index, self.lock = dev, index, family_index, lock
        self.handle = vk.vkGetDeviceQueue(dev.handle, dev.family, family_index)
        self.submitted = 0
        self.completed = 0
        self.seen = [0] * lanes
        self.semaphore = None
        if timeline:
            self.semaphore = vk.vkCreateSemaphore(dev.handle, vk.VkSemaphoreCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, pNext=vk.VkSemaphoreTypeCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                    semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE, initialValue=0)), None)
            self._sems = vk.ffi.new("VkSemaphore[1]", [self.semaphore])

    def __repr__(self) -> str:
        return f"<vulkan queue {self.index} (family {self.dev.family} queue {self.family_index})>"

    def reached(self, value: int) -> bool:
        """Whether this queue's submission with timeline value ``value`` has finished (never waits)."""
        if value <= self.completed or self.semaphore is None:
            return True
        counter = vk.ffi.new("uint64_t[1]")  # per call, no lock: a finalizer may wait on any thread at any time
        with vk_call("vkGetSemaphoreCounterValue"):
            rc = _lib.vkGetSemaphoreCounterValue(self.dev.handle, self.semaphore, counter)
            if rc != vk.VK_SUCCESS:
                raise vk.exception_codes[rc]
        got = int(counter[0])
        if got > self.completed:
            self.completed = got
        return got >= value

    def wait(self, value: int, what: str) -> None:
        """Wait until this queue's submission with value ``value`` (and every earlier one) has finished."""
        if value <= self.completed or self.semaphore is None or self.dev.closed:
            return
        values = vk.ffi.new("uint64_t[1]", [value])  # per call, no lock (see reached)
        info = vk.ffi.new("VkSemaphoreWaitInfo*", {"sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                                   "semaphoreCount": 1, "pSemaphores": self._sems,
                                                   "pValues": values})
        rc = _lib.vkWaitSemaphores(self.dev.handle, info, self.dev.timeout_ns)
        if rc != vk.VK_SUCCESS:
            raise self.dev._wait_error(what, vk.exception_codes[rc]())
        if value > self.completed:
            self.completed = value

    def destroy(self) -> None:
        if self.semaphore is not None:
            vk.vkDestroySemaphore(self.dev.handle, self.semaphore, None)
            self.semaphore = None


def make_queues(dev, plan: List[int], timeline: bool) -> List[Queue]:
    """The device's lanes, lane i on family queue ``plan[i]``; lanes on one VkQueue share its lock."""
    locks: Dict[int, threading.Lock] = {}
    return [Queue(dev, i, q, locks.setdefault(q, threading.Lock()), len(plan), timeline)
            for i, q in enumerate(plan)]
