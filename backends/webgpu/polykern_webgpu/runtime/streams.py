"""Streams and events of the WebGPU runtime (``pk.Stream(device="webgpu")``; polykern/streams.py).

WebGPU has one queue per device and runs its submissions in order, so every stream is that queue: a
launch with only DeviceArrays returns once submitted, whatever stream is current, and
``stream.wait(event)`` needs nothing. An event submits a 4-byte copy into a mappable buffer and maps it
(``map_async``): the map resolves once the copy, and so all work submitted before it, has run.
``query`` polls the device (wgpu-py's ``GPUDevice._poll``) and reads the promise's state; ``synchronize``
waits for it. Events carry no device time here (``elapsed_ms`` raises StreamError): WebGPU's timestamp
queries are an optional feature polykern does not request.
"""
from __future__ import annotations

import wgpu

from polykern.errors import StreamError

__all__ = ["WebGPUStream", "WebGPUEvent", "make_stream"]


class WebGPUStream:
    def __init__(self, ctx):
        self.device = ctx

    def synchronize(self) -> None:
        self.record(False).synchronize()

    def record(self, timing: bool) -> "WebGPUEvent":
        ctx = self.device
        with ctx.lock:
            d = ctx.device
            src = d.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
            dst = d.create_buffer(size=4, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            enc = d.create_command_encoder()
            enc.copy_buffer_to_buffer(src, 0, dst, 0, 4)
            d.queue.submit([enc.finish()])
            return WebGPUEvent(ctx, dst, dst.map_async(wgpu.MapMode.READ))

    def wait(self, event: "WebGPUEvent") -> None:
        pass  # one queue, run in submission order

    def close(self) -> None:
        pass


class WebGPUEvent:
    def __init__(self, ctx, buffer, promise):
        self.ctx, self.buffer, self.promise = ctx, buffer, promise

    def synchronize(self) -> None:
        with self.ctx.lock:
            self.promise.sync_wait()

    def query(self) -> bool:
        with self.ctx.lock:
            self.ctx.device._poll()
            return self.promise._state != "pending"

    def elapsed_ms(self, end: "WebGPUEvent") -> float:
        raise StreamError("elapsed_ms: WebGPU events carry no device time (timestamp queries are an optional "
                          "WebGPU feature polykern does not use); time on the host around event.synchronize()")


def make_stream(ctx, default: bool) -> WebGPUStream:
    """``runtime.stream.webgpu``: every stream is the device's one queue."""
    return WebGPUStream(ctx)
