"""The IR interpreter as a runtime: target kind ``interpret`` and ``POLYKERN_INTERPRET=1``
(docs/language.md "Debugging").

``pk.build(kernels, targets=["interpret"])`` gives a root whose ``interpret`` module runs each launch
on the IR interpreter (``polykern.interpreter``, the oracle the fuzzer judges backends with), in
this process, on the caller's host arrays: a data race, a read of shared memory no work-item wrote, an
access out of bounds, a barrier in divergent control flow are raised as
:class:`~polykern.errors.InterpretError` (``DataRaceError``, ``UninitializedReadError``) naming the
kernel line and the work-items; ``pk.debug_print`` prints in the order the work-items run. After the
launch the elements the kernel wrote are copied into the caller's arrays (the others are left as they
were), as a launch on the CPU runtime leaves them.

``POLYKERN_INTERPRET`` set to anything but "", "0", "false" (read on every build) makes ``pk.build``
build for ``interpret`` instead of the targets it is given (they are still parsed, so a typo is
still an error): every launch of the program goes to the interpreter and no code generator runs, as
``TRITON_INTERPRET`` does. An ``interpret`` module cannot be exported: it holds no code, only the
kernels' IR, which it runs in this process.

Unlike the oracle, the interpreter here runs what the oracle refuses to judge (an inexact value in a
condition: the interpreter computes it in float64 rounded to the type, one of the answers a backend may
give) and allows up to :data:`LOOP_BUDGET` loop iterations per launch.
"""
from __future__ import annotations

import os
import threading
from typing import List

from . import registry
from .runtime import kernel_output
from .capabilities import Capabilities
from .errors import LaunchError, PolykernError
from .kbin.function_info import FunctionInfo
from .runtime.host_aliasing import check_host_overlaps
from .interpreter.program import Program
from .ir.printer import function_str
from .runtime.launch import PORTABLE_MAX_GRID, BufferArg, check_args, check_grid_limits
from .module import DeviceModule
from .target import TargetKind

__all__ = ["KIND", "INTERPRET_ENV", "LOOP_BUDGET", "interpret_requested", "InterpretModule", "build",
           "ensure_registered"]

KIND = "interpret"
INTERPRET_ENV = "POLYKERN_INTERPRET"
#: Loop iterations one launch may run before the interpreter calls it a runaway (a device would hang).
LOOP_BUDGET = 100_000_000

INTERPRET_KIND = TargetKind(KIND, KIND, {}, doc="the IR interpreter: runs launches in this process on host "
                            "arrays, raising data races and reads of uninitialized shared memory "
                            "(docs/language.md \"Debugging\")",
                            # every fragment combination, every Hopper operation, asynchronous copies
                            # (it checks them), pk.debug_print
                            capabilities=Capabilities(matrix=lambda target, fn, stmt: None,
                                                      async_copy=lambda target: True,
                                                      hopper=lambda target: "", debug_print=True))


def interpret_requested() -> bool:
    """``POLYKERN_INTERPRET``: anything but unset, "", "0", "false" (any case) is true."""
    return os.environ.get(INTERPRET_ENV, "").strip().lower() not in ("", "0", "false")


class InterpretedKernel:
    """``kernel(*args, grid=..., block=...)`` on the interpreter (one launch at a time per kernel)."""

    def __init__(self, fn, info: FunctionInfo):
        self.info = info
        self.program = Program(fn, judge=False, loop_budget=LOOP_BUDGET)
        self._lock = threading.Lock()

    def __call__(self, *args, grid=None, block=None):
        name = self.info.name
        grid3, block3, prepared = check_args(self.info, args, grid, block)
        check_grid_limits(name, grid3, PORTABLE_MAX_GRID, "the interpreter (it keeps CUDA's grid limits)")
        check_host_overlaps(name, KIND, prepared)  # the interpreter works on a copy of each argument
        values = []
        for a in prepared:
            if not isinstance(a, BufferArg):
                values.append(a.value)
            elif a.array is None:
                raise LaunchError(f"kernel '{name}', argument '{a.name}': the interpreter runs on host arrays, got "
                                  f"memory on device {a.device[0]!r}; copy it to the host first")
            else:
                values.append(a.array)
        prints = kernel_output.prints(self.info)
        if prints:
            kernel_output.launching()
        try:
            with self._lock:
                result = self.program.run(values, grid3, block3)
        finally:
            if prints:
                kernel_output.launched()
        for a, p in zip(prepared, self.program.fn.params):
            if isinstance(a, BufferArg) and not a.info.readonly:
                wrote = result.written[p.name]
                a.array[wrote] = result.buffers[p.name][wrote]

    def __repr__(self) -> str:
        return f"<InterpretedKernel {self.info.signature()}>"


class InterpretModule(DeviceModule):
    """The kernels' IR (after the pipeline's passes), run by the interpreter; its payload and source are
    the IR's text (``inspect_source("ir")``). Not exportable."""

    is_runnable = True

    def __init__(self, funcs: List):
        text = "\n".join(function_str(f) for f in funcs)
        super().__init__(KIND, text.encode("utf-8"), "ir", {f.name: FunctionInfo.from_ir(f) for f in funcs},
                         {"ir": text})
        self._funcs = {f.name: f for f in funcs}

    def save_to_bytes(self) -> bytes:
        raise PolykernError("an 'interpret' module cannot be exported: it holds the kernels' IR, which the "
                            f"interpreter runs in this process (targets=['interpret'] or {INTERPRET_ENV}=1); "
                            "build for a real target (llvm, cuda, ...) to write an artifact")

    def _get_function(self, info: FunctionInfo):
        return InterpretedKernel(self._funcs[info.name], info)


def build(funcs: List, target) -> InterpretModule:
    return InterpretModule(funcs)


_lock = threading.Lock()


def ensure_registered() -> None:
    """Register the ``interpret`` target kind (in the registry in use: also an isolated one) if missing."""
    with _lock:
        if registry.get(f"target.build.{KIND}") is None:
            _register()


def _register() -> None:
    snap = registry.snapshot()
    try:
        INTERPRET_KIND.register()
        registry.register(f"target.build.{KIND}", build)
    except BaseException:
        registry.restore(snap)
        raise


