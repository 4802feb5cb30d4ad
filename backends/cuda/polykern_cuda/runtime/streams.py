"""Streams and events of the CUDA runtime (``pk.Stream(device="cuda:0")``; polykern/streams.py), and the
stream a launch goes to.

A ``pk.Stream`` is a ``cuStreamCreate`` stream of polykern's (primary) context, ordered with the legacy
default stream; the default stream is the legacy default stream (handle 0), where launches went before
streams existed. Events are ``cuEventCreate`` events (``CU_EVENT_DISABLE_TIMING`` for
``pk.Event(timing=False)``): ``cuEventRecord``, ``cuEventSynchronize``, ``cuEventQuery``,
``cuEventElapsedTime``; ``stream.wait(event)`` is ``cuStreamWaitEvent``.

CUDA graphs (``with s.capture() as g: ...; g.replay()``): ``begin_capture`` is ``cuStreamBeginCapture`` in
thread-local mode, ``end_capture`` ``cuStreamEndCapture`` + ``cuGraphInstantiateWithFlags``, a replay
``cuGraphLaunch``. While a stream captures, the arguments of each launch queued on it are kept with the graph
(its kernel nodes hold their device addresses), and a launch with host (NumPy) arrays there is a StreamError:
its copies and wait cannot be captured. ``wrap_stream`` makes a ``pk.Stream(handle=...)`` over a CUstream
polykern does not own (XLA's, in ``polykern.jax``): closing it only forgets it.

:func:`foreign_stream`: with no ``pk.Stream`` current, a launch whose arguments include a PyTorch CUDA
tensor goes to ``torch.cuda.current_stream().cuda_stream`` of its device, one with a CuPy array to
``cupy.cuda.get_current_stream().ptr`` (what Triton and CuPy kernels do), so ``with torch.cuda.stream(s):``
works for polykern kernels too.
"""
from __future__ import annotations

import ctypes
import weakref
from typing import Any, Dict, Optional

from polykern.errors import StreamError
from polykern.streams import launch_stream

from . import device as _device
from . import libcuda
from .cuerrors import result_error

__all__ = ["CUDAStream", "CUDAEvent", "CUDAGraph", "make_stream", "wrap_stream", "foreign_stream", "launch_handle",
           "check_capturable", "read_device"]


def _check(rc: int, what: str) -> None:
    if rc == -1:
        raise StreamError(f"{what}: the CUDA driver library (libcuda.so.1) cannot be used through ctypes here")
    if rc != 0:
        raise result_error(what, rc)


class CUDAStream:
    def __init__(self, dev, default: bool, handle: Optional[int] = None):
        self.device = dev
        self.handle = 0
        self.owned = handle is None
        self.captured: Optional[list] = None  # while capturing: the arguments of the launches queued
        if handle is not None:
            self.handle = handle
        elif not default:
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
        if self.handle and self.owned:
            with self.device.scope():
                _check(libcuda.stream_destroy(self.handle), "destroying a stream")
        self.handle = 0

    def begin_capture(self) -> None:
        if not self.handle:
            raise StreamError("capture: the legacy default stream cannot be captured; capture a pk.Stream "
                              "(s = pk.Stream(device='cuda'); with s.capture() as g: ...)")
        with self.device.scope():
            _check(libcuda.stream_begin_capture(self.handle), f"starting a capture on cuda:{self.device.ordinal}")
        self.captured = []

    def end_capture(self, keep: bool) -> Optional["CUDAGraph"]:
        """The captured graph, instantiated (None, nothing kept, when ``keep`` is False: the block raised)."""
        captured, self.captured = self.captured, None
        with self.device.scope():
            rc, graph = libcuda.stream_end_capture(self.handle)
            if not keep:
                if graph:
                    libcuda.graph_destroy(graph)
                return None
            if rc != 0:
                raise StreamError(f"capture on cuda:{self.device.ordinal} failed: {result_error('cuStreamEndCapture', rc)} "
                                  "(a call that waits for the device or copies to/from the host, e.g. numpy() or "
                                  "an allocation, was made while capturing; make them before or after)")
            rc, graph_exec = libcuda.graph_instantiate(graph)
            if rc != 0:
                libcuda.graph_destroy(graph)
                _check(rc, "instantiating a captured CUDA graph")
        return CUDAGraph(self.device, graph, graph_exec, captured or [])


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


class CUDAGraph:
    """An instantiated CUDA graph captured from a stream; ``keep`` holds the captured launches' arguments."""

    def __init__(self, dev, graph: int, graph_exec: int, keep: list):
        self.device, self.graph, self.graph_exec, self.keep = dev, graph, graph_exec, keep
        self._finalizer = weakref.finalize(self, _destroy_graph, dev, graph, graph_exec)

    @property
    def launches(self) -> int:
        return len(self.keep)

    def replay(self, stream: CUDAStream) -> None:
        with self.device.scope():
            _check(libcuda.graph_launch(self.graph_exec, stream.handle), "launching a CUDA graph")
        if stream.captured is not None:  # replayed into another capture: that graph holds these launches' arrays too
            stream.captured.extend(self.keep)

    def close(self) -> None:
        self._finalizer()
        self.keep = []


def _destroy_graph(dev, graph: int, graph_exec: int) -> None:
    try:
        with dev.scope():
            libcuda.graph_exec_destroy(graph_exec)
            libcuda.graph_destroy(graph)
    except Exception:  # noqa: BLE001 - a finalizer must not raise
        dev.count("graph_destroy_errors")


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


def read_device(ordinal: int, ptr: int, nbytes: int, stream: int) -> bytes:
    """``runtime.read_device.cuda``: ``nbytes`` at device address ``ptr`` of ``cuda:ordinal`` once the work queued on
    CUstream ``stream`` before now has written them (a copy in stream order, then a wait for that stream)."""
    dev = _device.at(ordinal)
    out = ctypes.create_string_buffer(nbytes)
    with dev.scope():
        _check(libcuda.memcpy_dtoh_async(ctypes.addressof(out), ptr, nbytes, stream),
               f"reading {nbytes} bytes from cuda:{ordinal}")
        _check(libcuda.stream_synchronize(stream), f"waiting for a stream of cuda:{ordinal}")
    return out.raw


def wrap_stream(dev, handle: int) -> CUDAStream:
    """``runtime.stream_handle.cuda``: an existing CUstream of ``dev``'s context that polykern does not own."""
    if type(handle) is not int or not 0 <= handle < 1 << 64:
        raise StreamError(f"pk.Stream(handle=...): a CUstream is an int in 0..2**64-1 (a pointer), got {handle!r}")
    return CUDAStream(dev, handle == 0, handle)


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


def _launch_target(dev, name: str, args: Any):
    """(the current pk.Stream's runtime stream or None, the CUstream a launch of kernel ``name`` goes to): the
    current pk.Stream's, else a torch/CuPy argument's current stream, else 0 (the legacy default stream)."""
    impl = launch_stream("cuda", dev, name)
    return impl, (impl.handle if impl is not None else foreign_stream(args))


def launch_handle(dev, name: str, args: Any) -> int:
    """The CUstream a launch of kernel ``name`` with ``args`` goes to (a capturing pk.Stream keeps ``args``)."""
    impl, target = _launch_target(dev, name, args)
    if impl is not None and impl.captured is not None:
        impl.captured.append(args)  # the graph keeps what its kernel nodes point at
    return target


def check_capturable(dev, name: str, args: Any) -> None:
    """A StreamError if the stream a launch of kernel ``name`` with ``args`` goes to is capturing (a launch with host
    arrays cannot be captured: its copies and its wait for the result are not stream work)."""
    target = _launch_target(dev, name, args)[1]
    with dev.scope():
        rc, status = libcuda.stream_is_capturing(target)
    if (rc == 0 and status != 0) or rc in _CAPTURE_ERRORS:
        raise StreamError(f"launching kernel '{name}' with host (NumPy) arrays while its stream is capturing a CUDA "
                          "graph: only device arrays can be captured (pk.to_device(x, device='cuda') before the "
                          "capture)")


#: CUresults that say a capture is under way (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ... _IMPLICIT: the legacy
#: stream asked while another stream captures in global mode)
_CAPTURE_ERRORS = frozenset(range(900, 907))
