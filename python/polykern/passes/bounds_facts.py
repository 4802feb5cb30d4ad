"""Facts from conditions in the bounds proof (:mod:`polykern.passes.bounds_proof`): what ``if``/``else``,
``and``/``or`` and an early exit tell about the values on their path (``a < b`` bounds ``a`` by ``b`` and
``b`` by ``a``, ``!=`` trims an end of a range), in scopes pushed and popped with the walk.

:class:`ConditionFacts` is a part of :class:`polykern.passes.bounds_walk.Prover`: it reads and sets the
prover's state (``facts``, ``chain_facts``, ``empties``, ``mutable``, ``version``) and calls its bounds
(``bound``, ``_bound``) and ``assigned_in``.
"""
from __future__ import annotations

from typing import List, Optional

from ..ir import nodes as ir
from ..ir.printer import expr_str
from ..ir.types import ScalarType
from .bounds_exprs import int_minmax
from .bounds_poly import Poly, Range, const, fit, padd

__all__ = ["ConditionFacts"]


class ConditionFacts:
    """The prover's facts from conditions, in scopes (a part of ``Prover``)."""

    def exact(self, e: ir.Expr) -> Optional[Poly]:
        """The value of ``e`` as one polynomial of launch symbols (no range), else None."""
        r = self._bound(e) if isinstance(e.type, ScalarType) and e.type.is_int else None
        if r is not None and len(r.alts) == 1 and r.alts[0][0] == r.alts[0][1] and not r.alts[0][2]:
            return r.alts[0][0]
        return None

    def stable(self, e: ir.Expr) -> bool:
        """Whether ``e`` keeps its value where the fact is used: no memory, no variable assigned there."""
        for x in ir.walk_expr(e):
            if isinstance(x, (ir.Load, ir.Atomic, ir.Call, ir.Subgroup)) and not int_minmax(x):
                return False
            if isinstance(x, ir.Var) and x.name in self.mutable:
                return False
        return True

    def learn_in(self, cond: ir.Expr, positive: bool, region: List[ir.Stmt]) -> None:
        """Facts from ``cond`` being ``positive``, for the statements ``region`` (they hold there
        when none of their variables is assigned in it)."""
        self.mutable = self.assigned_in(region)
        self.learn(cond, positive)

    def learn(self, cond: ir.Expr, positive: bool) -> None:
        if isinstance(cond, ir.UnaryOp) and cond.op == "not":
            return self.learn(cond.a, not positive)
        if isinstance(cond, ir.BinOp) and cond.op in ("land", "lor"):
            if (cond.op == "land") == positive:  # a and b holds / a or b fails: both parts
                self.learn(cond.a, positive)
                self.learn(cond.b, positive)
            return
        if not (isinstance(cond, ir.BinOp) and cond.op in ir.BINOPS_CMP and cond.a.type.is_int
                and not cond.a.type.is_bool):
            return
        op = cond.op if positive else {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne",
                                       "ne": "eq"}[cond.op]
        if op == "eq":
            return
        a, b = cond.a, cond.b
        if op in ("gt", "ge"):  # b < a, b <= a
            a, b, op = b, a, {"gt": "lt", "ge": "le"}[op]
        if op == "ne":
            for x, y in ((a, b), (b, a)):
                p = self.exact(y)
                r = self.bound(x) if p is not None and self.stable(x) else None
                if r is not None:
                    alts = [(padd(lo, const(1)) if lo == p else lo, padd(hi, const(-1)) if hi == p else hi,
                             asm + fit(lo, hi, x.type) + fit(p, p, y.type))
                            for lo, hi, asm in r.alts if lo == p or hi == p]
                    if alts:
                        self.add_fact(x, alts)
            return
        gap = 1 if op == "lt" else 0
        if not (self.stable(a) and self.stable(b)):
            return
        pb = self.exact(b)  # a <= b - gap (b's upper bound when b is not one polynomial)
        self.add_fact(a, [(None, padd(pb, const(-gap)), fit(pb, pb, b.type)) if pb is not None
                          else (None, (b, -gap), [])])
        pa = self.exact(a)  # b >= a + gap
        self.add_fact(b, [(padd(pa, const(gap)), None, fit(pa, pa, a.type)) if pa is not None
                          else ((a, gap), None, [])])

    def add_fact(self, e: ir.Expr, alts) -> None:
        if self.exact(e) is not None:
            return
        if isinstance(e, ir.BinOp) and e.op in ("add", "sub"):
            self.chain_facts[-1].append(e)
        self.version += 1
        key = expr_str(e)
        scope = self.facts[-1]
        old = scope.get(key)
        scope[key] = Range(alts + (old.alts if old else []))
        r = self.bound(e)
        if r is not None:  # the path is unreachable when this range is empty
            self.empties[-1].extend(padd(lo, hi, -1) for lo, hi, asm in r.alts[:1] if not asm)

    def push(self):
        self.version += 1
        self.facts.append({})
        self.chain_facts.append([])
        self.empties.append([])

    def pop(self):
        self.version += 1
        self.facts.pop()
        self.chain_facts.pop()
        self.empties.pop()

