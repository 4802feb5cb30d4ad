"""Streams and events of the Vulkan runtime (``pk.Stream(device="vulkan")``; polykern/streams.py).

Every submission goes to the device's one compute queue and signals the next value of its timeline
semaphore (device.py); each command buffer starts with a full memory barrier, so the queue runs
submissions in the order they were made. A stream is the timeline value of its latest submission:
``synchronize`` waits for that value, an event is a value (``query`` reads the semaphore's counter), and
``wait(event)`` needs no command, since a later submission already runs after the event's. A timed
event also submits a timestamp write (``vkCmdWriteTimestamp`` after all earlier work) into a slot of the
device's query pool, and ``elapsed_ms`` is the difference of two slots in the device's
``timestampPeriod``. Where the queue cannot time (``timestampValidBits`` 0) ``elapsed_ms`` raises.
"""
from __future__ import annotations

import collections
import threading
import weakref
from typing import List

import vulkan as vk

from polykern.errors import StreamError

from .timestamps import STAGE, support_problem
from .vkresult import vk_call

__all__ = ["VulkanStream", "DefaultStream", "VulkanEvent", "make_stream"]

SLOTS = 256  # timestamp slots of the device's event query pool


class VulkanStream:
    def __init__(self, dev):
        self.device = dev
        self.last = 0  # the timeline value of this stream's latest submission

    def synchronize(self) -> None:
        self.device.wait_value(self.last, "the work of a stream")

    def record(self, timing: bool) -> "VulkanEvent":
        dev = self.device
        if not timing or support_problem(dev.name, dev.timestamp_bits, dev.timestamp_period_ns):
            return VulkanEvent(dev, self.last, None)
        slot = _slots(dev).take()
        pool = dev.event_queries.pool

        def write(ctx) -> None:
            vk.vkCmdResetQueryPool(ctx.cmd, pool, slot, 1)
            vk.vkCmdWriteTimestamp(ctx.cmd, STAGE, pool, slot)

        dev.execute(write, what="event record", wait=False, stream=self)
        return VulkanEvent(dev, self.last, slot)

    def wait(self, event: "VulkanEvent") -> None:
        pass  # one queue, run in submission order: work queued from now on starts after the event's

    def close(self) -> None:
        pass


class DefaultStream(VulkanStream):
    """Launches made with no current stream: ordered with everything, like CUDA's legacy default stream
    (its end is the device's latest submission)."""

    @property
    def last(self) -> int:
        return self.device.submitted

    @last.setter
    def last(self, value: int) -> None:
        pass


class VulkanEvent:
    def __init__(self, dev, value: int, slot):
        self.dev, self.value, self.slot = dev, value, slot
        if slot is not None:
            weakref.finalize(self, dev.event_queries.give, slot)

    def synchronize(self) -> None:
        self.dev.wait_value(self.value, "the work before an event")

    def query(self) -> bool:
        return self.dev.reached(self.value)

    def elapsed_ms(self, end: "VulkanEvent") -> float:
        if self.slot is None or end.slot is None:
            why = support_problem(self.dev.name, self.dev.timestamp_bits, self.dev.timestamp_period_ns)
            raise StreamError(f"elapsed_ms: Vulkan cannot time these events ({why or 'recorded with timing=False'})")
        self.synchronize()
        end.synchronize()
        q = self.dev.event_queries
        return ((q.ticks(end.slot) - q.ticks(self.slot)) & q.mask) * self.dev.timestamp_period_ns * 1e-6


class _Slots:
    """The device's query pool for timed events: SLOTS timestamp slots, each back in the free list once its
    event is gone and its write has run."""

    def __init__(self, dev):
        self.dev = dev
        self.pool = vk.vkCreateQueryPool(dev.handle, vk.VkQueryPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, queryType=vk.VK_QUERY_TYPE_TIMESTAMP,
            queryCount=SLOTS), None)
        handle, pool = dev.handle, self.pool
        dev.own(lambda: vk.vkDestroyQueryPool(handle, pool, None))
        bits = dev.timestamp_bits
        self.mask = (1 << bits) - 1 if bits < 64 else (1 << 64) - 1
        self.free: List[int] = list(range(SLOTS))
        self.given: collections.deque = collections.deque()  # slots of collected events (appended without a lock:
        self.lock = threading.Lock()  # a finalizer may run on any thread, even one holding the lock)

    def take(self) -> int:
        with self.lock:
            if not self.free and self.given:
                self.dev.wait_all("timed events")  # the given slots' writes have run
                while self.given:
                    self.free.append(self.given.popleft())
            if not self.free:
                raise StreamError(f"more than {SLOTS} timed Vulkan events are alive; drop some, or make "
                                  "pk.Event(timing=False)")
            return self.free.pop()

    def give(self, slot: int) -> None:
        self.given.append(slot)

    def ticks(self, slot: int) -> int:
        data = vk.ffi.new("uint64_t[1]")
        with vk_call("reading an event's timestamp"):
            vk.vkGetQueryPoolResults(self.dev.handle, self.pool, slot, 1, 8, data, 8,
                                     vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        return int(data[0])


_made = threading.Lock()


def _slots(dev) -> _Slots:
    with _made:
        if getattr(dev, "event_queries", None) is None:
            dev.event_queries = _Slots(dev)
        return dev.event_queries


def make_stream(dev, default: bool):
    """``runtime.stream.vulkan``: the device's default stream, or a new one."""
    return DefaultStream(dev) if default else VulkanStream(dev)
