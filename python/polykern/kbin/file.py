"""Reading and writing ``.kbin`` files: what a path may name, how much is read, atomic writes.

Used by ``artifact`` to read and by ``module`` to write; the file rules are :mod:`polykern.user_files`'
(regular files only, no more than their size when opened, one buffer; writes atomic, refusing
non-regular destinations). The header (magic, format version) is checked before the rest is read, so
a file that is not an artifact costs a few bytes, whatever its size. The C reader's
``pk_artifact_load`` follows :func:`read` (same messages).
"""
from __future__ import annotations

import os
from typing import Tuple, Union

from .. import user_files
from . import wire
from ..errors import ArtifactError, PolykernError

__all__ = ["Source", "read", "write_atomic"]

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]


def read(src: Source) -> Tuple[bytes, str]:
    """(bytes, name shown in messages) of an artifact given as bytes or a path. A path must name a
    regular file; its header is checked first, then no more than the size it had when opened is read."""
    if isinstance(src, (bytes, bytearray, memoryview)):
        return bytes(src), "the artifact"
    data = user_files.read_regular(src, head=wire.HEADER_SIZE, check_head=wire.check_header, error=ArtifactError)
    return data, os.path.basename(os.fsdecode(os.fspath(src)))


def write_atomic(path: Union[str, "os.PathLike[str]"], data: bytes) -> None:
    """Write ``data`` to ``path`` (:func:`polykern.user_files.write_atomic`)."""
    user_files.write_atomic(path, data, error=PolykernError)
