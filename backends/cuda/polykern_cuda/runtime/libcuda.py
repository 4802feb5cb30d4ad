"""The few CUDA driver API calls pycuda does not wrap, through ctypes on ``libcuda.so.1``.

pycuda has already loaded the driver library when this runs; these calls need no context of
their own. ``pointer_info`` tells which device/context owns a foreign pointer (a CuPy or PyTorch
array, a pycuda GPUArray), ``error_codes`` turns pycuda's error text back into the CUresult
(pycuda keeps only the text), ``stream_synchronize`` honours a ``__cuda_array_interface__``
stream. Every function degrades to "unknown" (``None``) when the library cannot be used.
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Dict, Optional

__all__ = ["PointerInfo", "pointer_info", "error_codes", "error_name", "stream_synchronize", "available",
           "MEMORY_HOST", "MEMORY_DEVICE", "MEMORY_ARRAY", "MEMORY_UNIFIED"]

# CUpointer_attribute
_ATTR_CONTEXT, _ATTR_MEMORY_TYPE, _ATTR_IS_MANAGED, _ATTR_DEVICE_ORDINAL = 1, 2, 8, 9
# CUmemorytype
MEMORY_HOST, MEMORY_DEVICE, MEMORY_ARRAY, MEMORY_UNIFIED = 1, 2, 3, 4
_MAX_CODE = 1000  # CUresult values are below this

_lock = threading.Lock()
_state: dict = {}


def _lib():
    """The ctypes handle of libcuda.so.1, or None (reason in ``_state['error']``)."""
    with _lock:
        if "lib" not in _state:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
                lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
                lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
                lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
                lib.cuStreamSynchronize.argtypes = [ctypes.c_void_p]
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


def stream_synchronize(handle: int) -> int:
    """cuStreamSynchronize(handle); returns the CUresult (or -1 without a driver library)."""
    lib = _lib()
    if lib is None:
        return -1
    return int(lib.cuStreamSynchronize(ctypes.c_void_p(handle)))
