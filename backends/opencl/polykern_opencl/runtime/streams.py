"""Streams and events of the OpenCL runtime (``pk.Stream(device="opencl:0")``; polykern/streams.py).

A stream is an in-order command queue on the device's context (the default stream is the device's own
queue); queues are made with profiling on where the device allows it. An event is a marker
(``clEnqueueMarkerWithWaitList``) on the queue: ``query`` reads its execution status, ``synchronize``
waits for it, ``elapsed_ms`` is the difference of two markers' end times (CL_PROFILING_COMMAND_END,
nanoseconds), and ``stream.wait(event)`` enqueues a barrier waiting for it.
"""
from __future__ import annotations

import weakref

import pyopencl as cl

from polykern.errors import StreamError

from .clerrors import cl_call

__all__ = ["OpenCLStream", "OpenCLEvent", "make_stream"]


class OpenCLStream:
    def __init__(self, dev, queue):
        self.device = dev
        self.queue = queue
        if queue is not dev.queue:
            dev.streams.add(self)  # Device.finish_all waits for it
            weakref.finalize(self, queue.finish)  # a stream dropped unclosed: its work is done before it goes

    def synchronize(self) -> None:
        with cl_call(f"waiting for a stream of {self.device.name}"):
            self.queue.finish()

    def record(self, timing: bool) -> "OpenCLEvent":
        with cl_call(f"recording an event on {self.device.name}"):
            return OpenCLEvent(self.device, cl.enqueue_marker(self.queue), timing and self.device.profiling)

    def wait(self, event: "OpenCLEvent") -> None:
        with cl_call(f"making a stream of {self.device.name} wait for an event"):
            cl.enqueue_barrier(self.queue, wait_for=[event.event])

    def close(self) -> None:
        self.device.streams.discard(self)
        self.queue = None


class OpenCLEvent:
    def __init__(self, dev, event, timing: bool):
        self.device, self.event, self.timing = dev, event, timing

    def synchronize(self) -> None:
        with cl_call(f"waiting for an event of {self.device.name}"):
            self.event.wait()

    def query(self) -> bool:
        status = self.event.command_execution_status
        if status < 0:
            self.synchronize()  # raises the command's error
        return status == cl.command_execution_status.COMPLETE

    def elapsed_ms(self, end: "OpenCLEvent") -> float:
        if not (self.timing and end.timing):
            raise StreamError(f"elapsed_ms: {self.device.name} has no profiling queues "
                              "(CL_QUEUE_PROFILING_ENABLE), so its events have no time")
        self.synchronize()
        end.synchronize()
        return (end.event.profile.end - self.event.profile.end) * 1e-6


def make_stream(dev, default: bool) -> OpenCLStream:
    """``runtime.stream.opencl``: the device's own queue, or a new one."""
    return OpenCLStream(dev, dev.queue if default else dev.new_queue())
