"""The CUDA devices polykern runs on, and their primary contexts.

The default device is ``POLYKERN_CUDA_DEVICE`` (ordinal, default 0): launches with only host (NumPy)
arguments run there. :func:`at` gives any other device of the host (``"cuda:1"``), made on first use
with its own primary context, memory pool and stream join. A device's facts (name, compute
capability, limits) are read at import without a context. The device's *primary* context — the
one CuPy, PyTorch and the CUDA runtime API share, so their arrays can be passed without a copy —
is retained once per process on first use and never released (the driver frees it at exit).
Every call into the driver runs inside :meth:`CUDADevice.scope`, which pushes that context on the
calling thread's context stack and pops it afterwards, so any number of threads can launch (a
launch skips the push/pop when the primary context is already current on its thread, as it is
wherever CuPy, PyTorch or the CUDA runtime API ran).

Launches go to the legacy default stream (the stream CuPy's and PyTorch's default work, and every
synchronous memcpy, is ordered with). :class:`StreamJoin` orders that stream after a foreign
``__cuda_array_interface__`` stream, and the foreign stream after the launch, with one event and
no host synchronization. :meth:`CUDADevice.synchronize` waits for everything queued.
"""
from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import threading
import warnings
from collections import Counter
from typing import Iterator, List, Optional, Tuple

import pycuda.driver as drv

from polykern.errors import BackendUnavailableError, DeviceUnavailableError
from polykern.runtime.lazy import Lazy

from . import libcuda
from .cuerrors import cuda_call, device_error, result_error
from .memory import Pool

__all__ = ["CUDADevice", "probe", "get", "peek", "at", "by_context", "device_count", "DEVICE_ENV", "POOL_ENV",
           "describe_all"]

DEVICE_ENV = "POLYKERN_CUDA_DEVICE"
POOL_ENV = "POLYKERN_CUDA_POOL_MB"

_selected: dict = {}
_others: dict = {}  # ordinal -> CUDADevice of the devices other than the default one
_others_lock = threading.Lock()


class CUDADevice:
    """Facts and the primary context of CUDA device ``ordinal``."""

    def __init__(self, ordinal: int):
        A = drv.device_attribute
        self.ordinal = ordinal
        self.handle = drv.Device(ordinal)
        h = self.handle
        self.name: str = h.name()
        self.compute_capability: Tuple[int, int] = tuple(h.compute_capability())  # type: ignore[assignment]
        self.arch = "sm_%d%d" % self.compute_capability
        self.total_memory: int = int(h.total_memory())
        self.max_block: Tuple[int, int, int] = (h.get_attribute(A.MAX_BLOCK_DIM_X), h.get_attribute(A.MAX_BLOCK_DIM_Y),
                                                h.get_attribute(A.MAX_BLOCK_DIM_Z))
        self.max_grid: Tuple[int, int, int] = (h.get_attribute(A.MAX_GRID_DIM_X), h.get_attribute(A.MAX_GRID_DIM_Y),
                                               h.get_attribute(A.MAX_GRID_DIM_Z))
        self.max_threads: int = h.get_attribute(A.MAX_THREADS_PER_BLOCK)
        self.sm_count: int = h.get_attribute(A.MULTIPROCESSOR_COUNT)
        self._context = Lazy(self._retain)
        self._lock = threading.Lock()
        self.stats: Counter = Counter()
        #: ``next(dev.launched)`` counts a launch without a lock (itertools.count is atomic under the GIL)
        self.launched = itertools.count(1)
        self.pool = Pool(self, _pool_bytes())
        self.streams = StreamJoin(self)
        self._handle: Optional[int] = None

    def __repr__(self) -> str:
        return f"<CUDADevice {self.describe()}>"

    def describe(self) -> str:
        return (f"cuda:{self.ordinal} {self.name} ({self.arch}, compute capability "
                f"{self.compute_capability[0]}.{self.compute_capability[1]}, "
                f"{self.total_memory / 2 ** 30:.1f} GiB, {self.sm_count} SMs)")

    def _retain(self):
        with cuda_call(f"retaining the primary context of cuda:{self.ordinal}"):
            ctx = self.handle.retain_primary_context()
        self.count("contexts_retained")
        return ctx

    @property
    def context(self):
        """The primary context (retained on first use, once per process)."""
        return self._context.get()

    @property
    def context_handle(self) -> int:
        h = self._handle
        if h is None:
            h = self._handle = int(self.context.handle)
        return h

    @property
    def context_retained(self) -> bool:
        return self._context.done

    def synchronize(self) -> None:
        """Wait until every launch and copy queued on the device has finished. A fault of an
        asynchronous launch surfaces here as DeviceError (CUresult code and name)."""
        if not self._context.done:
            return  # nothing was ever queued
        with self.scope(), cuda_call(f"waiting for cuda:{self.ordinal} (an asynchronous kernel launched "
                                     "earlier failed)"):
            drv.Context.synchronize()

    @contextlib.contextmanager
    def scope(self) -> Iterator[object]:
        """Make the primary context current on this thread for the duration (nests; thread-safe)."""
        ctx = self.context
        with cuda_call(f"making the primary context of cuda:{self.ordinal} current"):
            ctx.push()
        try:
            yield ctx
        except BaseException:
            try:
                drv.Context.pop()
            except drv.Error:  # never hide the error that is on its way out (e.g. a sticky fault)
                self.count("pop_errors")
            raise
        try:
            drv.Context.pop()
        except drv.Error as e:  # the stack is ours and balanced; if this fails the driver is gone
            raise device_error("restoring the previous CUDA context", e) from e

    def close_pool(self) -> None:
        """At interpreter exit: free the cached blocks while the context is still usable, and free
        (not cache) whatever is released afterwards."""
        self.pool.cap = 0
        if self._context.done:
            try:
                with self.scope():
                    self.pool.trim()
            except Exception as e:  # exiting: report, do not raise
                self.count("exit_errors")
                warnings.warn(f"polykern CUDA: freeing the memory pool at exit failed: {e}", RuntimeWarning,
                              stacklevel=1)

    def snapshot(self) -> dict:
        """The counters (``stats()``), launches included."""
        with self._lock:
            out = dict(self.stats)
        n = int(repr(self.launched)[6:-1]) - 1  # "count(N)": launches so far, read without advancing it
        if n:
            out["launches"] = out.get("launches", 0) + n
        return out

    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.stats[key] += n


class StreamJoin:
    """Orders polykern's launch stream (the legacy default stream) with foreign streams through one
    reusable event (created on first use in the primary context). Must run with that context
    current. ``cuStreamWaitEvent`` captures the event's latest record when called, so record + wait
    pairs are made under a lock and the event can be reused at once."""

    def __init__(self, dev: "CUDADevice"):
        self.dev = dev
        self._lock = threading.Lock()
        self._event = 0

    def _ev(self) -> int:
        if not self._event:
            rc, ev = libcuda.event_create(libcuda.EVENT_DISABLE_TIMING)
            if rc != 0:
                if rc == -1:
                    return 0
                raise result_error("creating the event that orders foreign streams", rc)
            self._event = ev
        return self._event

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise result_error(what, rc)

    def wait_for(self, streams, launch: int = 0) -> None:
        """The next work on the launch stream ``launch`` (0: the legacy default stream) waits for what is
        queued on ``streams`` now."""
        with self._lock:
            ev = self._ev()
            if not ev:  # no driver library for ctypes: wait on the host
                for s in streams:
                    self._check(libcuda.stream_synchronize(s), f"synchronizing the producer stream 0x{s:x}")
                return
            for s in streams:
                self._check(libcuda.event_record(ev, s), f"recording an event on the producer stream 0x{s:x} of "
                                                         "a __cuda_array_interface__ argument")
                self._check(libcuda.stream_wait_event(launch, ev), f"making the launch wait for stream 0x{s:x}")
        self.dev.count("stream_waits", len(streams))

    def signal(self, streams, launch: int = 0) -> None:
        """Later work on ``streams`` waits for what is queued on the launch stream ``launch`` now."""
        with self._lock:
            ev = self._ev()
            if not ev:  # no driver library for ctypes: wait on the host
                with cuda_call("waiting for the launch before a __cuda_array_interface__ stream uses its arrays"):
                    drv.Context.synchronize()
                return
            self._check(libcuda.event_record(ev, launch), "recording an event after the launch")
            for s in streams:
                self._check(libcuda.stream_wait_event(s, ev), f"making stream 0x{s:x} wait for the launch")


def _pool_bytes() -> int:
    raw = os.environ.get(POOL_ENV, "256").strip()
    try:
        mb = float(raw)
    except ValueError:
        raise BackendUnavailableError(f"{POOL_ENV}={raw!r} is not a number of MiB") from None
    return max(0, int(mb * 2 ** 20))


def _ordinal(count: int) -> int:
    raw = os.environ.get(DEVICE_ENV, "").strip()
    if not raw:
        return 0
    try:
        ordinal = int(raw)
    except ValueError:
        raise BackendUnavailableError(f"{DEVICE_ENV}={raw!r} is not a device ordinal (0..{count - 1})") from None
    if not 0 <= ordinal < count:
        raise BackendUnavailableError(f"{DEVICE_ENV}={ordinal} but this host has {count} CUDA device"
                                      f"{'s' * (count != 1)} (0..{count - 1})")
    return ordinal


def probe() -> CUDADevice:
    """Initialize the driver and pick the device; BackendUnavailableError says why not."""
    try:
        drv.init()
        count = drv.Device.count()
    except drv.Error as e:
        err = device_error("initializing the driver", e)
        raise BackendUnavailableError(f"the CUDA driver did not initialize ({err}); no usable NVIDIA GPU "
                                      "or driver here") from e
    if count == 0:
        raise BackendUnavailableError("the CUDA driver found no device")
    ordinal = _ordinal(count)
    try:
        dev = CUDADevice(ordinal)
    except drv.Error as e:
        raise BackendUnavailableError(f"cannot query cuda:{ordinal}: {device_error('querying the device', e)}") from e
    _selected["device"] = dev
    _selected["count"] = count
    atexit.register(dev.close_pool)
    return dev


def get() -> CUDADevice:
    """The selected device (``probe()`` ran when the runtime was imported)."""
    dev = _selected.get("device")
    if dev is None:
        dev = probe()
    return dev


def at(ordinal: int) -> CUDADevice:
    """CUDA device ``ordinal`` (``"cuda:<ordinal>"``); DeviceUnavailableError if the host has no such device."""
    dev = get()
    if ordinal == dev.ordinal:
        return dev
    with _others_lock:
        other = _others.get(ordinal)
        if other is None:
            count = _selected["count"]
            if not 0 <= ordinal < count:
                raise DeviceUnavailableError(f"device 'cuda:{ordinal}': this host has {count} CUDA device"
                                             f"{'s' * (count != 1)} (cuda:0..cuda:{count - 1})")
            try:
                other = CUDADevice(ordinal)
            except drv.Error as e:
                raise DeviceUnavailableError(f"device 'cuda:{ordinal}': {device_error('querying the device', e)}") \
                    from None
            _others[ordinal] = other
            atexit.register(other.close_pool)
    return other


def device_count() -> int:
    """How many CUDA devices the driver reports (``"cuda:0"`` .. ``"cuda:<count - 1>"``)."""
    get()
    return _selected["count"]


def by_context(handle: Optional[int]) -> Optional[CUDADevice]:
    """The device in use whose primary context is ``handle`` (None: none of them)."""
    if not handle:
        return None
    for dev in (_selected.get("device"), *list(_others.values())):
        if dev is not None and dev.context_retained and dev.context_handle == handle:
            return dev
    return None


def peek() -> Optional[CUDADevice]:
    return _selected.get("device")


def describe_all() -> List[str]:
    """One line per device the driver reports; the default one is marked [selected]."""
    chosen = get()
    out = []
    try:
        version = drv.get_driver_version()
        driver = f", driver CUDA {version // 1000}.{version % 1000 // 10}"
    except drv.Error:
        driver = ""
    for i in range(drv.Device.count()):
        if i == chosen.ordinal:
            out.append(chosen.describe()[:-1] + driver + ") [selected]")
            continue
        d = drv.Device(i)
        cc = d.compute_capability()
        out.append(f"cuda:{i} {d.name()} (sm_{cc[0]}{cc[1]}, {d.total_memory() / 2 ** 30:.1f} GiB)")
    return out
