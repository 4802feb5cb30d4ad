"""Dynamic shared memory: the one ``pk.shared_dynamic(T)`` array of a kernel, sized at launch.

In the IR it is ``Function.arrays[name] = ArrayType(T, 0, "shared", dynamic=True)`` plus a scalar
parameter of type ``i32`` that the frontend appends to the kernel's parameters (named ``shared_size``,
or ``shared_size_N`` if the kernel uses that name): its value is the array's length in elements. The
FunctionInfo attribute ``dynamic_shared`` = ``"INDEX,BYTES"`` names that parameter's position and the
element size, so a runtime can size the memory without the compiler; ``FunctionInfo.shared_bytes``
counts only the static shared arrays.

The caller passes the size as ``shared_size=`` at launch (:mod:`polykern.runtime.shared_launch`); every
backend reads the parameter like any other and sizes the array its own way: CUDA ``extern __shared__``
and the launch's ``sharedMemBytes``, OpenCL a trailing ``__local`` kernel argument, the CPU an alloca
per work-group, Metal a ``threadgroup`` buffer argument, NVPTX an external ``addrspace(3)`` array.
"""
from __future__ import annotations

from typing import Optional, Tuple

from . import nodes as ir
from .types import ArrayType

ATTR = "dynamic_shared"
#: The attribute's grammar, read alike by every runtime (libpolykern's copy is generated into
#: native/src/kbin_tables.h): ``INDEX,BYTES``, two decimals without sign, spaces or leading zeros; the
#: size parameter's index at most INDEX_MAX, the element size one of ELEM_BYTES; the parameter an i32.
INDEX_MAX = 1 << 16
ELEM_BYTES = (1, 2, 4, 8)
ELEM_BYTES_TEXT = ", ".join(map(str, ELEM_BYTES[:-1])) + f" or {ELEM_BYTES[-1]}"  # for messages: 1, 2, 4 or 8
SIZE_TYPE = "i32"
#: The array's length (the size argument's value) is at least this many elements.
MIN_LENGTH = 1


def dynamic_array(fn: ir.Function) -> Optional[Tuple[str, ArrayType]]:
    """``(name, type)`` of ``fn``'s pk.shared_dynamic array, or None."""
    for name, at in fn.arrays.items():
        if at.dynamic:
            return name, at
    return None


def format_attr(index: int, elem_bytes: int) -> str:
    return f"{index},{elem_bytes}"


def parse_attr(text: str) -> Tuple[int, int]:
    """``(size parameter index, element bytes)``; ValueError if malformed."""
    a, sep, b = text.partition(",")
    if not sep or not a.isdigit() or not b.isdigit() or str(int(a)) != a or str(int(b)) != b:
        raise ValueError(text)
    index, elem = int(a), int(b)
    if index > INDEX_MAX or elem not in ELEM_BYTES:
        raise ValueError(text)
    return index, elem


def size_param(fn: ir.Function) -> Optional[str]:
    """The name of the parameter holding the dynamic array's length, or None."""
    text = fn.attrs.get(ATTR)
    if text is None:
        return None
    return fn.params[parse_attr(text)[0]].name
