"""The CUDA device polykern runs on, and its primary context.

One device per process: ``POLYKERN_CUDA_DEVICE`` (ordinal, default 0). Its facts (name, compute
capability, limits) are read at import without a context. The device's *primary* context — the
one CuPy, PyTorch and the CUDA runtime API share, so their arrays can be passed without a copy —
is retained once per process on first use and never released (the driver frees it at exit).
Every call into the driver runs inside :meth:`CUDADevice.scope`, which pushes that context on the
calling thread's context stack and pops it afterwards, so any number of threads can launch.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import threading
import warnings
from collections import Counter
from typing import Iterator, List, Optional, Tuple

import pycuda.driver as drv

from polykern.errors import BackendUnavailableError
from polykern.lazy import Lazy

from .cuerrors import cuda_call, device_error
from .memory import Pool

__all__ = ["CUDADevice", "probe", "get", "peek", "DEVICE_ENV", "POOL_ENV", "describe_all"]

DEVICE_ENV = "POLYKERN_CUDA_DEVICE"
POOL_ENV = "POLYKERN_CUDA_POOL_MB"

_selected: dict = {}


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
        self.pool = Pool(self, _pool_bytes())

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
        return int(self.context.handle)

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

    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.stats[key] += n


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


def peek() -> Optional[CUDADevice]:
    return _selected.get("device")


def describe_all() -> List[str]:
    """One line per device the driver reports; the one polykern uses is marked."""
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
