"""The statement walk of the bounds proof (:mod:`polykern.passes.bounds_proof`): :class:`Prover` visits a
function's statements in order, keeps what is known where (definitions, counters, the facts of the
conditions on the path) and records, for each access it can bound, the launch-time condition for it to be
in bounds. Its parts: :class:`~polykern.passes.bounds_exprs.ExprBounds` (bounds of expressions),
:class:`~polykern.passes.bounds_facts.ConditionFacts` (conditions -> facts) and
:class:`~polykern.passes.bounds_loops.LoopFacts` (loops and counters).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..ir import nodes as ir
from ..ir.types import ArrayType, BufferType, ScalarType
from .bounds_exprs import ExprBounds, int_minmax
from .bounds_facts import ConditionFacts
from .bounds_loops import LoopFacts
from .bounds_poly import Clause, Poly, Range, always_holds, const, is_const, padd, pmul, sym

__all__ = ["Prover"]


class Prover(ExprBounds, ConditionFacts, LoopFacts):
    """What is known where the walk stands, and the conditions of the accesses it proved."""

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.scalars = {p.name: i for i, p in enumerate(fn.params)
                        if isinstance(p.type, ScalarType) and p.type.is_int}
        self.buffers = {p.name: i for i, p in enumerate(fn.params) if isinstance(p.type, BufferType)}
        counts: Dict[str, int] = {}
        loop_assigned: set = set()
        self.count_assignments(fn.body, counts, loop_assigned, 0)
        self.once = {n for n, c in counts.items() if c == 1 and n not in loop_assigned}
        self.once_in_loop = {n for n, c in counts.items() if c == 1 and n in loop_assigned}
        self.assigned = set(counts)
        self.def_ranges: Dict[str, "Range"] = {}  # defined from a counter's first value: bounded there
        self.counter_inits: Dict[str, ir.Expr] = {}  # counters before their loop: their first value
        self.frozen: set = set()  # counters inside their loop, before the increment (constant there)
        self.shrinking = self.shrinking_locals(fn)
        self.inits: Dict[str, ir.Expr] = {}  # shrinking locals: their top-level first value, once seen
        self.resolving: set = set()  # conditions being bounded (no cycles between two of them)
        self.defs: Dict[str, ir.Expr] = {}  # single top-level definitions seen so far
        self.facts: List[Dict[str, Range]] = [{}]  # expr_str -> extra alternatives (scoped)
        self.chain_facts: List[List[ir.Expr]] = [[]]  # sums a condition bounded (scoped)
        self.empties: List[List[Poly]] = [[]]  # ranges on the path that make it unreachable when < 0
        self.clauses: List[Tuple[object, Clause, str]] = []  # (access node, clause, array)
        self.loop_vars: set = set()  # for variables inside their loop (facts hold their range)
        self.mutable: set = set()  # variables assigned where the facts being learned hold
        self.version = 0  # bumped whenever facts, definitions or scopes change (bound's memo)
        self.memo: Dict[Tuple[int, int], Tuple[Optional[Range], ir.Expr]] = {}

    def access(self, node, base: ir.Var, index: ir.Expr) -> None:
        clause = self.clause(base, index)
        if clause is not None:
            self.clauses.append((node, clause, base.name))

    def copy(self, s: ir.CopyAsync) -> None:
        """A pk.copy_async is proven when both of its groups are."""
        both = [self.clause(s.dst, s.dst_k, s.count), self.clause(s.src, s.src_k, s.count)]
        if all(c is not None for c in both):
            self.clauses.extend((s, c, b.name) for c, b in zip(both, (s.dst, s.src)))

    def clause(self, base: ir.Var, index: ir.Expr, n: int = 1) -> Optional[Clause]:
        """The launch-time condition for elements ``n*index .. n*index + n-1`` of ``base`` to be in bounds
        (and to fit the index's type), or None when the index cannot be bounded."""
        t = base.type
        if isinstance(t, ArrayType):
            if t.dynamic:
                return None
            length = const(t.size)
        elif base.name in self.buffers:
            length = sym(f"L{self.buffers[base.name]}")
        else:
            return None
        r = self.bound(index)
        if r is None:
            return None
        tmax = const(index.type.max_value())
        clause: Clause = []
        for lo, hi, asm in r.alts:
            lo, hi = pmul(lo, const(n)), padd(pmul(hi, const(n)), const(n - 1))
            alt = [lo, padd(padd(length, const(-1)), hi, -1), padd(tmax, hi, -1)] + asm
            alt = [p for k, p in enumerate(alt) if not always_holds(p) and p not in alt[:k]]
            if any(is_const(p) is not None for p in alt):
                continue  # a constant < 0: this alternative never holds
            clause.append(alt)
        if not clause:
            return None
        for scope in self.empties:
            for p in scope:  # lo - hi - 1 >= 0: lo > hi
                clause.append([padd(p, const(-1))])
        return clause

    def expr(self, e: ir.Expr) -> None:
        """The accesses in ``e``; the right operand of ``and``/``or`` and the arms of a select under
        what their evaluation implies."""
        if isinstance(e, ir.BinOp) and e.op in ("land", "lor"):
            self.expr(e.a)
            self.under(e.a, e.op == "land", e.b)
            return
        if isinstance(e, ir.Select):
            self.expr(e.cond)
            self.under(e.cond, True, e.a)
            self.under(e.cond, False, e.b)
            return
        for c in e.children():
            self.expr(c)
        if isinstance(e, (ir.Load, ir.Atomic)):
            self.access(e, e.base, e.index)

    def under(self, cond: ir.Expr, positive: bool, e: ir.Expr) -> None:
        self.push()
        self.learn_in(cond, positive, [])  # nothing is assigned inside an expression
        self.expr(e)
        self.pop()

    def fixed(self, e: ir.Expr) -> bool:
        """Whether ``e`` has the same value wherever it is re-evaluated: only unassigned scalar
        parameters, registers, constants and definitions (no memory)."""
        for x in ir.walk_expr(e):
            if isinstance(x, (ir.Load, ir.Atomic, ir.Call, ir.Subgroup)) and not int_minmax(x):
                return False
            if isinstance(x, ir.Var) and not (x.name in self.defs or x.name in self.def_ranges
                                              or x.name in self.counter_inits or x.name in self.frozen
                                              or (x.name in self.scalars and x.name not in self.assigned)):
                return False
        return True

    def block(self, stmts: List[ir.Stmt], top: bool = False) -> None:
        pushed, defined, ranged = 0, [], []
        counters = self.counters(stmts)
        for s in stmts:
            if isinstance(s, ir.Assign):
                self.expr(s.value)
                once = s.name in self.once or s.name in self.once_in_loop
                if id(s) in counters and self.fixed(s.value):
                    self.counter_inits[s.name] = s.value  # k's value until its loop
                    self.version += 1
                elif (once and isinstance(self.fn.locals.get(s.name), ScalarType)
                        and self.fixed(s.value)):  # a definition, for the rest of this block
                    if any(isinstance(x, ir.Var) and x.name in self.counter_inits for x in ir.walk_expr(s.value)):
                        r = self.bound(s.value)  # bounded now, with the counter's first value
                        if r is not None:
                            self.def_ranges[s.name] = r
                            ranged.append(s.name)
                    else:
                        self.defs[s.name] = s.value
                        defined.append(s.name)
                    self.version += 1
                elif top and s.name in self.shrinking and self.fixed(s.value):
                    self.inits[s.name] = s.value
                    self.version += 1
            elif isinstance(s, ir.Store):
                self.expr(s.index)
                self.expr(s.value)
                self.access(s, s.base, s.index)
            elif isinstance(s, ir.ExprStmt):
                self.expr(s.expr)
            elif isinstance(s, ir.If):
                self.expr(s.cond)
                for branch, positive in ((s.then, True), (s.orelse, False)):
                    self.push()
                    self.learn_in(s.cond, positive, branch)
                    self.block(branch)
                    self.pop()
                if s.then and isinstance(s.then[-1], (ir.Return, ir.Continue, ir.Break)) and not s.orelse:
                    self.push()  # the rest of this block runs only when the condition failed
                    pushed += 1
                    self.learn_in(s.cond, False, stmts[stmts.index(s) + 1:])
            elif isinstance(s, ir.For):
                self.expr(s.start)
                self.expr(s.stop)
                self.push()
                self.for_range(s)
                self.block(s.body)
                self.loop_vars.discard(s.var)
                self.pop()
            elif isinstance(s, ir.While):
                self.expr(s.cond)
                self.push()
                k = self.enter_while(s, counters)
                self.block(s.body)
                self.frozen.discard(k)
                self.pop()
            elif isinstance(s, ir.MatrixOp):
                for a in s.args:
                    self.expr(a)
            elif isinstance(s, ir.CopyAsync):
                self.expr(s.dst_k)
                self.expr(s.src_k)
                self.copy(s)
        for _ in range(pushed):
            self.pop()
        for name in defined:
            del self.defs[name]
        for name in ranged:
            del self.def_ranges[name]
        for name in set(counters.values()):
            self.counter_inits.pop(name, None)  # a counter whose loop never came
        self.version += bool(defined or ranged or counters)
