"""The data address of a NumPy array on the launch fast path.

``array.ctypes.data`` builds a ``_ctypes`` helper and the array interface dict on every call (0.5-2 us,
the largest part of a small launch's argument packing). NumPy's C ABI puts the data pointer right
after the object header (``PyArrayObject_fields.data``, what ``PyArray_DATA`` reads), so on CPython it
is one 8-byte read at ``id(array) + object.__basicsize__``. That read is used only where it was
checked, once per process, to agree with ``array.ctypes.data`` on arrays, views and read-only arrays
(:func:`_header_read_works`); anywhere else (another Python implementation, a NumPy with another
layout) :func:`data_address` is ``array.ctypes.data``.
"""
from __future__ import annotations

import ctypes
import sys

import numpy as np

__all__ = ["data_address"]

_OFFSET = object.__basicsize__  # PyObject_HEAD: the data pointer follows it


def _header_read(a: np.ndarray) -> int:
    return ctypes.c_void_p.from_address(id(a) + _OFFSET).value or 0


def _ctypes_read(a: np.ndarray) -> int:
    return a.ctypes.data


def _header_read_works() -> bool:
    if sys.implementation.name != "cpython":
        return False
    base = np.arange(64, dtype=np.float32)
    ro = base.copy()
    ro.flags.writeable = False
    probes = [base, base[3:], base[::2], ro, np.empty(0, np.int8), np.zeros((4, 4))[1]]
    return all(_header_read(a) == a.ctypes.data for a in probes)


#: ``data_address(array) -> int``: the address of the array's first element.
data_address = _header_read if _header_read_works() else _ctypes_read
