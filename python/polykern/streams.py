"""Streams and events: one API on every runtime (docs/runtime.md).

    s = pk.Stream(device="vulkan")        # a queue of work on one device
    with s:                                # (or ``with pk.stream(s):``) launches on that device go to s
        k(n, x, y, grid=..., block=...)    # device arrays only: returns once queued
        start = s.record()                 # a pk.Event at this point of s
    s.synchronize()                        # wait for everything queued on s
    pk.synchronize("vulkan")               # wait for every stream of the device

    with s.capture() as g:                 # CUDA: the launches are recorded into a CUDA graph, not run
        k(n, x, y, grid=..., block=...)
    g.replay()                             # run them again (on the current stream, else the default one)

Without a current stream a launch goes to its device's default stream (``pk.default_stream(device)``).
``pk.Stream(device="cuda:0", handle=h)`` wraps a stream another library made (a ``CUstream``, e.g. XLA's):
polykern launches on it and never destroys it.
On every stream a launch that passes host (NumPy) arrays stays synchronous (they are copied back
before it returns); one that passes only device arrays returns once it is queued. Reading or writing a
device array from the host (``numpy()``, ``copy_from_host``, ``free``) first waits for the work queued
on its device.

A runtime provides streams by registering ``runtime.stream.<kind>``: ``make(device, default) ->`` an
object with ``device`` (the runtime's device object, as ``DeviceArray.device``), ``synchronize()``,
``record(timing) ->`` an event (``synchronize()``, ``query() -> bool``, ``elapsed_ms(end) -> float``),
``wait(event)`` and ``close()``; ``runtime.stream_handle.<kind>``: ``wrap(device, handle) ->`` such an object
over a handle it does not own. A stream that can capture has ``begin_capture()`` and ``end_capture(keep) ->``
a graph (``replay(stream)``, ``close()``, ``launches``). Its kernels ask :func:`launch_stream` which stream a
launch goes to.
The host (``"cpu"``: the LLVM runtime) runs launches synchronously; its streams are :class:`HostStream`.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Dict, Iterator, Optional, Tuple

from . import registry
from .runtime.device_array import device_string
from .errors import DeviceUnavailableError, StreamError

__all__ = ["Stream", "Event", "Graph", "stream", "default_stream", "synchronize", "launch_stream", "HostStream",
           "current_stream", "current_runtime_stream"]

_local = threading.local()  # .current: {kind: [Stream, ...]} (the innermost last)
_defaults: Dict[str, "Stream"] = {}  # device string -> its default stream
_defaults_lock = threading.Lock()


class HostStream:
    """The host's stream: CPU launches run before the call returns, so there is never anything to wait
    for, and an event's time is the host clock when it was recorded."""

    def __init__(self, device: Any = None, default: bool = False):
        self.device = device

    def synchronize(self) -> None:
        pass

    def record(self, timing: bool) -> "HostEvent":
        return HostEvent(time.perf_counter())

    def wait(self, event: Any) -> None:
        pass

    def close(self) -> None:
        pass


class HostEvent:
    def __init__(self, t: float):
        self.t = t

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_ms(self, end: "HostEvent") -> float:
        return (end.t - self.t) * 1e3


def _resolve(device: str) -> Tuple[str, str, Any, Any]:
    """(kind, device string, runtime device object, stream factory) of a device string."""
    from .runtime.devices import device_array_class, parse_device  # devices imports the backends: not at import

    kind, index = parse_device(device)
    cls = device_array_class(kind)
    dev = cls._device_at(index)
    label = device_string(kind, cls._index_of(dev))
    make = HostStream if kind == "cpu" else registry.get(f"runtime.stream.{kind}")
    if make is None:
        raise DeviceUnavailableError(f"device {device!r}: the {kind} runtime has no streams")
    return kind, label, dev, make


class Stream:
    """An ordered queue of work on one device: launches made while it is current (``with s:``) run in
    order after each other; different streams may overlap. ``close()`` waits for it and releases it."""

    def __init__(self, device: str = "cpu", *, handle: Optional[int] = None, _default: bool = False):
        self.kind, self.device, dev, make = _resolve(device)
        self.is_default = _default
        if handle is not None:
            wrap = registry.get(f"runtime.stream_handle.{self.kind}")
            if wrap is None:
                raise StreamError(f"pk.Stream(handle=...): the {self.kind} runtime cannot take a stream made "
                                  "elsewhere (CUDA can: a CUstream)")
            self._impl = wrap(dev, handle)
        else:
            self._impl = make(dev, _default)
        self._closed = False
        self._capturing = False

    def _live(self, what: str):
        if self._closed:
            raise StreamError(f"{what}: {self!r} was closed")
        return self._impl

    def _idle(self, what: str):
        """The runtime stream, for a call that waits for its work: refused while it captures (nothing runs then, and
        CUDA would break the capture)."""
        impl = self._live(what)
        if self._capturing:
            raise StreamError(f"{what}: {self!r} is capturing a CUDA graph (its launches are recorded, not run); "
                              "wait for it after the `with stream.capture()` block")
        return impl

    def synchronize(self) -> None:
        """Wait until everything queued on this stream has finished (a device fault surfaces here)."""
        self._idle("synchronize").synchronize()

    def record(self, event: Optional["Event"] = None) -> "Event":
        """Record ``event`` (a new ``pk.Event()`` if None) at the current end of this stream."""
        event = Event() if event is None else event
        return event.record(self)

    def wait_event(self, event: "Event") -> None:
        """Work queued on this stream from now on starts after ``event`` (recorded on any stream of the
        same device) has completed; the host does not wait."""
        impl = self._live("wait_event")
        got = event._live("wait_event")
        if event._stream.device != self.device:
            raise StreamError(f"wait_event: the event was recorded on {event._stream.device}, this stream is on "
                              f"{self.device} (events order streams of one device; synchronize the event on the "
                              "host instead)")
        impl.wait(got)

    @contextlib.contextmanager
    def capture(self) -> Iterator["Graph"]:
        """``with s.capture() as g:`` — the launches queued on this stream in the block (it is current there)
        are recorded into ``g`` instead of running; ``g.replay()`` runs them, as often as wanted, on the
        arrays they were given (keep their contents current, not the arrays: the graph holds them). CUDA
        only; launch each kernel once before (its first launch loads and checks it); inside the block only
        device arrays, no ``numpy()``, no allocation."""
        impl = self._live("capture")
        begin = getattr(impl, "begin_capture", None)
        if begin is None:
            raise StreamError(f"capture: streams of the {self.kind} runtime cannot record work to replay "
                              "(CUDA streams can)")
        if self._capturing:
            raise StreamError(f"capture: {self!r} is capturing already")
        if self.is_default:
            raise StreamError(f"capture: {self!r} cannot capture; capture a stream of your own "
                              f"(pk.Stream(device={self.device!r}))")
        graph = Graph(self)
        begin()
        self._capturing = True
        try:
            with self:
                yield graph
        except BaseException:
            impl.end_capture(False)
            raise
        finally:
            self._capturing = False
        graph._impl = impl.end_capture(True)

    def close(self) -> None:
        """Wait for the stream's work and release it; using it afterwards raises StreamError."""
        if self.is_default:
            raise StreamError(f"{self!r} is the device's default stream; it cannot be closed")
        if not self._closed:
            self._idle("close").synchronize()
            self._closed = True
            self._impl.close()

    def __enter__(self) -> "Stream":
        self._live("with stream")
        if not hasattr(_local, "current"):
            _local.current = {}
        _local.current.setdefault(self.kind, []).append(self)
        return self

    def __exit__(self, *exc) -> None:
        _local.current[self.kind].pop()

    def __repr__(self) -> str:
        what = "default stream" if self.is_default else f"Stream at 0x{id(self):x}"
        return f"<polykern {what} on {self.device}{', closed' if self._closed else ''}>"


class Event:
    """A point in a stream's work: ``stream.record()`` (or ``pk.Event().record(stream)``), then
    ``synchronize()`` / ``query()`` on the host, ``other_stream.wait_event(e)`` on the device, and
    ``start.elapsed_ms(end)``: device milliseconds between two events of one device (where it can time)."""

    def __init__(self, *, timing: bool = True):
        self.timing = timing
        self._stream: Optional[Stream] = None
        self._impl: Any = None

    def record(self, stream: Stream) -> "Event":
        if not isinstance(stream, Stream):
            raise StreamError(f"Event.record: expected a pk.Stream, got {type(stream).__name__}")
        self._impl = stream._live("record").record(self.timing)
        self._stream = stream
        return self

    def _live(self, what: str):
        if self._impl is None:
            raise StreamError(f"{what}: the event was never recorded (stream.record(event) first)")
        return self._impl

    def synchronize(self) -> None:
        """Wait on the host until the work before the event has finished."""
        self._live("Event.synchronize").synchronize()

    def query(self) -> bool:
        """True once the work before the event has finished (never waits)."""
        return bool(self._live("Event.query").query())

    def elapsed_ms(self, end: "Event") -> float:
        """Milliseconds between this event and ``end`` as the device measured them (both are waited for)."""
        start_impl, end_impl = self._live("elapsed_ms"), end._live("elapsed_ms")
        if not (self.timing and end.timing):
            raise StreamError("elapsed_ms: an event made with timing=False has no time")
        if self._stream.device != end._stream.device:
            raise StreamError(f"elapsed_ms: the events are on different devices ({self._stream.device} and "
                              f"{end._stream.device})")
        return float(start_impl.elapsed_ms(end_impl))


class Graph:
    """Launches recorded by ``with stream.capture() as g:`` (a CUDA graph): ``g.replay()`` runs them again."""

    def __init__(self, stream: Stream):
        self.device = stream.device
        self._kind = stream.kind
        self._impl: Any = None

    def _live(self, what: str):
        if self._impl is None:
            raise StreamError(f"{what}: the graph is not captured yet (or was closed): replay it after its "
                              "`with stream.capture()` block")
        return self._impl

    @property
    def launches(self) -> int:
        """How many launches were captured."""
        return self._live("Graph.launches").launches

    def replay(self, stream: Optional[Stream] = None) -> None:
        """Queue the captured launches on ``stream`` (default: the current stream of the graph's device, else
        its default stream); returns once queued."""
        impl = self._live("Graph.replay")
        if stream is None:
            cur = current_stream(self._kind)
            stream = cur if cur is not None and cur.device == self.device else default_stream(self.device)
        elif not isinstance(stream, Stream):
            raise StreamError(f"Graph.replay: expected a pk.Stream, got {type(stream).__name__}")
        if stream.device != self.device:
            raise StreamError(f"Graph.replay: the graph was captured on {self.device}, the stream is on "
                              f"{stream.device}")
        impl.replay(stream._live("Graph.replay"))

    def close(self) -> None:
        """Release the graph (and the arrays it holds); replaying it afterwards raises StreamError."""
        if self._impl is not None:
            self._impl.close()
            self._impl = None

    def __repr__(self) -> str:
        state = "not captured" if self._impl is None else f"{self._impl.launches} launches"
        return f"<polykern Graph on {self.device}, {state}>"


class stream:
    """``with pk.stream(s): ...``: ``s`` is the current stream of its device kind in this thread (the
    same as ``with s:``); ``pk.stream(None)`` changes nothing."""

    def __init__(self, s: Optional[Stream]):
        if s is not None and not isinstance(s, Stream):
            raise StreamError(f"pk.stream: expected a pk.Stream or None, got {type(s).__name__}")
        self.s = s

    def __enter__(self) -> Optional[Stream]:
        return self.s.__enter__() if self.s is not None else None

    def __exit__(self, *exc) -> None:
        if self.s is not None:
            self.s.__exit__(*exc)


def default_stream(device: str = "cpu") -> Stream:
    """The stream launches on ``device`` go to when no stream is current (one per device)."""
    label = _resolve(device)[1]
    with _defaults_lock:
        got = _defaults.get(label)
        if got is None:
            got = _defaults[label] = Stream(label, _default=True)
        return got


def synchronize(device: str = "cpu") -> None:
    """Wait until every stream of ``device`` has finished its work."""
    kind, _, dev, _ = _resolve(device)
    if kind != "cpu":
        registry.require(f"runtime.synchronize.{kind}")(dev)


def current_stream(kind: str) -> Optional[Stream]:
    """The stream ``with`` made current for device kind ``kind`` in this thread (None: the default)."""
    stack = getattr(_local, "current", {}).get(kind)
    return stack[-1] if stack else None


def current_runtime_stream(kind: str, what: str) -> Any:
    """The runtime stream (its ``device`` says where) of the current stream of device kind ``kind`` in this
    thread (StreamError naming ``what`` if it was closed), or None when no stream is current."""
    cur = getattr(_local, "current", None)
    stack = cur.get(kind) if cur else None
    return stack[-1]._live(what) if stack else None


def launch_stream(kind: str, device: Any, kernel: str) -> Any:
    """The runtime stream a launch of ``kernel`` on runtime device ``device`` goes to: the current stream's
    (StreamError if it was closed or is on another device), or None for the device's default stream."""
    impl = current_runtime_stream(kind, f"launching kernel '{kernel}'")
    if impl is None:
        return None
    if impl.device is not device:
        s = _local.current[kind][-1]
        raise StreamError(f"launching kernel '{kernel}': the current stream is on {s.device}, but the kernel runs "
                          "on another device of that kind (where its arrays are); make a stream of the kernel's device current")
    return impl
