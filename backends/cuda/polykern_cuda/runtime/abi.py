"""The kernel parameter buffer, from FunctionInfo alone.

CUDA passes kernel parameters as a C struct (``CU_LAUNCH_PARAM_BUFFER_POINTER``): each parameter
at the next offset aligned to its own size, buffers as 8-byte device pointers. Both codegens agree
on the sizes: CUDA C declares ``bool``/``char``/``short``/``int``/``long long``/``float``/``double``
and ``unsigned short`` for f16 scalars; LLVM NVPTX lowers ``i1``/``i8`` to ``.u8``, ``half`` to
``.b8[2]``. This module is pure (no driver), so it is tested on any host.

``packer(info)`` precomputes the same layout as one ``struct.Struct`` (explicit pad bytes), so a
launch packs its parameter buffer with a single ``pack(*values)``: scalars as Python values (see
``polykern.runtime.launch.scalar_converter``), buffers as integer device addresses.
"""
from __future__ import annotations

import struct
from typing import List, Mapping, Sequence, Tuple

from polykern.module import FunctionInfo

__all__ = ["layout", "pack", "packer", "POINTER_SIZE"]

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


_CODES = {(0, 8): "b", (0, 16): "h", (0, 32): "i", (0, 64): "q", (1, 8): "B", (1, 16): "H", (1, 32): "I",
          (1, 64): "Q", (2, 16): "e", (2, 32): "f", (2, 64): "d", (6, 8): "?"}


def packer(info: FunctionInfo) -> struct.Struct:
    """A ``struct.Struct`` laying out ``info``'s parameters exactly as :func:`layout` (same offsets,
    same total size, zero padding); ``pack(*values)`` takes one value per parameter."""
    slots, total = layout(info)
    fmt, at = ["<"], 0
    for a, (offset, size) in zip(info.args, slots):
        if offset > at:
            fmt.append(f"{offset - at}x")
        fmt.append("Q" if a.is_buffer else _CODES[(a.dtype.code, a.dtype.bits)])
        at = offset + size
    s = struct.Struct("".join(fmt))
    if s.size != total:  # a type whose struct size differs from its ABI size: never silently misplace
        raise ValueError(f"parameter layout of {info.name!r}: struct size {s.size} != {total}")
    return s


def describe(info: FunctionInfo) -> Sequence[str]:
    """Human-readable layout, e.g. ``['n: i32 @0+4', 'x: Buffer[f32] @8+8']`` (for errors/debugging)."""
    slots, _ = layout(info)
    return [f"{a.name}: {a.type_str} @{o}+{s}" for a, (o, s) in zip(info.args, slots)]
