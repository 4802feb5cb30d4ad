"""The oracle the differential fuzzer compares every backend against: the IR interpreter
(``polykern.interpreter``) judging programs. ``prepare(kernel)`` gives its ``Program`` for a kernel's IR
after the default passes, refusing an inexact value where a backend's allowed error could change the
control flow; ``interpret(kernel, args, grid, block)`` runs one launch and returns its ``Result`` (every
buffer, and what the comparison may leave unchecked). An ``OracleError`` (``errors.InterpretError``) is a
program without a single meaning.
"""
from __future__ import annotations

from ..interpreter.program import INEXACT_BINOPS, INEXACT_CALLS, OracleError, Program, Result, interpret, prepare

__all__ = ["INEXACT_BINOPS", "INEXACT_CALLS", "OracleError", "Program", "Result", "prepare", "interpret"]
