"""Streams and events of the CUDA runtime (``pk.Stream(device="cuda:0")``; polykern/streams.py), and the
stream a launch goes to.

A ``pk.Stream`` is a ``cuStreamCreate`` stream of polykern's (primary) context, ordered with the legacy
default stream; the default stream is the legacy default stream (handle 0), where launches went before
streams existed. Events are ``cuEventCreate`` events (``CU_EVENT_DISABLE_TIMING`` for
``pk.Event(timing=False)``): ``cuEventRecord``, ``cuEventSynchronize``, ``cuEventQuery``,
``cuEventElapsedTime``; ``stream.wait(event)`` is ``cuStreamWaitEvent``.

:func:`foreign_stream`: with no ``pk.Stream`` current, a launch whose arguments include a PyTorch CUDA
tensor goes to ``torch.cuda.current_stream().cuda_stream`` of its device, one with a CuPy array to
``cupy.cuda.get_current_stream().ptr`` (what Triton and CuPy kernels do), so ``with torch.cuda.stream(s):``
works for polykern kernels too.
"""
from __future__ import annotations

import weakref
from typing import Any, Dict, Optional

from polykern.errors import StreamError
from polykern.streams import launch_stream

from . import libcuda
from .cuerrors import result_error

__all__ = ["CUDAStream", "CUDAEvent", "make_stream", "foreign_stream"]


def _check(rc: int, what: str) -> None:
    if rc == -1:
        raise StreamError(f"{what}: the CUDA driver library (libcuda.so.1) cannot be used through ctypes here")
    if rc != 0:
        raise result_error(what, rc)


class CUDAStream:
    def __init__(self, dev, default: bool):
        self.device = dev
        self.handle = 0
        if not default:
            with dev.scope():
                rc, self.handle = libcuda.stream_create()
            _check(rc, f"creating a stream on cuda:{dev.ordinal}")

    def synchronize(self) -> None:
        with self.device.scope():
            _check(libcuda.stream_synchronize(self.handle), f"waiting for a stream of cuda:{self.device.ordinal}")

    def record(self, timing: bool) -> "CUDAEvent":
        with self.device.scope():
            rc, ev = libcuda.event_create(0 if timing else libcuda.EVENT_DISABLE_TIMING)
            _check(rc, "creating an event")
            event = CUDAEvent(self.device, ev)
            _check(libcuda.event_record(ev, self.handle), "recording an event")
        return event

    def wait(self, event: "CUDAEvent") -> None:
        with self.device.scope():
            _check(libcuda.stream_wait_event(self.handle, event.handle), "making a stream wait for an event")

    def close(self) -> None:
        if self.handle:
            with self.device.scope():
                _check(libcuda.stream_destroy(self.handle), "destroying a stream")
            self.handle = 0


class CUDAEvent:
    def __init__(self, dev, handle: int):
        self.device, self.handle = dev, handle
        weakref.finalize(self, _destroy_event, dev, handle)

    def synchronize(self) -> None:
        _check(libcuda.event_synchronize(self.handle), "waiting for an event")

    def query(self) -> bool:
        rc = libcuda.event_query(self.handle)
        if rc == libcuda.NOT_READY:
            return False
        _check(rc, "querying an event")
        return True

    def elapsed_ms(self, end: "CUDAEvent") -> float:
        self.synchronize()
        end.synchronize()
        rc, ms = libcuda.event_elapsed_ms(self.handle, end.handle)
        _check(rc, "cuEventElapsedTime (an event made with timing=False has no time)")
        return ms


def _destroy_event(dev, handle: int) -> None:
    """cuEventDestroy in polykern's context, at garbage collection (at exit the context may be gone: ignored)."""
    try:
        with dev.scope():
            libcuda.event_destroy(handle)
    except Exception:  # noqa: BLE001 - a finalizer must not raise
        dev.count("event_destroy_errors")


def make_stream(dev, default: bool) -> CUDAStream:
    """``runtime.stream.cuda``: the legacy default stream, or a new stream."""
    return CUDAStream(dev, default)


_FRAMEWORK: Dict[type, Optional[str]] = {}  # argument type -> "torch" / "cupy" / None


def _framework(cls: type) -> Optional[str]:
    got = _FRAMEWORK.get(cls, 0)
    if got == 0:
        root = (getattr(cls, "__module__", "") or "").split(".")[0]
        got = _FRAMEWORK[cls] = root if root in ("torch", "cupy") else None
    return got


def foreign_stream(args) -> int:
    """The current PyTorch / CuPy stream of the first torch CUDA tensor / CuPy array among ``args`` (0: none,
    or the legacy default stream)."""
    for v in args:
        fw = _framework(type(v))
        if fw == "torch" and getattr(v, "is_cuda", False):
            import torch  # the argument is a torch tensor, so torch is imported already

            return int(torch.cuda.current_stream(v.device).cuda_stream)
        if fw == "cupy" and hasattr(v, "__cuda_array_interface__"):
            import cupy

            return int(cupy.cuda.get_current_stream().ptr)
    return 0


def launch_handle(dev, name: str, args: Any) -> int:
    """The CUstream a launch of kernel ``name`` goes to: the current pk.Stream's, else a torch/CuPy argument's
    current stream, else 0 (the legacy default stream)."""
    impl = launch_stream("cuda", dev, name)
    if impl is not None:
        return impl.handle
    return foreign_stream(args)
