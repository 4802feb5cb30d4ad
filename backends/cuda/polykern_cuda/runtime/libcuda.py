"""The few CUDA driver API calls pycuda does not wrap, through ctypes on ``libcuda.so.1``.

pycuda has already loaded the driver library when this runs. ``pointer_info`` tells which
device/context owns a foreign pointer (a CuPy or PyTorch array, a pycuda GPUArray) and
``pointer_context`` is its one-call form for the launch fast path; ``current_context`` is the
context current on the calling thread (a launch skips the push/pop when it is polykern's);
``error_codes`` turns pycuda's error text back into the CUresult (pycuda keeps only the text);
``event_create``/``event_record``/``stream_wait_event`` order polykern's launch stream after (and
before) a ``__cuda_array_interface__`` stream without a host synchronization (the event calls
need polykern's context current); ``stream_create``/``stream_destroy``/``event_*`` are what
``pk.Stream``/``pk.Event`` on CUDA are made of (runtime/streams.py), ``stream_begin_capture``/
``stream_end_capture``/``graph_*`` its CUDA graphs (``Stream.capture``), ``memcpy_dtoh_async`` what reads
``polykern.jax``'s traced scalars on XLA's stream; ``memcpy_peer`` copies between
the memory of two contexts (``DeviceArray.to``). Every function degrades to
"unknown" (``None``, or the CUresult ``-1``) when the library cannot be used.
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

__all__ = ["PointerInfo", "pointer_info", "pointer_context", "current_context", "error_codes", "error_name",
           "stream_synchronize", "event_create", "event_record", "stream_wait_event", "available",
           "MEMORY_HOST", "MEMORY_DEVICE", "MEMORY_ARRAY", "MEMORY_UNIFIED", "EVENT_DISABLE_TIMING",
           "stream_create", "stream_destroy", "event_synchronize", "event_query", "event_elapsed_ms", "event_destroy",
           "NOT_READY", "memcpy_peer", "stream_begin_capture", "stream_end_capture", "stream_is_capturing",
           "graph_instantiate", "graph_launch", "graph_exec_destroy", "graph_destroy", "memcpy_dtoh_async",
           "CAPTURE_THREAD_LOCAL", "CAPTURE_ACTIVE", "CAPTURE_INVALIDATED"]

# CUpointer_attribute
_ATTR_CONTEXT, _ATTR_MEMORY_TYPE, _ATTR_IS_MANAGED, _ATTR_DEVICE_ORDINAL = 1, 2, 8, 9
# CUmemorytype
MEMORY_HOST, MEMORY_DEVICE, MEMORY_ARRAY, MEMORY_UNIFIED = 1, 2, 3, 4
_MAX_CODE = 1000  # CUresult values are below this
EVENT_DISABLE_TIMING = 0x2  # CU_EVENT_DISABLE_TIMING
NOT_READY = 600  # CUDA_ERROR_NOT_READY: cuEventQuery's "not yet"
CAPTURE_THREAD_LOCAL = 1  # CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: only this thread's unsafe calls break a capture
CAPTURE_ACTIVE, CAPTURE_INVALIDATED = 1, 2  # CUstreamCaptureStatus (0: not capturing)

_lock = threading.Lock()
_state: dict = {}


def _lib():
    """The ctypes handle of libcuda.so.1, or None (reason in ``_state['error']``)."""
    lib = _state.get("lib")
    if lib is not None:  # the hot path (every launch): no lock once loaded
        return lib
    with _lock:
        if "lib" not in _state:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
                vp = ctypes.c_void_p
                lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
                lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
                lib.cuPointerGetAttribute.argtypes = [vp, ctypes.c_int, ctypes.c_uint64]
                lib.cuStreamSynchronize.argtypes = [vp]
                lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(vp)]
                lib.cuEventCreate.argtypes = [ctypes.POINTER(vp), ctypes.c_uint]
                lib.cuEventRecord.argtypes = [vp, vp]
                lib.cuStreamWaitEvent.argtypes = [vp, vp, ctypes.c_uint]
                lib.cuStreamCreate.argtypes = [ctypes.POINTER(vp), ctypes.c_uint]
                lib.cuStreamDestroy_v2.argtypes = [vp]
                lib.cuEventSynchronize.argtypes = [vp]
                lib.cuEventQuery.argtypes = [vp]
                lib.cuEventElapsedTime.argtypes = [ctypes.POINTER(ctypes.c_float), vp, vp]
                lib.cuEventDestroy_v2.argtypes = [vp]
                u64 = ctypes.c_uint64
                lib.cuMemcpyPeer.argtypes = [u64, vp, u64, vp, ctypes.c_size_t]
                lib.cuMemcpyPeerAsync.argtypes = [u64, vp, u64, vp, ctypes.c_size_t, vp]
                lib.cuStreamBeginCapture_v2.argtypes = [vp, ctypes.c_int]
                lib.cuStreamEndCapture.argtypes = [vp, ctypes.POINTER(vp)]
                lib.cuStreamIsCapturing.argtypes = [vp, ctypes.POINTER(ctypes.c_int)]
                lib.cuGraphInstantiateWithFlags.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_ulonglong]
                lib.cuGraphLaunch.argtypes = [vp, vp]
                lib.cuGraphExecDestroy.argtypes = [vp]
                lib.cuGraphDestroy.argtypes = [vp]
                lib.cuMemcpyDtoHAsync_v2.argtypes = [vp, u64, ctypes.c_size_t, vp]
                _state["lib"] = lib
            except (OSError, AttributeError) as e:
                _state["lib"] = None
                _state["error"] = f"{type(e).__name__}: {e}"
        return _state["lib"]


def available() -> bool:
    return _lib() is not None


def _text(fn, code: int) -> Optional[str]:
    out = ctypes.c_char_p()
    if fn(int(code), ctypes.byref(out)) != 0 or not out.value:
        return None
    return out.value.decode(errors="replace")


def error_name(code: int) -> Optional[str]:
    """``700`` -> ``"CUDA_ERROR_ILLEGAL_ADDRESS"`` (None if unknown)."""
    lib = _lib()
    return _text(lib.cuGetErrorName, code) if lib is not None else None


def error_codes() -> Dict[str, int]:
    """{cuGetErrorString text: CUresult} for every code this driver knows (empty if no driver)."""
    with _lock:
        cached = _state.get("codes")
    if cached is not None:
        return cached
    lib = _lib()
    table: Dict[str, int] = {}
    if lib is not None:
        for code in range(_MAX_CODE):
            text = _text(lib.cuGetErrorString, code)
            if text is not None:
                table.setdefault(text, code)
    with _lock:
        _state["codes"] = table
    return table


@dataclass(frozen=True)
class PointerInfo:
    memory_type: int
    context: Optional[int]  # CUcontext handle (None: not reported, e.g. VMM allocations)
    managed: bool
    ordinal: Optional[int]


def _attr(lib, attr: int, ptr: int, ctype):
    value = ctype()
    rc = lib.cuPointerGetAttribute(ctypes.byref(value), attr, ctypes.c_uint64(ptr))
    return value.value if rc == 0 else None


def pointer_info(ptr: int) -> Optional[PointerInfo]:
    """What the driver knows about ``ptr``; None if it is not memory the driver knows.
    Raises OSError when the driver library cannot be used (so the caller can say so)."""
    lib = _lib()
    if lib is None:
        raise OSError(_state.get("error", "libcuda.so.1 is not loadable"))
    mtype = _attr(lib, _ATTR_MEMORY_TYPE, ptr, ctypes.c_uint)
    if mtype is None:
        return None
    ctx = _attr(lib, _ATTR_CONTEXT, ptr, ctypes.c_void_p)
    managed = _attr(lib, _ATTR_IS_MANAGED, ptr, ctypes.c_uint)
    ordinal = _attr(lib, _ATTR_DEVICE_ORDINAL, ptr, ctypes.c_int)
    return PointerInfo(int(mtype), int(ctx) if ctx else None, bool(managed), ordinal)


def pointer_context(ptr: int) -> Optional[int]:
    """The CUcontext that owns device pointer ``ptr`` (one driver call: the launch fast path),
    0 if the driver reports none (VMM memory), None if it does not know the pointer or the driver
    library cannot be used (the caller then runs the full :func:`pointer_info` check)."""
    lib = _state.get("lib") or _lib()
    if lib is None:
        return None
    out = ctypes.c_void_p()
    if lib.cuPointerGetAttribute(ctypes.byref(out), _ATTR_CONTEXT, ptr) != 0:
        return None
    return out.value or 0


def current_context() -> Optional[int]:
    """The CUcontext current on the calling thread (0: none), or None without a driver library."""
    lib = _state.get("lib") or _lib()
    if lib is None:
        return None
    out = ctypes.c_void_p()
    if lib.cuCtxGetCurrent(ctypes.byref(out)) != 0:
        return None
    return out.value or 0


def event_create(flags: int = EVENT_DISABLE_TIMING) -> Tuple[int, int]:
    """(CUresult, CUevent) of cuEventCreate in the current context; (-1, 0) without a driver library."""
    lib = _lib()
    if lib is None:
        return -1, 0
    out = ctypes.c_void_p()
    rc = int(lib.cuEventCreate(ctypes.byref(out), flags))
    return rc, (out.value or 0)


def event_record(event: int, stream: int) -> int:
    """cuEventRecord(event, stream) (stream 0: the legacy default stream); the CUresult, -1 without a library."""
    lib = _state.get("lib") or _lib()
    if lib is None:
        return -1
    return int(lib.cuEventRecord(event, stream or None))


def stream_wait_event(stream: int, event: int) -> int:
    """cuStreamWaitEvent(stream, event, 0): work queued on ``stream`` after this waits for the work
    before the event's latest record; the CUresult, -1 without a library."""
    lib = _state.get("lib") or _lib()
    if lib is None:
        return -1
    return int(lib.cuStreamWaitEvent(stream or None, event, 0))


def stream_synchronize(handle: int) -> int:
    """cuStreamSynchronize(handle); returns the CUresult (or -1 without a driver library)."""
    lib = _lib()
    if lib is None:
        return -1
    return int(lib.cuStreamSynchronize(ctypes.c_void_p(handle)))


def stream_create() -> Tuple[int, int]:
    """(CUresult, CUstream) of cuStreamCreate(flags 0: ordered with the legacy default stream) in the current
    context; (-1, 0) without a driver library."""
    lib = _lib()
    if lib is None:
        return -1, 0
    out = ctypes.c_void_p()
    rc = int(lib.cuStreamCreate(ctypes.byref(out), 0))
    return rc, (out.value or 0)


def stream_destroy(handle: int) -> int:
    lib = _lib()
    return -1 if lib is None else int(lib.cuStreamDestroy_v2(handle))


def event_synchronize(event: int) -> int:
    lib = _lib()
    return -1 if lib is None else int(lib.cuEventSynchronize(event))


def event_query(event: int) -> int:
    """cuEventQuery: 0 when the work before the event's record is done, NOT_READY while it is not."""
    lib = _lib()
    return -1 if lib is None else int(lib.cuEventQuery(event))


def event_elapsed_ms(start: int, end: int) -> Tuple[int, float]:
    """(CUresult, milliseconds) of cuEventElapsedTime(start, end)."""
    lib = _lib()
    if lib is None:
        return -1, 0.0
    out = ctypes.c_float()
    rc = int(lib.cuEventElapsedTime(ctypes.byref(out), start, end))
    return rc, float(out.value)


def event_destroy(event: int) -> int:
    lib = _lib()
    return -1 if lib is None else int(lib.cuEventDestroy_v2(event))


def memcpy_peer(dst: int, dst_ctx: int, src: int, src_ctx: int, nbytes: int, stream: Optional[int] = None) -> int:
    """cuMemcpyPeer (``stream`` None: ordered after all work queued on both contexts' devices) or
    cuMemcpyPeerAsync on ``stream`` (0: the legacy default stream); the CUresult, -1 without a library.
    Needs no peer access: the driver copies over NVLink/PCIe itself."""
    lib = _lib()
    if lib is None:
        return -1
    if stream is None:
        return int(lib.cuMemcpyPeer(dst, dst_ctx, src, src_ctx, nbytes))
    return int(lib.cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, nbytes, stream or None))


def stream_begin_capture(stream: int, mode: int = CAPTURE_THREAD_LOCAL) -> int:
    """cuStreamBeginCapture: work queued on ``stream`` from now on is recorded into a graph, not run."""
    lib = _lib()
    return -1 if lib is None else int(lib.cuStreamBeginCapture_v2(stream, mode))


def stream_end_capture(stream: int) -> Tuple[int, int]:
    """(CUresult, CUgraph) of cuStreamEndCapture (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: a call the capture
    does not allow broke it; the graph is then 0)."""
    lib = _lib()
    if lib is None:
        return -1, 0
    out = ctypes.c_void_p()
    rc = int(lib.cuStreamEndCapture(stream, ctypes.byref(out)))
    return rc, (out.value or 0)


def stream_is_capturing(stream: int) -> Tuple[int, int]:
    """(CUresult, CUstreamCaptureStatus) of cuStreamIsCapturing (0 none, CAPTURE_ACTIVE, CAPTURE_INVALIDATED)."""
    lib = _lib()
    if lib is None:
        return -1, 0
    out = ctypes.c_int()
    rc = int(lib.cuStreamIsCapturing(stream or None, ctypes.byref(out)))
    return rc, int(out.value)


def graph_instantiate(graph: int) -> Tuple[int, int]:
    """(CUresult, CUgraphExec) of cuGraphInstantiateWithFlags(graph, 0)."""
    lib = _lib()
    if lib is None:
        return -1, 0
    out = ctypes.c_void_p()
    rc = int(lib.cuGraphInstantiateWithFlags(ctypes.byref(out), graph, 0))
    return rc, (out.value or 0)


def graph_launch(graph_exec: int, stream: int) -> int:
    lib = _lib()
    return -1 if lib is None else int(lib.cuGraphLaunch(graph_exec, stream or None))


def graph_exec_destroy(graph_exec: int) -> int:
    lib = _lib()
    return -1 if lib is None else int(lib.cuGraphExecDestroy(graph_exec))


def graph_destroy(graph: int) -> int:
    lib = _lib()
    return -1 if lib is None else int(lib.cuGraphDestroy(graph))


def memcpy_dtoh_async(host: int, ptr: int, nbytes: int, stream: int) -> int:
    """cuMemcpyDtoHAsync(host, ptr, nbytes, stream): copy in stream order (wait for the stream to see the bytes)."""
    lib = _lib()
    return -1 if lib is None else int(lib.cuMemcpyDtoHAsync_v2(host, ptr, nbytes, stream or None))
