"""CUDA errors -> :class:`polykern.errors.DeviceError` with the CUresult code and name.

pycuda raises ``pycuda.driver.Error`` (or its subclasses) whose text is
``"<routine> failed: <cuGetErrorString text>[ - <detail>]"`` and keeps no code. The code is
recovered from the text with the driver's own table (``libcuda.error_codes``), falling back to
the static table below, and the name from ``cuGetErrorName``. Errors that leave the context
unusable ("sticky" errors, e.g. an illegal address) say so.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Optional, Tuple

import pycuda.driver as drv

from polykern.errors import DeviceError

from . import libcuda

__all__ = ["device_error", "cuda_call", "lookup", "result_error", "STICKY", "NAMES", "HINTS"]

#: CUresult -> name, for the codes polykern explains (the driver's table is used when present).
NAMES = {
    1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY", 3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED", 100: "CUDA_ERROR_NO_DEVICE", 101: "CUDA_ERROR_INVALID_DEVICE",
    200: "CUDA_ERROR_INVALID_IMAGE", 201: "CUDA_ERROR_INVALID_CONTEXT", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
    218: "CUDA_ERROR_INVALID_PTX", 222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", 400: "CUDA_ERROR_INVALID_HANDLE",
    500: "CUDA_ERROR_NOT_FOUND", 700: "CUDA_ERROR_ILLEGAL_ADDRESS", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    702: "CUDA_ERROR_LAUNCH_TIMEOUT", 710: "CUDA_ERROR_ASSERT", 715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    716: "CUDA_ERROR_MISALIGNED_ADDRESS", 717: "CUDA_ERROR_INVALID_ADDRESS_SPACE", 718: "CUDA_ERROR_INVALID_PC",
    719: "CUDA_ERROR_LAUNCH_FAILED", 999: "CUDA_ERROR_UNKNOWN",
}
# cuGetErrorString texts of the codes above (used only when libcuda's own table is unavailable).
_TEXTS = {
    "invalid argument": 1, "out of memory": 2, "initialization error": 3, "driver shutting down": 4,
    "no CUDA-capable device is detected": 100, "invalid device ordinal": 101,
    "device kernel image is invalid": 200, "invalid device context": 201,
    "no kernel image is available for execution on the device": 209, "a PTX JIT compilation failed": 218,
    "the provided PTX was compiled with an unsupported toolchain.": 222, "invalid resource handle": 400,
    "named symbol not found": 500, "an illegal memory access was encountered": 700,
    "too many resources requested for launch": 701,
    "the launch timed out and was terminated": 702, "device-side assert triggered": 710,
    "an illegal instruction was encountered": 715, "misaligned address": 716,
    "operation not supported on global/shared address space": 717, "invalid program counter": 718,
    "unspecified launch failure": 719, "unknown error": 999,
}
#: Errors after which the context (and with it this process' CUDA state) cannot be used again.
STICKY = frozenset({700, 702, 710, 715, 716, 717, 718, 719})
_HINTS = {
    2: "the device is out of memory",
    209: "the module has no code for this GPU (a cubin for another architecture, or PTX for a newer one); "
         "rebuild with -arch matching the device, or ship PTX (-fmt=ptx)",
    218: "the driver could not JIT-compile the PTX",
    222: "the PTX was produced by a newer CUDA toolkit than this driver supports; use an NVRTC/nvcc no newer "
         "than the driver (polykern_cuda.toolchain) or update the driver",
    701: "the block needs more registers or shared memory than a multiprocessor has; use a smaller block",
}

HINTS = _HINTS


def lookup(text: str) -> Tuple[Optional[int], str]:
    """(CUresult, name) for the error text after "<routine> failed: "; (None, "") if unknown."""
    best, code = "", None
    for table in (libcuda.error_codes(), _TEXTS):
        for t, c in table.items():
            if text.startswith(t) and len(t) > len(best):
                best, code = t, c
        if code is not None:
            break
    if code is None:
        return None, ""
    return code, libcuda.error_name(code) or NAMES.get(code, f"CUresult {code}")


def device_error(what: str, exc: BaseException) -> DeviceError:
    """A DeviceError for pycuda exception ``exc`` raised while doing ``what``."""
    msg = str(exc)
    routine, sep, rest = msg.partition(" failed: ")
    code, name = lookup(rest if sep else msg)
    if code is None and isinstance(exc, drv.MemoryError):
        code, name = 2, NAMES[2]
    parts = [f"CUDA: {what} failed: {rest} ({routine})" if sep else f"CUDA: {what} failed: {msg}"]
    if code in _HINTS:
        parts.append(f"({_HINTS[code]})")
    if code in STICKY:
        parts.append("(this error is sticky: the CUDA context of this process can no longer be used; "
                     "restart the process)")
    err = DeviceError(" ".join(parts), code=code, name=name)
    err.sticky = code in STICKY  # type: ignore[attr-defined]
    return err


def result_error(what: str, rc: int) -> DeviceError:
    """A DeviceError for a CUresult ``rc`` returned by a driver call made through ctypes (``libcuda``)."""
    name = libcuda.error_name(rc) or NAMES.get(rc, f"CUresult {rc}")
    parts = [f"CUDA: {what} failed: {name}"]
    if rc in _HINTS:
        parts.append(f"({_HINTS[rc]})")
    if rc in STICKY:
        parts.append("(this error is sticky: the CUDA context of this process can no longer be used; "
                     "restart the process)")
    err = DeviceError(" ".join(parts), code=rc, name=name)
    err.sticky = rc in STICKY  # type: ignore[attr-defined]
    return err


@contextlib.contextmanager
def cuda_call(what: str) -> Iterator[None]:
    """``with cuda_call("allocating x"): ...`` turns a pycuda error into DeviceError(code, name)."""
    try:
        yield
    except drv.Error as e:
        raise device_error(what, e) from e
