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

from .errors import LaunchError
from .launch import BufferArg

__all__ = ["check_host_overlaps"]


def check_host_overlaps(kernel: str, runtime: str, prepared: Sequence[object], same_ok: bool = False,
                        mixed_ok: bool = True) -> None:
    """Refuse two host buffer arguments whose bytes overlap when the kernel writes either of them.

    ``same_ok``: the runtime binds one device buffer for the identical memory passed twice; ``mixed_ok``:
    also when one parameter is readonly and the other written (WebGPU refuses to bind one buffer both
    read-only and read-write in a dispatch)."""
    host = [a for a in prepared if isinstance(a, BufferArg) and a.is_host and a.nbytes]
    if len(host) < 2:
        return
    for j, b in enumerate(host):
        for a in host[:j]:
            if a.info.readonly and b.info.readonly:
                continue
            if not (a.ptr < b.ptr + b.nbytes and b.ptr < a.ptr + a.nbytes):
                continue
            written = a if not a.info.readonly else b
            if same_ok and (a.ptr, a.nbytes) == (b.ptr, b.nbytes):
                if mixed_ok or a.info.readonly == b.info.readonly:
                    continue
                raise LaunchError(
                    f"kernel '{kernel}': arguments '{a.name}' and '{b.name}' are the same host array, one readonly "
                    f"and one written ('{written.name}'); the {runtime} runtime cannot bind one buffer both "
                    "read-only and read-write. Pass separate arrays (e.g. a .copy())")
            raise LaunchError(
                f"kernel '{kernel}': arguments '{a.name}' and '{b.name}' are the same host memory (or overlapping "
                f"views of one array) and the kernel writes '{written.name}'; the {runtime} runtime copies each "
                "argument to the device separately, so the kernel would not see one memory and the copies back "
                "would overwrite each other. Pass separate arrays (e.g. a .copy()), or a device array")
