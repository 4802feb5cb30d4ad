"""Which integer expressions of a kernel are provably multiples of a power of two: lets the CUDA
lowering use an instruction with an alignment rule (``ldmatrix``: 16-byte rows) only where every
execution meets it, without a run-time check.

A local is a multiple of ``m`` when every value assigned to it is (a ``for`` variable: its start and
step); parameters, loads and anything else are not known. ``m`` is a power of two, so wrapping
integer arithmetic (mod 2^32 or 2^64) keeps the property.
"""
from __future__ import annotations

from typing import Dict, List, Set

from polykern.ir import nodes as ir

__all__ = ["Divisibility"]


class Divisibility:
    def __init__(self, fn: ir.Function):
        self.defs: Dict[str, List[ir.Expr]] = {}
        for s in ir.walk_stmts(fn.body):
            if isinstance(s, ir.Assign):
                self.defs.setdefault(s.name, []).append(s.value)
            elif isinstance(s, ir.For):
                self.defs.setdefault(s.var, []).append(s.start)
                self.defs[s.var].append(ir.Const(s.step, s.start.type))
        self._open: Set[str] = set()

    def multiple_of(self, e: ir.Expr, m: int) -> bool:
        """Whether ``e`` (an integer expression) is a multiple of ``m`` (a power of two) wherever it runs."""
        assert m > 0 and m & (m - 1) == 0, m
        if isinstance(e, ir.Const):
            return isinstance(e.value, int) and not isinstance(e.value, bool) and e.value % m == 0
        if isinstance(e, ir.Var):
            if e.name not in self.defs or e.name in self._open:
                return False
            self._open.add(e.name)  # a definition through itself proves nothing
            try:
                return all(self.multiple_of(v, m) for v in self.defs[e.name])
            finally:
                self._open.discard(e.name)
        if isinstance(e, ir.Cast):  # integer to integer keeps the low bits; through bool_ it is 0 or 1
            return e.to.is_int and e.a.type.is_int and self.multiple_of(e.a, m)
        if isinstance(e, ir.BinOp):
            if e.op in ("add", "sub"):
                return self.multiple_of(e.a, m) and self.multiple_of(e.b, m)
            if e.op in ("mul", "and"):
                return self.multiple_of(e.a, m) or self.multiple_of(e.b, m)
            if e.op == "shl" and isinstance(e.b, ir.Const) and 0 <= e.b.value < 64:
                return self.multiple_of(e.a, max(1, m >> e.b.value))
        return False
