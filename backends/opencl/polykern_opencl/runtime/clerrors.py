"""OpenCL status codes -> :class:`polykern.errors.DeviceError` (vendor code and ``CL_*`` name).

pyopencl raises ``pyopencl.Error`` subclasses (``LogicError``, ``RuntimeError``, ``MemoryError``)
carrying the CL status ``code`` and the failing ``routine``; :func:`device_error` turns one into a
DeviceError whose ``code`` is that status (e.g. -54) and whose ``name`` is ``CL_INVALID_WORK_GROUP_SIZE``.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Optional

import pyopencl as cl

from polykern.errors import DeviceError

__all__ = ["CL_ERRORS", "status_name", "device_error", "cl_call"]

#: What pyopencl raises for a failed CL call.
CL_ERRORS = (cl.Error,)


def status_name(code: Optional[int]) -> str:
    """``-54`` -> ``"CL_INVALID_WORK_GROUP_SIZE"`` (``"CL_ERROR_<n>"`` for codes pyopencl does not know)."""
    if code is None:
        return "CL_ERROR"
    try:
        return "CL_" + cl.status_code.to_string(int(code))
    except Exception:  # vendor-specific or extension codes
        return f"CL_ERROR_{int(code)}"


def _code(e: BaseException) -> Optional[int]:
    try:
        code = e.code  # type: ignore[attr-defined]
        return int(code) if code is not None else None
    except Exception:
        return None


def device_error(what: str, e: BaseException) -> DeviceError:
    """A DeviceError for a failed CL call while doing ``what``."""
    code = _code(e)
    try:
        routine = str(e.routine)  # type: ignore[attr-defined]
    except Exception:
        routine = ""
    text = str(e).strip() or type(e).__name__
    where = f" in {routine}" if routine and routine not in text else ""
    err = DeviceError(f"OpenCL: {what} failed{where}: {text}", code=code, name=status_name(code))
    err.routine = routine  # type: ignore[attr-defined]
    return err


@contextlib.contextmanager
def cl_call(what: str) -> Iterator[None]:
    """Turn pyopencl errors raised inside the block into DeviceError."""
    try:
        yield
    except CL_ERRORS as e:
        raise device_error(what, e) from e
