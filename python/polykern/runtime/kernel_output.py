"""Where ``pk.debug_print`` output goes on the runtimes that print in this process (the CPU runtime's and
PoCL's ``printf`` through C's stdio, the CUDA driver's, the interpreter's ``sys.stdout``): the process's
standard output, in order with what the program prints around the launch.

A runtime launching a kernel whose FunctionInfo has ``uses_print`` calls :func:`launching` before and
:func:`launched` after: Python's buffered ``sys.stdout`` is flushed first (what the program printed
before the launch comes first), Python's and C's buffers after (the kernel's lines are out when the
launch returns, also when stdout is a pipe or a file, where both buffer whole blocks).
"""
from __future__ import annotations

import ctypes
import sys

__all__ = ["prints", "launching", "launched"]

_libc = ctypes.CDLL(None)
_fflush = _libc.fflush
_fflush.restype, _fflush.argtypes = ctypes.c_int, (ctypes.c_void_p,)


def prints(info) -> bool:
    """Whether the kernel described by FunctionInfo ``info`` has a ``pk.debug_print``."""
    return info.attrs.get("uses_print") == "1"


def _flush_python() -> None:
    try:
        sys.stdout.flush()
    except (AttributeError, OSError, ValueError):  # no stdout, or a closed one: nothing to order
        pass


def launching() -> None:
    _flush_python()


def launched() -> None:
    _flush_python()  # the interpreter prints to sys.stdout
    _fflush(None)  # every C output stream
