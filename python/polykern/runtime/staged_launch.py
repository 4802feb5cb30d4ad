"""One staged kernel launch shared by the runtimes (docs/internals.md "Runtime kernel handles").

A runtime's kernel class derives from :class:`StagedLaunch` and implements only the hooks for what its
device does differently; the stages and their order are fixed here, so a check added to a stage applies
to every runtime built on it:

1. ``check_args`` (launch.py): every argument and the grid/block, a LaunchError before anything else;
   then :meth:`StagedLaunch.route` picks the kernel handle that runs the rest (itself, or, on a runtime
   with several devices, the same kernel on the device the arrays live on);
2. ``check_host_overlaps`` (host_aliasing.py): overlapping host arguments the kernel writes (not on a
   runtime that uses host memory in place, ``copies_host = False``);
3. :meth:`StagedLaunch.limits`: the device's grid/block/shared-memory limits (LaunchError);
4. :meth:`StagedLaunch.prepare`: per-launch setup that owns nothing (stream, queue, pipeline lookup);
5. under :meth:`StagedLaunch.exclusive` (a context manager; none by default), in a ``try``:
   bind each argument in order: a device array through :meth:`bind_device`; a host array through
   :meth:`stage_in`, once per distinct ``(pointer, nbytes)`` (the same memory passed twice is one device
   copy, written back if any of its parameters is written); a scalar through :meth:`bind_scalar`;
   then :meth:`dispatch`, then :meth:`stage_out` with the host copies a kernel parameter writes;
6. any exception goes through :meth:`launch_failed` (the runtime's error mapping, e.g. to DeviceError);
7. :meth:`release` in ``finally``, whether the launch succeeded or not.

Fast paths for repeated launches (a kept command buffer, a prepared argument packer) stay in front of
``__call__`` in the runtime and fall back to it for anything they do not handle.
"""
from __future__ import annotations

import contextlib
from typing import Any, ContextManager, Dict, List, Optional, Tuple

from .host_aliasing import check_host_overlaps
from .launch import BufferArg, ScalarArg, check_args

__all__ = ["StagedLaunch", "Launch", "HostCopy", "STAGES"]

#: The stages in the order every launch runs them (tests/test_staged_launch.py checks it).
STAGES = ("check_args", "route", "check_host_overlaps", "limits", "prepare", "bind", "dispatch", "stage_out", "release")


class HostCopy:
    """The device copy of one host memory range ``(ptr, nbytes)`` in one launch."""
    __slots__ = ("arg", "handle", "nbytes", "writable")

    def __init__(self, arg: BufferArg, handle: Any):
        self.arg, self.handle, self.nbytes, self.writable = arg, handle, arg.nbytes, False


class Launch:
    """One launch's record, passed to every hook; a runtime may keep its own per-launch state on it."""

    def __init__(self, grid: Tuple[int, int, int], block: Tuple[int, int, int], prepared: List[Any], note: Any = None):
        self.grid, self.block, self.prepared = grid, block, prepared
        self.note = note  # what the runtime's fast path passed to :meth:`StagedLaunch.staged` (e.g. its key)
        self.bindings: List[Any] = []  # per argument, in order: its device handle or its scalar value
        self.host_copies: Dict[Tuple[int, int], HostCopy] = {}

    @property
    def written_copies(self) -> List[HostCopy]:
        """Host copies some written parameter is bound to (those :meth:`StagedLaunch.stage_out` copies back)."""
        return [hc for hc in self.host_copies.values() if hc.writable]


class StagedLaunch:
    """Base of a runtime's kernel handle: ``kernel(*args, grid=, block=)`` runs the fixed stages.

    A subclass sets ``info`` (the FunctionInfo) and ``runtime`` (its name in messages) and implements
    :meth:`bind_device`, :meth:`stage_in` and :meth:`dispatch`; the other hooks have defaults."""

    runtime: str = "?"
    #: the same host memory passed for two parameters is bound as one device copy (host_aliasing.py)
    same_host_ok: bool = True
    #: False where the kernel uses host arrays in place (the CPU): they are bound through
    #: :meth:`bind_device` and overlapping ones are one memory to the kernel, so no overlap check
    copies_host: bool = True

    def __call__(self, *args: Any, grid=None, block=None) -> None:
        self.staged(args, grid, block)

    def staged(self, args: Tuple[Any, ...], grid=None, block=None, note: Any = None) -> None:
        """The full launch (a runtime's fast path calls this for what it does not handle; ``note``
        reaches the hooks as ``launch.note``)."""
        grid3, block3, prepared = check_args(self.info, args, grid, block)
        self.route(prepared)._run_checked(grid3, block3, prepared, note)

    def _run_checked(self, grid3: Tuple[int, int, int], block3: Tuple[int, int, int], prepared: List[Any],
                     note: Any) -> None:
        """The stages after ``check_args`` and ``route``, on the kernel handle ``route`` chose."""
        if self.copies_host:
            check_host_overlaps(self.info.name, self.runtime, prepared, same_ok=self.same_host_ok)
        launch = Launch(grid3, block3, prepared, note)
        self.limits(launch)
        self.prepare(launch)
        with self.exclusive(launch):
            try:
                for a in prepared:
                    launch.bindings.append(self._bind(launch, a))
                self.dispatch(launch)
                self.stage_out(launch, launch.written_copies)
            except BaseException as e:
                mapped = self.launch_failed(launch, e)
                if mapped is not None and mapped is not e:
                    raise mapped from e
                raise
            finally:
                self.release(launch)

    def _bind(self, launch: Launch, a: Any) -> Any:
        if isinstance(a, ScalarArg):
            return self.bind_scalar(launch, a)
        if not self.copies_host or self.is_device(a):
            return self.bind_device(launch, a)
        key = (a.ptr, a.nbytes)
        hc = launch.host_copies.get(key)
        if hc is None:
            hc = launch.host_copies[key] = HostCopy(a, self.stage_in(launch, a))
        hc.writable = hc.writable or not a.info.readonly
        return hc.handle

    # ------------------------------------------------------------ hooks
    def route(self, prepared: List[Any]) -> "StagedLaunch":
        """The kernel handle that runs a launch with the checked arguments ``prepared`` (default: this one;
        a LaunchError where the arguments cannot run together, e.g. arrays on two devices)."""
        return self

    def limits(self, launch: Launch) -> None:
        """Raise a LaunchError where ``launch.grid``/``launch.block`` exceed the device's limits."""

    def prepare(self, launch: Launch) -> None:
        """Per-launch setup that needs no release (the current stream, a pipeline)."""

    def exclusive(self, launch: Launch) -> ContextManager[Any]:
        """Held from the first binding to the release (e.g. a device lock)."""
        return contextlib.nullcontext()

    def is_device(self, arg: BufferArg) -> bool:
        """Whether ``arg`` is bound as device memory (:meth:`bind_device`) rather than copied in."""
        return not arg.is_host

    def bind_device(self, launch: Launch, arg: BufferArg) -> Any:
        """The device handle of a device-memory argument; a LaunchError for memory this runtime cannot use."""
        raise NotImplementedError

    def stage_in(self, launch: Launch, arg: BufferArg) -> Any:
        """A device copy of host argument ``arg`` (``arg.nbytes`` bytes at ``arg.array``): its handle.
        Whatever it allocates must be recorded on ``launch`` for :meth:`release`."""
        raise NotImplementedError

    def bind_scalar(self, launch: Launch, arg: ScalarArg) -> Any:
        """The value passed for a scalar argument (its ABI conversion)."""
        return arg.value

    def dispatch(self, launch: Launch) -> None:
        """Run the kernel with ``launch.bindings``."""
        raise NotImplementedError

    def stage_out(self, launch: Launch, copies: List[HostCopy]) -> None:
        """Copy ``copies`` (the host copies a parameter writes) back to their host arrays."""

    def launch_failed(self, launch: Launch, error: BaseException) -> Optional[BaseException]:
        """The exception to raise for ``error`` (None or ``error`` itself: re-raise it as it is)."""
        return None

    def release(self, launch: Launch) -> None:
        """Give back what the launch borrowed; always called, after success or failure."""
