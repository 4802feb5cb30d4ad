"""The kernel parameter buffer, from FunctionInfo alone.

CUDA passes kernel parameters as a C struct (``CU_LAUNCH_PARAM_BUFFER_POINTER``): each parameter
at the next offset aligned to its own size, buffers as 8-byte device pointers. Both codegens agree
on the sizes: CUDA C declares ``bool``/``char``/``short``/``int``/``long long``/``float``/``double``
and ``unsigned short`` for f16 scalars; LLVM NVPTX lowers ``i1``/``i8`` to ``.u8``, ``half`` to
``.b8[2]``. This module is pure (no driver), so it is tested on any host.
"""
from __future__ import annotations

import struct
from typing import List, Mapping, Sequence, Tuple

from polykern.module import FunctionInfo

__all__ = ["layout", "pack", "POINTER_SIZE"]

POINTER_SIZE = 8


def layout(info: FunctionInfo) -> Tuple[List[Tuple[int, int]], int]:
    """([(offset, size)] per parameter, total size) of ``info``'s parameter buffer."""
    out, offset = [], 0
    for a in info.args:
        size = POINTER_SIZE if a.is_buffer else a.dtype.nbytes
        offset = -(-offset // size) * size
        out.append((offset, size))
        offset += size
    return out, offset


def pack(info: FunctionInfo, scalars: Mapping[int, bytes], pointers: Mapping[int, int]) -> bytes:
    """The parameter buffer: ``scalars[i]`` = the bytes of scalar parameter i (exactly its size),
    ``pointers[i]`` = the device address for buffer parameter i."""
    slots, total = layout(info)
    buf = bytearray(total)
    for i, (a, (offset, size)) in enumerate(zip(info.args, slots)):
        if a.is_buffer:
            struct.pack_into("<Q", buf, offset, int(pointers[i]))
        else:
            data = scalars[i]
            if len(data) != size:
                raise ValueError(f"parameter {a.name!r}: {len(data)} bytes for a {a.type_str} ({size} bytes)")
            buf[offset:offset + size] = data
    return bytes(buf)


def describe(info: FunctionInfo) -> Sequence[str]:
    """Human-readable layout, e.g. ``['n: i32 @0+4', 'x: Buffer[f32] @8+8']`` (for errors/debugging)."""
    slots, _ = layout(info)
    return [f"{a.name}: {a.type_str} @{o}+{s}" for a, (o, s) in zip(info.args, slots)]
