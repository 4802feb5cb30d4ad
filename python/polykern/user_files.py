"""Files a user names: the one bounded reader and the one atomic writer polykern uses for them.

- :func:`read_regular` reads a regular file only (``O_NONBLOCK``, so opening a FIFO never waits for a
  writer; the type is checked with ``fstat`` on the opened descriptor), refuses one larger than the
  caller's bound, may check a header before reading the rest, and reads no more than the size the
  file had when opened, into one buffer. The ``.kbin`` reader (``polykern.kbin.file``) and the autotune cache
  reader use it.
- :func:`write_atomic` writes through a temporary file in the destination's folder and a rename. It
  refuses a destination that exists and is not a regular file (a FIFO, a device, a folder) and one
  that is one of the caller's inputs, writes through a symlink (the symlink's target is replaced),
  keeps an existing file's permission bits (a new file gets ``0666 & ~umask``, as ``open`` gives).
  ``.kbin`` export (``polykern compile -o``), the autotune cache, the benchmarks' and tools' outputs
  use it.

Errors are the caller's ``error`` class (a :class:`PolykernError`) and say what and where. A leaf
module: errors and the message table only.
"""
from __future__ import annotations

import os
import stat
import tempfile
from typing import Callable, Iterable, Optional, Tuple, Type, Union

from .errors import PolykernError
from .kbin.messages import escape, message

__all__ = ["PathLike", "read_regular", "check_destination", "write_atomic", "file_type", "shown"]

PathLike = Union[str, bytes, "os.PathLike[str]"]

_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))

#: The most bytes one ``read`` returns on Linux (MAX_RW_COUNT); a larger file takes several reads.
_ONE_READ = 0x7FFFF000


def file_type(mode: int) -> str:
    """"a FIFO (named pipe)", "a directory", ... for a mode that is not a regular file's."""
    return next((name for test, name in _FILE_TYPES if test(mode)), "not a regular file")


def shown(path: PathLike) -> str:
    """A path as messages show it (control characters escaped)."""
    return escape(os.fsdecode(os.fspath(path)))


def read_regular(path: PathLike, *, limit: Optional[int] = None, head: int = 0,
                 check_head: Optional[Callable[[bytes], None]] = None,
                 error: Type[PolykernError] = PolykernError) -> bytes:
    """The bytes of the regular file ``path``: at most ``limit`` bytes (a larger file is refused
    before anything is read); ``check_head`` gets the first ``head`` bytes (fewer in a shorter file)
    before the rest is read, and raises to refuse the file."""
    name = shown(path)
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise error(f"cannot read {name}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(message("NOT_REGULAR", name, file_type(st.st_mode)))
        size = st.st_size
        if limit is not None and size > limit:
            raise error(f"cannot read {name}: it is {size} bytes, more than the {limit} bytes accepted here")
        if check_head is not None:
            check_head(os.pread(fd, min(head, size), 0))
        data = _read_exactly(fd, size, name, error)
        if os.read(fd, 1):
            raise error(message("FILE_CHANGED", name, size))
        return data
    except OSError as e:
        raise error(f"cannot read {name}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _read_exactly(fd: int, size: int, name: str, error: Type[PolykernError]) -> bytes:
    """``size`` bytes from offset 0: one allocation (one read up to 2 GiB - 4 KiB on Linux)."""
    try:
        data = os.pread(fd, min(size, _ONE_READ), 0)
        if len(data) < size and data:  # only a file larger than one read (or a shrinking one)
            parts, got = [data], len(data)
            while got < size:
                chunk = os.pread(fd, min(size - got, _ONE_READ), got)
                if not chunk:
                    break
                parts.append(chunk)
                got += len(chunk)
            data = b"".join(parts)
    except MemoryError:
        raise error(f"cannot read {name}: {size} bytes do not fit in this process's memory") from None
    if len(data) != size:
        raise error(message("FILE_CHANGED", name, size))
    os.lseek(fd, size, os.SEEK_SET)
    return data


def _umask() -> int:
    try:  # Linux: read without changing it (os.umask would, for a moment, for every thread)
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_destination(path: PathLike, *, inputs: Iterable[PathLike] = (),
                      error: Type[PolykernError] = PolykernError, make_parents: bool = False) -> Tuple[str, int]:
    """(the file to replace, the permission bits to give it) for an output to ``path``; raises
    ``error`` when :func:`write_atomic` would refuse it (a caller may check before a long job)."""
    name = shown(path)
    target = os.path.realpath(os.fspath(path))  # through symlinks: replace what the link points at
    folder = os.path.dirname(target)
    try:
        st: Optional[os.stat_result] = os.lstat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise error(f"cannot write {name}: {e.strerror or e}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise error(f"cannot write {name}: it is {file_type(st.st_mode)}, not a regular file")
    if st is not None:
        for src in inputs:
            try:
                same = os.path.samestat(st, os.stat(src))
            except OSError:
                continue
            if same:
                raise error(f"cannot write {name}: it is the input {shown(src)}; choose another output file")
    if make_parents:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise error(f"cannot write {name}: cannot create the folder {shown(folder)}: {e.strerror or e}") \
                from None
    elif not os.path.isdir(folder):
        raise error(f"cannot write {name}: the folder {shown(folder)} does not exist")
    return target, (stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())


def write_atomic(path: PathLike, data: bytes, *, inputs: Iterable[PathLike] = (),
                 error: Type[PolykernError] = PolykernError, make_parents: bool = False) -> None:
    """Write ``data`` to ``path`` atomically: see the module docstring. ``inputs`` are files the
    output must not replace; ``make_parents`` creates missing folders (a cache), else a missing
    folder is an error."""
    target, mode = check_destination(path, inputs=inputs, error=error, make_parents=make_parents)
    name = shown(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                   dir=os.path.dirname(target))
    except OSError as e:
        raise error(f"cannot write {name}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise error(f"cannot write {name}: {e.strerror or e}") from None
        raise
