"""Reading and writing ``.kbin`` files: what a path may name, how much is read, atomic writes.

A leaf module (errors and the message table only), used by ``artifact`` to read and by
``module`` to write. The C reader's ``pk_artifact_load`` follows :func:`read` (same messages).
"""
from __future__ import annotations

import os
import stat
import tempfile
from typing import Tuple, Union

from .errors import ArtifactError
from .kbin_messages import escape, message

__all__ = ["Source", "read", "write_atomic"]

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]

_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def _file_type(mode: int) -> str:
    return next((name for test, name in _FILE_TYPES if test(mode)), "not a regular file")


def read(src: Source) -> Tuple[bytes, str]:
    """(bytes, name shown in messages) of an artifact given as bytes or a path. A path must name a
    regular file, and no more than the size it had when opened is read (a FIFO or ``/dev/zero``
    would otherwise be read without bound)."""
    if isinstance(src, (bytes, bytearray, memoryview)):
        return bytes(src), "the artifact"
    path = os.fspath(src)
    shown = escape(os.fsdecode(path))
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise ArtifactError(f"cannot read {shown}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ArtifactError(message("NOT_REGULAR", shown, _file_type(st.st_mode)))
        chunks, got = [], 0
        while got < st.st_size:
            chunk = os.read(fd, min(st.st_size - got, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got != st.st_size or os.read(fd, 1):
            raise ArtifactError(message("FILE_CHANGED", shown, st.st_size))
    except OSError as e:
        raise ArtifactError(f"cannot read {shown}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    return b"".join(chunks), os.path.basename(os.fsdecode(path))


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".kbin-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
