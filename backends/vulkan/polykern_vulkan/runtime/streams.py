"""Streams and events of the Vulkan runtime (``pk.Stream(device="vulkan")``; polykern/streams.py).

A stream has a queue of the device (queues.py): the default stream queue 0, each new stream the next of
queues 1.. in turn where the compute family has several (NVIDIA), so two streams' launches may overlap;
where it has one (lavapipe) every stream shares it. Every submission signals the next value of its queue's
timeline semaphore and each command buffer starts with a full memory barrier (device.py), so a queue runs
its submissions in order. A stream is the value of its latest submission on its queue (``last``) plus
the waits its next submission will carry (``waits``, {queue index: value}): ``synchronize`` waits for
that point, an event is a point (``query`` reads the semaphores' counters), and ``wait(event)`` adds the
event's values on other queues to ``waits`` (on its own queue the event's work runs first anyway). The
default stream is ordered with all of the device's work, like CUDA's legacy default stream: its
submissions wait for every queue's latest, each stream's for the default stream's (device.py
``Device.execute``), and its point is everything submitted. A timed event also submits a timestamp write
(``vkCmdWriteTimestamp`` after all earlier work) into a slot of the device's query pool, and ``elapsed_ms``
is the difference of two slots in the device's ``timestampPeriod`` (one clock for all its queues). Where
the queue family cannot time (``timestampValidBits`` 0) ``elapsed_ms`` raises.
"""
from __future__ import annotations

import collections
import threading
import weakref
from typing import Dict, List

import vulkan as vk

from polykern.errors import StreamError

from .timestamps import STAGE, support_problem
from .vkresult import vk_call

__all__ = ["VulkanStream", "DefaultStream", "VulkanEvent", "make_stream"]

SLOTS = 256  # timestamp slots of the device's event query pool


class VulkanStream:
    everything = False  # the default stream: ordered with all of the device's work

    def __init__(self, dev, queue):
        self.device = dev
        self.queue = queue  # queues.Queue: where its submissions go
        self.last = 0  # the timeline value of this stream's latest submission on its queue
        self.waits: Dict[int, int] = {}  # queue index -> value its next submission waits for (wait_event)

    def point(self) -> Dict[int, int]:
        """The device work a host wait for this stream waits for: {queue index: value}."""
        p = dict(self.waits)
        if self.last:
            p[self.queue.index] = self.last
        return p

    def synchronize(self) -> None:
        self.device.wait_for(self.point(), "the work of a stream")

    def record(self, timing: bool) -> "VulkanEvent":
        dev = self.device
        if not timing or support_problem(dev.name, dev.timestamp_bits, dev.timestamp_period_ns):
            return VulkanEvent(dev, self.point(), None)
        slot = _slots(dev).take()
        pool = dev.event_queries.pool

        def write(ctx) -> None:
            vk.vkCmdResetQueryPool(ctx.cmd, pool, slot, 1)
            vk.vkCmdWriteTimestamp(ctx.cmd, STAGE, pool, slot)

        dev.execute(write, what="event record", wait=False, stream=self)
        return VulkanEvent(dev, self.point(), slot)

    def wait(self, event: "VulkanEvent") -> None:
        own = self.queue.index  # this queue runs the event's work on it before anything queued later
        for i, v in event.point.items():
            if i != own and v > self.waits.get(i, 0):
                self.waits[i] = v

    def close(self) -> None:
        pass


class DefaultStream(VulkanStream):
    """Launches made with no current stream: on queue 0, ordered with everything, like CUDA's legacy default
    stream (its end is the device's latest submission on every queue)."""

    everything = True

    def __init__(self, dev):
        super().__init__(dev, dev.queues[0])

    def point(self) -> Dict[int, int]:
        return self.device.submitted_point()


class VulkanEvent:
    def __init__(self, dev, point: Dict[int, int], slot):
        self.dev, self.point, self.slot = dev, point, slot
        if slot is not None:
            weakref.finalize(self, dev.event_queries.give, slot)

    def synchronize(self) -> None:
        self.dev.wait_for(self.point, "the work before an event")

    def query(self) -> bool:
        return self.dev.reached(self.point)

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
    """``runtime.stream.vulkan``: the device's default stream, or a new one on the next queue."""
    return DefaultStream(dev) if default else VulkanStream(dev, dev.stream_queue())
