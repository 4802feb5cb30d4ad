"""Launch-time proofs of in-bounds accesses (the CPU runtimes' default safety, docs/correctness.md 5.5).

For each access ``base[index]`` (load, store, atomic, group lane, both groups of a ``pk.copy_async``) to
a buffer or a fixed-size shared or local array, the pass bounds the index by polynomials (rational
coefficients) over launch *symbols*: integer scalar arguments ``a<i>``, buffer lengths ``L<i>``,
``block[d]`` ``b<d>`` and ``grid[d]`` ``g<d>``, and an integer argument divided by a constant ``c``:
``a // c`` as ``q<i>_<c>``, ``a >> s`` as ``r<i>_<2**s>`` (exact values the launch check computes: a
range such as ``[(w-3)/4, w/4]`` would lose ``q < w4`` in ``y*w4 + q - w4``). What it knows:

- ``local_id(d)`` in ``[0, b<d>-1]``, ``group_id(d)`` in ``[0, g<d>-1]``, ``global_id(d)`` in
  ``[0, g<d>*b<d>-1]``, ``local_size``/``num_groups`` exactly;
- a local assigned once, at the top level (outside loops and branches): its definition, re-bounded
  where it is used; a local assigned once at the top level and otherwise only ``v //= c`` / ``v >>= c``:
  ``[0, first value]``;
- a ``for`` variable with a constant positive step, not assigned in its body: ``[start, stop-1]``;
- a local assigned once inside a loop: its definition, for the rest of that loop body's block;
- a *counter*: a local ``k`` set once at the top of a block (``k = init``) and otherwise only by
  ``k += c`` (``c > 0``) as the last statement of a ``while k < X`` loop later in that block: ``k`` is
  ``init`` until the loop (a local defined from it there is bounded with that value), and in the loop
  body ``[init, X-1]`` (it only grows; ``X + c - 1`` must fit its type, so ``k + c`` never wraps);
- ``x // y`` by a variable ``y >= 1`` of ``x >= 0``: ``[0, x]``;
- integer ``min``/``max``: either operand's upper (``min``) or lower (``max``) bound, the smaller
  (larger) lower (upper) bound under the assumption that it is that one;
- the conditions an access runs under: ``if``/``else``, the operands of ``and``/``or``, the rest of a
  block after ``if c: ... return`` (``continue``, ``break``); ``a < b`` bounds ``a`` by ``b`` (also when
  ``b`` is itself a variable: ``lid < step``) and ``b`` by ``a``, ``!=`` trims an end of a range, a
  condition on a sum serves a larger sum holding its terms (``t + tx < k`` for ``row*k + t + tx``); a
  condition holds where none of its variables is assigned;
- ``+ - *`` (a product needs its factors' lower bounds ``>= 0``), ``//`` and ``>>`` by positive
  constants, ``% c``, ``& c``, widening integer casts.

Each bound is one of a few *alternatives* ``(lo, hi, assumptions)``. A bound is of the index's true
value; a comparison sees the machine value: the two are combined only under *fit* assumptions (the
true value within the type, so that it is the machine value), and ``//``, ``>>``, ``%`` and casts
need their operand to fit. The final index must satisfy ``0 <= lo``, ``hi <= length-1`` and ``hi <=``
its type's maximum, so the machine index is the true one. An access is *proven* under its launch-time
condition: one alternative holds (all its polynomials ``>= 0``), or a range on its path is empty (it
cannot run). The pass marks proven nodes (:data:`PROVEN`, read by :mod:`polykern.passes.bounds_check`
to leave them unguarded); :func:`attach` records the conditions in ``Function.attrs`` (text format and
launch check: :mod:`polykern.runtime.launch_proof`, native/src/launch_proof.c).
"""
from __future__ import annotations

import os
from fractions import Fraction
from math import lcm
from typing import Dict, List, Optional, Tuple

from ..ir import nodes as ir
from ..ir.printer import expr_str
from ..ir.types import ArrayType, BufferType, ScalarType

__all__ = ["SAFE_KEY", "SAFE_VARIANT_KEY", "PROVEN", "ATTR", "ATTR_CLAUSE", "ATTR_AT", "Poly", "Clause", "prove",
           "encode", "attach", "all_proven"]

#: Registry key prefix: ``registry.register(SAFE_KEY + kind, True)`` declares that kernels of that target
#: kind run in the caller's own process (the CPU runtimes): their default build (pipeline.build with
#: ``bounds_check=None``) proves or checks every access.
SAFE_KEY = "bounds.safe_default."
#: Registry key prefix: ``registry.register(SAFE_VARIANT_KEY + kind, build)`` declares a target kind whose
#: runtime may find a CPU device (OpenCL: PoCL): the default build calls ``build(raw, safe, target)`` with
#: both forms of the kernels, and the runtime runs the safe form on a CPU device, the raw one elsewhere.
SAFE_VARIANT_KEY = "bounds.safe_variant."
PROVEN = "bounds_proven"  # attribute set on a proven Load/Store/Atomic node
ATTR = "bounds_proof"  # the attributes: polykern/runtime/launch_proof.py describes them
ATTR_CLAUSE = "bounds_proof_"  # + k
ATTR_AT = "bounds_proof_at_"  # + k
TEXT_LIMIT = 4000  # a longer condition is not recorded (its access stays checked)
MAX_ALTS = 4  # alternatives kept per bound (a min/max of several symbolic bounds)

# A polynomial: {sorted tuple of symbols: coefficient (int or Fraction)}; () is the constant term.
Poly = Dict[Tuple[str, ...], int]
# An alternative: polynomials that must all be >= 0. A clause: alternatives, one of which must hold.
Clause = List[List[Poly]]


def const(c: int) -> Poly:
    return {(): c} if c else {}


def sym(s: str) -> Poly:
    return {(s,): 1}


def padd(a: Poly, b: Poly, k: int = 1) -> Poly:
    out = dict(a)
    for m, c in b.items():
        v = out.get(m, 0) + k * c
        if v:
            out[m] = v
        else:
            out.pop(m, None)
    return out


def pmul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            out = padd(out, {tuple(sorted(ma + mb)): ca * cb})
    return out


def is_const(p: Poly) -> Optional[int]:
    return p.get((), 0) if all(m == () for m in p) else None


class Range:
    """Alternatives for the bounds of an integer value: each (lo, hi, assumptions)."""

    __slots__ = ("alts",)

    def __init__(self, alts):
        seen, out = set(), []
        for a in alts:  # distinct alternatives, the first (tightest known) first
            key = repr([sorted(p.items()) if isinstance(p, dict) else (id(p[0]), p[1]) if p else None
                        for p in a[:2]] + [sorted(sorted(p.items()) for p in a[2])])
            if key not in seen:
                seen.add(key)
                out.append(a)
        self.alts = out[:MAX_ALTS]


def _exact(p: Poly) -> Range:
    return Range([(p, p, [])])


class _Prover:
    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.scalars = {p.name: i for i, p in enumerate(fn.params)
                        if isinstance(p.type, ScalarType) and p.type.is_int}
        self.buffers = {p.name: i for i, p in enumerate(fn.params) if isinstance(p.type, BufferType)}
        counts: Dict[str, int] = {}
        loop_assigned: set = set()
        self._count(fn.body, counts, loop_assigned, 0)
        self.once = {n for n, c in counts.items() if c == 1 and n not in loop_assigned}
        self.once_in_loop = {n for n, c in counts.items() if c == 1 and n in loop_assigned}
        self.assigned = set(counts)
        self.def_ranges: Dict[str, "Range"] = {}  # defined from a counter's first value: bounded there
        self.counter_inits: Dict[str, ir.Expr] = {}  # counters before their loop: their first value
        self.frozen: set = set()  # counters inside their loop, before the increment (constant there)
        self.shrinking = self._shrinking(fn)
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

    def _shrinking(self, fn: ir.Function) -> set:
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

    def _count(self, stmts, counts, loop_assigned, loops):
        """Assignments per variable (a for variable counts twice); those inside a loop."""
        for s in stmts:
            if isinstance(s, ir.Assign):
                counts[s.name] = counts.get(s.name, 0) + 1
                if loops:
                    loop_assigned.add(s.name)
            elif isinstance(s, ir.If):
                self._count(s.then, counts, loop_assigned, loops)
                self._count(s.orelse, counts, loop_assigned, loops)
            elif isinstance(s, (ir.For, ir.While)):
                if isinstance(s, ir.For):
                    counts[s.var] = counts.get(s.var, 0) + 2
                self._count(s.body, counts, loop_assigned, loops + 1)

    # ------------------------------------------------------------ bounds of expressions
    def fact(self, key: str) -> List:
        out = []
        for scope in self.facts:
            if key in scope:
                out = scope[key].alts + out
        if key in self.resolving:
            return [a for a in out if not any(isinstance(x, tuple) for x in a[:2])]
        resolved = []
        self.resolving.add(key)
        for lo, hi, asm in out:  # (e, k): the other side's bound, plus k, evaluated here
            if isinstance(lo, tuple) or isinstance(hi, tuple):
                e, k = lo if isinstance(lo, tuple) else hi
                r = self.bound(e)
                for rlo, rhi, rasm in (r.alts if r else []):
                    rasm = rasm + fit(rlo, rhi, e.type)  # the comparison saw the machine value
                    if isinstance(lo, tuple):
                        resolved.append((padd(rlo, const(k)), hi, asm + rasm))
                    else:
                        resolved.append((lo, padd(rhi, const(k)), asm + rasm))
            else:
                resolved.append((lo, hi, asm))
        self.resolving.discard(key)
        return resolved

    def bound(self, e: ir.Expr) -> Optional[Range]:
        """Bounds of ``e`` where the analysis stands (memoized until what is known changes)."""
        key = (id(e), self.version)
        if key not in self.memo:
            self.memo[key] = (self._bound_now(e), e)  # e kept alive: its id stays its own
        return self.memo[key][0]

    def _bound_now(self, e: ir.Expr) -> Optional[Range]:
        if not (isinstance(e.type, ScalarType) and e.type.is_int):
            return None
        own = self._bound(e)
        if own is not None and len(own.alts) == 1 and own.alts[0][0] == own.alts[0][1] and not own.alts[0][2]:
            return own  # one exact value: no condition can narrow it
        facts = self.fact(expr_str(e))  # the innermost (tightest) first
        full = [a for a in facts + (own.alts if own else []) if a[0] is not None and a[1] is not None]
        mixed = [(lo if lo is not None else f[0], hi if hi is not None else f[1], asm + f[2] + fit(f[0], f[1], e.type))
                 for lo, hi, asm in facts if lo is None or hi is None for f in full]
        # two one-sided conditions (j >= 0 and j < n): both bound the machine value
        paired = [(lo[0], hi[1], lo[2] + hi[2]) for lo in facts if lo[0] is not None and lo[1] is None
                  for hi in facts if hi[0] is None and hi[1] is not None]
        nf = sum(1 for a in facts if a[0] is not None and a[1] is not None)
        out = full[:nf] + paired + mixed + full[nf:]
        return Range(out) if out else None

    def _bound(self, e: ir.Expr) -> Optional[Range]:
        if isinstance(e, ir.Const):
            return _exact(const(int(e.value)))
        if isinstance(e, ir.Var):
            if e.name in self.scalars and e.name not in self.assigned:
                return _exact(sym(f"a{self.scalars[e.name]}"))
            if e.name in self.defs:
                return self.bound(self.defs[e.name])
            if e.name in self.def_ranges:
                return self.def_ranges[e.name]
            if e.name in self.counter_inits:
                return self.bound(self.counter_inits[e.name])
            if e.name in self.inits:  # a shrinking local: [0, its first value]
                r = self.bound(self.inits[e.name])
                if r is None:
                    return None
                return Range([(const(0), hi, asm + [lo] + fit(lo, hi, e.type)) for lo, hi, asm in r.alts])
            return None
        if isinstance(e, ir.SpecialReg):
            d = e.dim
            b, g = sym(f"b{d}"), sym(f"g{d}")
            one = const(-1)
            return {"local_id": Range([(const(0), padd(b, one), [])]),
                    "group_id": Range([(const(0), padd(g, one), [])]),
                    "global_id": Range([(const(0), padd(pmul(g, b), one), [])]),
                    "local_size": _exact(b), "num_groups": _exact(g)}.get(e.kind)
        if isinstance(e, ir.Cast):
            src = e.a.type
            if not (isinstance(src, ScalarType) and src.is_int) or src.is_bool:
                return None
            t = e.to
            widen = t.bits > src.bits and (t.is_signed or not src.is_signed)
            r = self.bound(e.a) if (widen or t == src) else None
            return Range([(lo, hi, asm + fit(lo, hi, src)) for lo, hi, asm in r.alts]) if r else None
        if isinstance(e, ir.BinOp) and e.op in ("add", "sub", "mul"):
            chained = self.chain(e) if e.op != "mul" else []
            a, b = self.bound(e.a), self.bound(e.b)
            if a is None or b is None:
                return Range(chained) if chained else None
            out = chained
            for alo, ahi, aasm in a.alts:
                for blo, bhi, basm in b.alts:
                    if e.op == "add":
                        out.append((padd(alo, blo), padd(ahi, bhi), aasm + basm))
                    elif e.op == "sub":
                        out.append((padd(alo, bhi, -1), padd(ahi, blo, -1), aasm + basm))
                    else:
                        out.append(_mul(alo, ahi, blo, bhi, aasm + basm))
            out = [x for x in out if x is not None]
            return Range(out) if out else None
        if _int_minmax(e):
            return self._minmax(e)
        if isinstance(e, ir.BinOp) and e.op == "floordiv" and not isinstance(e.b, ir.Const):
            return self._quotient(e)
        if isinstance(e, ir.BinOp) and isinstance(e.b, ir.Const) and e.op in ("floordiv", "shr", "mod", "and"):
            c, t = int(e.b.value), e.type
            if e.op == "mod" and c > 0:  # srem/urem: in [0, c-1] for x >= 0 (x's true value), |x % c| < c
                r = self.bound(e.a)
                fits = [(const(0), const(c - 1), asm + [lo, padd(const(t.max_value()), hi, -1)])
                        for lo, hi, asm in (r.alts if r else [])]
                return Range(fits + [(const(0 if not t.is_signed else 1 - c), const(c - 1), [])])
            if e.op == "and" and c >= 0:
                return Range([(const(0), const(c), [])])
            if e.op == "shr" and 0 <= c < t.bits:
                c = 1 << c
            elif e.op != "floordiv" or c <= 0:
                return None
            if isinstance(e.a, ir.Var) and e.a.name in self.scalars and e.a.name not in self.assigned:
                # an argument divided by a constant: its exact value, a symbol of its own (launch_proof
                # evaluates it), so that ``y*w4 + q - w4`` under ``q < w4`` keeps its correlations
                letter = "q" if e.op == "floordiv" else "r"  # sdiv/udiv truncate, shifts floor
                return _exact(sym(f"{letter}{self.scalars[e.a.name]}_{c}"))
            r = self.bound(e.a)  # floor(x / c) of x's true value (it fits the type; x >= 0 for sdiv)
            if r is None:
                return None
            k = Fraction(1, c)
            low = 0 if e.op == "floordiv" else t.min_value()  # sdiv truncates: floor only from 0 up
            return Range([(padd(pmul(lo, const(k)), const(-(c - 1) * k)), pmul(hi, const(k)),
                           asm + [padd(lo, const(-low)), padd(const(t.max_value()), hi, -1)])
                          for lo, hi, asm in r.alts])
        return None

    def _quotient(self, e: ir.BinOp) -> Optional[Range]:
        """x // y for x >= 0 and y >= 1 (both fitting their type, so the division sees the true values):
        in [0, x / c] where c >= 1 is the least value y's lower bound takes (``64*g0``: 64), else [0, x]."""
        a, b = self.bound(e.a), self.bound(e.b)
        if a is None or b is None:
            return None
        out = []
        for alo, ahi, aasm in a.alts:
            for blo, bhi, basm in b.alts:
                c = max(1, _least(blo) or 1)
                out.append((const(0), pmul(ahi, const(Fraction(1, c))) if c > 1 else ahi,
                            aasm + basm + fit(alo, ahi, e.type) + fit(blo, bhi, e.type) + [alo, padd(blo, const(-1))]))
        return Range(out)

    def _minmax(self, e: ir.Call) -> Optional[Range]:
        """min(a, b) <= either operand's upper bound and >= the smaller lower bound (each alternative
        assumes which one that is); max the other way round. The operands' fit: the machine min/max
        of machine values is the true one."""
        a, b = self.bound(e.args[0]), self.bound(e.args[1])
        if a is None or b is None:
            return None
        t, lower = e.type, e.func == "min"
        out = []
        for alo, ahi, aasm in a.alts:
            for blo, bhi, basm in b.alts:
                asm = aasm + basm + fit(alo, ahi, t) + fit(blo, bhi, t)
                if lower:  # one of the upper bounds; the lower one that is the smaller
                    out += [(alo, h, asm + [padd(blo, alo, -1)]) for h in (ahi, bhi)]
                    out += [(blo, h, asm + [padd(alo, blo, -1)]) for h in (ahi, bhi)]
                else:
                    out += [(lo, ahi, asm + [padd(ahi, bhi, -1)]) for lo in (alo, blo)]
                    out += [(lo, bhi, asm + [padd(bhi, ahi, -1)]) for lo in (alo, blo)]
        return Range(out)

    def chain(self, e: ir.Expr) -> List:
        """Bounds of a sum ``e`` that holds the terms of a sum a condition bounded (``row*k + t + tx``
        under ``t + tx < k``): that sum's bounds plus the other terms'."""
        terms = _terms(e, 1, self.defs)
        out = []
        for fact_e in self.chains():
            rest = list(terms)
            for sign, key, _ in _terms(fact_e, 1, self.defs):
                hit = next((i for i, t in enumerate(rest) if t[0] == sign and t[1] == key), None)
                if hit is None:
                    break
                del rest[hit]
            else:
                if not rest or len(rest) == len(terms):
                    continue
                acc = self.bound(fact_e)
                alts = acc.alts if acc else []
                for sign, _, t in rest:
                    r = self.bound(t)
                    if r is None:
                        alts = []
                        break
                    alts = [(padd(lo, rlo if sign > 0 else rhi, sign), padd(hi, rhi if sign > 0 else rlo, sign),
                             asm + rasm) for lo, hi, asm in alts for rlo, rhi, rasm in r.alts][:MAX_ALTS]
                out.extend(alts)
        return out

    def chains(self) -> List[ir.Expr]:
        return [e for scope in reversed(self.chain_facts) for e in scope]

    # ------------------------------------------------------------ conditions -> facts
    def exact(self, e: ir.Expr) -> Optional[Poly]:
        """The value of ``e`` as one polynomial of launch symbols (no range), else None."""
        r = self._bound(e) if isinstance(e.type, ScalarType) and e.type.is_int else None
        if r is not None and len(r.alts) == 1 and r.alts[0][0] == r.alts[0][1] and not r.alts[0][2]:
            return r.alts[0][0]
        return None

    def stable(self, e: ir.Expr) -> bool:
        """Whether ``e`` keeps its value where the fact is used: no memory, no variable assigned there."""
        for x in ir.walk_expr(e):
            if isinstance(x, (ir.Load, ir.Atomic, ir.Call, ir.Subgroup)) and not _int_minmax(x):
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

    # ------------------------------------------------------------ statements
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
            alt = [p for k, p in enumerate(alt) if not _always(p) and p not in alt[:k]]
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
            if isinstance(x, (ir.Load, ir.Atomic, ir.Call, ir.Subgroup)) and not _int_minmax(x):
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
                self.block(s.body)
                self.loop_vars.discard(s.var)
                self.pop()
            elif isinstance(s, ir.While):
                self.expr(s.cond)
                self.push()
                k = counters.get(id(s))
                init = self.counter_inits.pop(k, None) if k is not None else None
                self.version += init is not None
                if init is not None:
                    self.count_in(s, k, init)
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

    def counters(self, stmts: List[ir.Stmt]) -> Dict[int, str]:
        """The counters of this block (module docstring): {id(first assignment): name, id(its while
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

    def assigned_in(self, stmts) -> set:
        counts: Dict[str, int] = {}
        self._count(stmts, counts, set(), 0)
        return set(counts)

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


def _least(p: Poly) -> Optional[int]:
    """The least value of ``p`` over every launch when it is a constant plus terms of block and grid
    sizes (each >= 1) with positive coefficients; else None."""
    total = 0
    for m, k in p.items():
        if m and not (k > 0 and all(s[0] in "bg" for s in m)):
            return None
        total += k
    return int(total) if total == int(total) else None


def _int_minmax(e: ir.Expr) -> bool:
    return (isinstance(e, ir.Call) and e.func in ("min", "max") and len(e.args) == 2
            and isinstance(e.type, ScalarType) and e.type.is_int and not e.type.is_bool)


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


def _always(p: Poly) -> bool:
    """Whether ``p >= 0`` holds for every launch: a constant >= 0 plus terms of lengths, block and grid
    sizes (>= 0) with positive coefficients, less at most ``k * grid[d] * block[d]`` (<= k * 2**31, the
    language's limit on work-items per dimension)."""
    c = p.get((), 0)
    for m, k in p.items():
        if m == ():
            continue
        if k > 0 and all(s[0] in "Lbg" for s in m):
            continue
        if k < 0 and len(m) == 2 and m[0][0] == "b" and m[1] == "g" + m[0][1:]:
            c += k * (1 << 31)
            continue
        return False
    return c >= 0


def _terms(e: ir.Expr, sign: int, defs: Dict[str, ir.Expr]) -> List[Tuple[int, str, ir.Expr]]:
    """A sum as its signed terms: (sign, text, term); a local with a definition (``defs``) that is a sum
    counts as that sum's terms (``i + 4`` with ``i = y*w + x0`` holds ``x0 + 4``)."""
    if isinstance(e, ir.Var) and isinstance(defs.get(e.name), ir.BinOp) and defs[e.name].op in ("add", "sub"):
        return _terms(defs[e.name], sign, defs)
    if isinstance(e, ir.BinOp) and e.op in ("add", "sub"):
        return _terms(e.a, sign, defs) + _terms(e.b, sign if e.op == "add" else -sign, defs)
    return [(sign, expr_str(e), e)]


def _mul(alo: Poly, ahi: Poly, blo: Poly, bhi: Poly, asm):
    """[alo, ahi] * [blo, bhi]: a constant factor scales (and may swap); otherwise both factors are
    assumed >= 0 (the assumption is part of the launch condition)."""
    for (lo, hi), (clo, chi) in (((alo, ahi), (blo, bhi)), ((blo, bhi), (alo, ahi))):
        c = is_const(clo)
        if c is not None and clo == chi:
            return (pmul(lo, clo), pmul(hi, clo), asm) if c >= 0 else (pmul(hi, clo), pmul(lo, clo), asm)
    if any(is_const(p) is not None and is_const(p) < 0 for p in (alo, blo)):
        return None  # a factor that may be negative: the corners would be needed
    return pmul(alo, blo), pmul(ahi, bhi), asm + [p for p in (alo, blo) if is_const(p) is None]


def fit(lo: Poly, hi: Poly, t: ScalarType) -> List[Poly]:
    """The conditions for a value known as ``[lo, hi]`` (its true value) to fit ``t``: then the machine
    value is the true one, and a comparison of the machine value bounds the true one."""
    return [padd(lo, const(-t.min_value())), padd(const(t.max_value()), hi, -1)]


def prove(fn: ir.Function) -> List[Tuple[ir.Expr, Clause, str]]:
    """Mark the accesses of ``fn`` (in place) that are in bounds under a launch-time condition; return
    (node, clause, where) for each of them, in program order."""
    p = _Prover(fn)
    p.block(fn.body, top=True)
    out = []
    for node, clause, name in p.clauses:
        setattr(node, PROVEN, True)
        loc = node.loc
        where = f"{os.path.basename(loc.file)}:{loc.line}" if loc else fn.name
        out.append((node, clause, f"'{name}' at {where}"))
    return out


def _poly_text(p: Poly) -> str:
    """``p >= 0`` scaled by its coefficients' common denominator: integer coefficients."""
    scale = lcm(*(Fraction(c).denominator for c in p.values())) if p else 1
    return " ".join(str(int(c * scale)) + "".join(f"*{s}" for s in m) for m, c in sorted(p.items())) or "0"


def encode(clause: Clause) -> str:
    """A condition's text (polykern/runtime/launch_proof.py)."""
    return " | ".join(" & ".join(_poly_text(p) for p in alt) or "true" for alt in clause)


def attach(fn: ir.Function) -> ir.Function:
    """Prove what can be proven in ``fn`` (in place), record the launch-time conditions in its
    attributes, and return it; a condition too long to record leaves its access unproven."""
    found = [(node, encode(clause), where[:TEXT_LIMIT]) for node, clause, where in prove(fn)]
    for node, text, _ in found:
        if len(text) > TEXT_LIMIT:
            setattr(node, PROVEN, False)
    texts = [(text, where) for node, text, where in found if getattr(node, PROVEN)]
    fn.attrs = dict(fn.attrs)
    fn.attrs[ATTR] = str(len(texts))
    for k, (text, where) in enumerate(texts):
        fn.attrs[f"{ATTR_CLAUSE}{k}"] = text
        fn.attrs[f"{ATTR_AT}{k}"] = where
    return fn


def all_proven(fn: ir.Function) -> bool:
    """Whether every access of ``fn`` is proven (then checked mode adds nothing: no hidden parameters)."""
    for s in ir.walk_stmts(fn.body):
        if isinstance(s, ir.CopyAsync) and not getattr(s, PROVEN, False):
            return False
        if isinstance(s, ir.MatrixOp) and s.op in ("load", "store"):
            return False
        if isinstance(s, ir.Store) and not getattr(s, PROVEN, False):
            return False
    return all(getattr(e, PROVEN, False) for e in ir.walk_all_exprs(fn.body) if isinstance(e, (ir.Load, ir.Atomic)))
