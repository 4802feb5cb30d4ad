"""Loops and counters in the bounds proof (:mod:`polykern.passes.bounds_proof`): which locals are
assigned where, locals that only shrink (``v //= c``, ``v >>= c``), a ``for`` variable's range, and a
block's *counters* (``k = init`` ... ``while k < X: ...; k += c``) with their facts inside their loop.

:class:`LoopFacts` is a part of :class:`polykern.passes.bounds_walk.Prover`: it reads and sets the
prover's state (``fn``, ``scalars``, ``facts``, ``counter_inits``, ``frozen``, ``loop_vars``, ``version``)
and calls its bounds and facts (``bound``, ``stable``, ``add_fact``, ``learn_in``).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..ir import nodes as ir
from ..ir.types import ScalarType
from .bounds_poly import MAX_ALTS, Range, const, fit, padd

__all__ = ["LoopFacts"]


class LoopFacts:
    """The prover's loop and counter reasoning (a part of ``Prover``)."""

    def shrinking_locals(self, fn: ir.Function) -> set:
        """Locals assigned once at the top level and otherwise only ``v = v // c`` / ``v = v >> c``
        (the halving step of a tree reduction): their values stay in ``[0, first value]`` when the
        first value is ``>= 0``."""
        top = [s.name for s in fn.body if isinstance(s, ir.Assign)]
        out = set()
        for name in {n for n in top if top.count(n) == 1}:
            others = [s for s in ir.walk_stmts(fn.body) if isinstance(s, ir.Assign) and s.name == name
                      and s not in fn.body]
            if (name not in self.scalars and isinstance(fn.locals.get(name), ScalarType)
                    and all(isinstance(s.value, ir.BinOp) and s.value.op in ("floordiv", "shr")
                            and isinstance(s.value.a, ir.Var) and s.value.a.name == name
                            and isinstance(s.value.b, ir.Const) and int(s.value.b.value) >= (s.value.op == "floordiv")
                            for s in others)
                    and not any(isinstance(s, ir.For) and s.var == name for s in ir.walk_stmts(fn.body))):
                out.add(name)
        return out

    def count_assignments(self, stmts, counts, loop_assigned, loops):
        """Assignments per variable (a for variable counts twice); those inside a loop."""
        for s in stmts:
            if isinstance(s, ir.Assign):
                counts[s.name] = counts.get(s.name, 0) + 1
                if loops:
                    loop_assigned.add(s.name)
            elif isinstance(s, ir.If):
                self.count_assignments(s.then, counts, loop_assigned, loops)
                self.count_assignments(s.orelse, counts, loop_assigned, loops)
            elif isinstance(s, (ir.For, ir.While)):
                if isinstance(s, ir.For):
                    counts[s.var] = counts.get(s.var, 0) + 2
                self.count_assignments(s.body, counts, loop_assigned, loops + 1)

    def assigned_in(self, stmts) -> set:
        counts: Dict[str, int] = {}
        self.count_assignments(stmts, counts, set(), 0)
        return set(counts)

    def for_range(self, s: ir.For) -> None:
        """In ``s``'s body (a ``for`` with a constant positive step, its variable not assigned there): the
        variable in ``[start, stop-1]``."""
        lo, hi = self.bound(s.start), self.bound(s.stop)
        t = self.fn.locals.get(s.var)
        if (s.step > 0 and s.var not in self.assigned_in(s.body) and lo is not None and hi is not None
                and isinstance(t, ScalarType)):
            # [start, stop-1], the machine values: start and stop fit, and t + step never wraps
            self.facts[-1][s.var] = Range([
                (a[0], padd(b[1], const(-1)), a[2] + b[2] + fit(a[0], a[1], t) + fit(b[0], b[1], t)
                 + [padd(const(t.max_value() - s.step + 1), b[1], -1)])
                for a in lo.alts for b in hi.alts])
            self.loop_vars.add(s.var)
            self.version += 1

    def enter_while(self, s: ir.While, counters: Dict[int, str]) -> Optional[str]:
        """Entering ``s``'s body: when it is a counter's loop (:meth:`counters`), the counter's facts there
        (:meth:`count_in`); return the counter (None: none)."""
        k = counters.get(id(s))
        init = self.counter_inits.pop(k, None) if k is not None else None
        self.version += init is not None
        if init is not None:
            self.count_in(s, k, init)
        return k

    def counters(self, stmts: List[ir.Stmt]) -> Dict[int, str]:
        """The counters of this block (:mod:`polykern.passes.bounds_proof`): {id(first assignment): name, id(its while
        loop): name}. The first value is the block's one assignment of the name before the loop;
        nothing else before the loop's increment assigns it."""
        out: Dict = {}
        for i, s in enumerate(stmts):
            if not (isinstance(s, ir.While) and s.body and isinstance(s.body[-1], ir.Assign)):
                continue
            inc = s.body[-1]
            k, v = inc.name, inc.value
            if not (isinstance(v, ir.BinOp) and v.op == "add" and isinstance(v.a, ir.Var) and v.a.name == k
                    and isinstance(v.b, ir.Const) and int(v.b.value) > 0):
                continue
            t = self.fn.locals.get(k)
            if not (isinstance(t, ScalarType) and t.is_int and not t.is_bool) or k in self.scalars:
                continue
            before = [j for j, x in enumerate(stmts[:i]) if isinstance(x, ir.Assign) and x.name == k]
            others = self.assigned_in(s.body[:-1]) | self.assigned_in(
                [x for j, x in enumerate(stmts[:i]) if not (j in before[:1])])
            if len(before) == 1 and k not in others and _counter_bound(s.cond, k) is not None:
                out[id(stmts[before[0]])] = k
                out[id(s)] = k
        return out

    def count_in(self, loop: ir.While, k: str, init: ir.Expr) -> None:
        """In ``loop``'s body (a counter's loop): k >= its first value (it only grows), k < X from the
        condition (nothing before the increment assigns k or X's variables), and X + c - 1 fits k's
        type (so the increments never wrap)."""
        t = self.fn.locals[k]
        step = int(loop.body[-1].value.b.value)
        x, gap = _counter_bound(loop.cond, k)
        start, limit = self.bound(init), self.bound(x)
        body = loop.body[:-1]
        if start is None or limit is None or not self.stable(x) or (
                any(isinstance(v, ir.Var) and v.name in self.assigned_in(body) for v in ir.walk_expr(x))):
            return
        wraps = [[padd(const(t.max_value() - step + gap), h, -1)] + fit(lo, h, x.type) + asm
                 for lo, h, asm in limit.alts]
        self.add_fact(ir.Var(k, t), [(lo, None, asm + fit(lo, hi, t) + w)
                                     for lo, hi, asm in start.alts for w in wraps][:MAX_ALTS])
        self.learn_in(loop.cond, True, body)
        self.frozen.add(k)
        self.version += 1


def _counter_bound(cond: ir.Expr, k: str) -> Optional[Tuple[ir.Expr, int]]:
    """(X, gap) when ``cond`` is ``k < X`` (gap 1) or ``k <= X`` (gap 0), either way round."""
    if not isinstance(cond, ir.BinOp):
        return None
    a, b, op = cond.a, cond.b, cond.op
    if op in ("gt", "ge"):
        a, b, op = b, a, {"gt": "lt", "ge": "le"}[op]
    if op in ("lt", "le") and isinstance(a, ir.Var) and a.name == k:
        return b, 1 if op == "lt" else 0
    return None

