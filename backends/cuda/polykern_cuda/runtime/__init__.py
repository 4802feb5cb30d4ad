"""The CUDA runtime plugin: ``module.create.cuda`` and ``module.load_from_bytes.cuda`` on pycuda.

Importing it imports pycuda (which loads the NVIDIA driver, ``libcuda.so.1``), initializes the
driver and picks the default device; if any of that fails the import fails with the reason ("pycuda
could not be imported: ...", "the CUDA driver found no device"), which ``polykern backends``
shows and which makes builds produce the compile-only fallback. The primary context is retained
on first use.

Launches are asynchronous (as in CuPy) unless they take NumPy arrays: :func:`synchronize` waits
for them and raises a kernel fault as ``DeviceError`` (so do ``DeviceArray.numpy()`` and the next
synchronous launch).

    device.py        the devices (default: POLYKERN_CUDA_DEVICE), limits, primary contexts, scope()
    routing.py       which device a launch runs on (where its arrays live)
    memory.py        pooled device blocks (POLYKERN_CUDA_POOL_MB)
    device_array.py  DeviceArray: data kept on the device; __cuda_array_interface__
    buffers.py       launch arguments -> device pointers (copies, foreign-pointer checks)
    abi.py           the kernel parameter buffer from FunctionInfo
    kernel.py        CUDAKernel: one launch (asynchronous; a fast path for common arguments)
    module.py        CUDAModule, create, load_from_bytes (ptx, cubin, cuda source)
    cubin.py         which GPUs a cubin runs on (checked before loading it)
    cuerrors.py      pycuda errors -> DeviceError(CUresult code, name)
    libcuda.py       the few driver calls pycuda lacks (ctypes)
"""
from __future__ import annotations

import warnings
from typing import Optional

with warnings.catch_warnings(record=True) as _warned:
    warnings.simplefilter("always")
    try:
        import pycuda.driver  # noqa: F401  (the import is the probe)
    except Exception as e:  # ImportError (not installed, libcuda.so.1 missing, symbol mismatch), OSError...
        _why = str(e) if isinstance(e, ImportError) else f"{type(e).__name__}: {e}"
        _notes = "; ".join(str(w.message) for w in _warned)
        # name="pycuda": polykern.backends records "pycuda could not be imported: <why>" (docs/backends.md "Discovery")
        raise ImportError(_why + (f" (pycuda warned: {_notes})" if _notes else ""), name="pycuda") from e
for _w in _warned:  # pycuda imported: pass its warnings on
    warnings.warn_explicit(_w.message, _w.category, _w.filename, _w.lineno)

from polykern import registry

from . import device as _device
from .device import probe

_DEVICE = probe()  # BackendUnavailableError: no driver/device -> the runtime is unavailable

from .device_array import DeviceArray, empty, to_device, zeros  # noqa: E402
from .module import CUDAModule, create, load_from_bytes  # noqa: E402
from .streams import make_stream, read_device, wrap_stream  # noqa: E402

__all__ = ["CUDAModule", "DeviceArray", "create", "load_from_bytes", "devices", "register", "stats",
           "to_device", "empty", "zeros", "get_device", "device_count", "context", "synchronize"]


def devices():
    """Every CUDA device the driver reports; the one polykern runs on is marked [selected]."""
    return _device.describe_all()


def get_device(ordinal: Optional[int] = None) -> "_device.CUDADevice":
    """CUDA device ``ordinal`` (None: the default device, ``POLYKERN_CUDA_DEVICE``)."""
    return _device.get() if ordinal is None else _device.at(ordinal)


def device_count() -> int:
    """How many CUDA devices the driver reports."""
    return _device.device_count()


def context():
    """``with polykern_cuda.runtime.context(): ...`` makes polykern's (primary) context current on
    this thread, e.g. to allocate pycuda GPUArrays that kernels can take without a copy."""
    return _device.get().scope()


def synchronize(dev=None) -> None:
    """Wait until every kernel launched and copy queued by polykern (and by anyone else on the
    device's primary context) has finished. Launches with device arrays are asynchronous: a fault
    of one (an illegal address, ...) is raised here as ``DeviceError`` with the CUresult code and
    name (sticky faults leave the process' CUDA context unusable)."""
    (dev or _device.get()).synchronize()


def stats() -> dict:
    """Counters: launches, buffers_created, buffers_reused, modules_loaded, contexts_retained, ..."""
    dev = _device.peek()
    if dev is None:
        return {}
    return dev.snapshot()


def register() -> None:
    registry.register("module.create.cuda", create)
    registry.register("runtime.device_array.cuda", DeviceArray)  # pk.to_device(x, device="cuda...")
    registry.register("module.load_from_bytes.cuda", load_from_bytes)
    registry.register("runtime.synchronize.cuda", synchronize)  # pk.autotune, pk.synchronize wait with it
    registry.register("runtime.stream.cuda", make_stream)  # pk.Stream(device="cuda:0")
    registry.register("runtime.read_device.cuda", read_device)  # polykern.jax: a traced scalar on XLA's stream
    registry.register("runtime.stream_handle.cuda", wrap_stream)  # pk.Stream(device="cuda:0", handle=...)
