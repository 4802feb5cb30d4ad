"""Host arrays passed for several buffer parameters of one launch, on runtimes that copy each argument.

A runtime that copies every host buffer argument to its device separately (and the written ones back)
cannot give two parameters one memory: with one NumPy array passed twice, the kernel would read a
stale copy and the second copy back would overwrite the first's results, a wrong result without an
error. Such a runtime calls :func:`check_host_overlaps` after ``check_args``: overlapping host
arguments of which one is written are refused with a :class:`LaunchError` naming both, except the
same memory passed twice where the runtime binds one device buffer for it (``same_ok``).
"""
from __future__ import annotations

from typing import Sequence

from ..errors import LaunchError
from .launch import BufferArg

__all__ = ["check_host_overlaps"]


def check_host_overlaps(kernel: str, runtime: str, prepared: Sequence[object], same_ok: bool = False) -> None:
    """Refuse two host buffer arguments whose bytes overlap when the kernel writes either of them
    (``same_ok``: except the identical memory twice, which the runtime binds as one device buffer)."""
    host = [a for a in prepared if isinstance(a, BufferArg) and a.is_host and a.nbytes]
    if len(host) < 2:
        return
    for j, b in enumerate(host):
        for a in host[:j]:
            if a.info.readonly and b.info.readonly:
                continue
            if not (a.ptr < b.ptr + b.nbytes and b.ptr < a.ptr + a.nbytes):
                continue
            if same_ok and (a.ptr, a.nbytes) == (b.ptr, b.nbytes):
                continue
            written = a if not a.info.readonly else b
            raise LaunchError(
                f"kernel '{kernel}': arguments '{a.name}' and '{b.name}' are the same host memory (or overlapping "
                f"views of one array) and the kernel writes '{written.name}'; the {runtime} runtime copies each "
                "argument to the device separately, so the kernel would not see one memory and the copies back "
                "would overwrite each other. Pass separate arrays (e.g. a .copy()), or a device array")
