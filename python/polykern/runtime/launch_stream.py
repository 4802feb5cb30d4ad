"""The launch stream of polykern's out-of-process kernel runners: the Hexagon harness run under
qemu-hexagon (backends/hexagon/polykern_hexagon/runtime/harness.c) and the native runner
``kbin-run`` (native/tools/kbin_run.c, which runs aarch64 artifacts under qemu-aarch64 in the
emulation tests). Both C files carry the same definition in their header comments; the tests
(backends/hexagon/tests/test_hexagon_runtime.py, tests/test_emulation_aarch64.py) check that
their constants match these.

stdin: header ``<IIQ6i`` (magic, nargs, body bytes, grid xyz, block xyz), then per argument a
64-byte record head ``<IIQ`` (kind, 0, nbytes) zero-padded, and its data padded to 64 bytes.
stdout: the data of every written buffer (kind 2) in argument order, then the 4 bytes ``PKOK``.
"""
from __future__ import annotations

import struct
from typing import List, Sequence, Tuple

__all__ = ["MAGIC", "DONE", "RECORD", "MAX_ARGS", "SCALAR", "READ", "WRITE", "encode", "split_outputs"]

MAGIC = 0x58484B50  # "PKHX"
DONE = b"PKOK"
RECORD = 64
MAX_ARGS = 1024
SCALAR, READ, WRITE = 0, 1, 2
_HEADER = struct.Struct("<IIQ6i")
_HEAD = struct.Struct("<IIQ")


def _padded(n: int) -> int:
    return (n + RECORD - 1) // RECORD * RECORD


def encode(items: Sequence[Tuple[int, bytes]], launch: Sequence[int]) -> bytes:
    """The stdin bytes for ``items`` = [(kind, data)] and ``launch`` = grid xyz + block xyz."""
    parts: List[bytes] = []
    for kind, data in items:
        parts.append(_HEAD.pack(kind, 0, len(data)).ljust(RECORD, b"\0"))
        parts.append(bytes(data))
        parts.append(b"\0" * (_padded(len(data)) - len(data)))
    body = b"".join(parts)
    return _HEADER.pack(MAGIC, len(items), len(body), *launch) + body


def split_outputs(out: bytes, sizes: Sequence[int]) -> List[memoryview]:
    """The written buffers' bytes from the harness's stdout, or ValueError if it is incomplete."""
    need = sum(sizes) + len(DONE)
    if len(out) != need or out[-len(DONE):] != DONE:
        raise ValueError(f"expected {need} bytes ending in {DONE!r}, got {len(out)}")
    view, pos, res = memoryview(out), 0, []
    for n in sizes:
        res.append(view[pos:pos + n])
        pos += n
    return res
