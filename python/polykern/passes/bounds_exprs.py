"""Bounds of integer expressions in the bounds proof (:mod:`polykern.passes.bounds_proof`): constants,
launch symbols, registers, definitions, ``+ - *``, divisions, shifts, ``%``, ``&``, widening casts, integer
``min``/``max``, and the facts the conditions on the path gave (a sum that holds a bounded sum's terms).

:class:`ExprBounds` is a part of :class:`polykern.passes.bounds_walk.Prover`: it reads the prover's state
(``scalars``, ``assigned``, ``defs``, ``def_ranges``, ``counter_inits``, ``inits``, ``facts``,
``chain_facts``, ``resolving``, ``version``, ``memo``).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Dict, List, Optional, Tuple

from ..ir import nodes as ir
from ..ir.printer import expr_str
from ..ir.types import ScalarType
from .bounds_poly import (MAX_ALTS, Range, const, exact_range, fit, least_value, padd, pmul, product_range,
                          sym)

__all__ = ["ExprBounds", "int_minmax"]


class ExprBounds:
    """The prover's bounds of expressions (a part of ``Prover``)."""

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
            return exact_range(const(int(e.value)))
        if isinstance(e, ir.Var):
            if e.name in self.scalars and e.name not in self.assigned:
                return exact_range(sym(f"a{self.scalars[e.name]}"))
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
                    "local_size": exact_range(b), "num_groups": exact_range(g)}.get(e.kind)
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
                        out.append(product_range(alo, ahi, blo, bhi, aasm + basm))
            out = [x for x in out if x is not None]
            return Range(out) if out else None
        if int_minmax(e):
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
                return exact_range(sym(f"{letter}{self.scalars[e.a.name]}_{c}"))
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
                c = max(1, least_value(blo) or 1)
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


def int_minmax(e: ir.Expr) -> bool:
    return (isinstance(e, ir.Call) and e.func in ("min", "max") and len(e.args) == 2
            and isinstance(e.type, ScalarType) and e.type.is_int and not e.type.is_bool)



def _terms(e: ir.Expr, sign: int, defs: Dict[str, ir.Expr]) -> List[Tuple[int, str, ir.Expr]]:
    """A sum as its signed terms: (sign, text, term); a local with a definition (``defs``) that is a sum
    counts as that sum's terms (``i + 4`` with ``i = y*w + x0`` holds ``x0 + 4``)."""
    if isinstance(e, ir.Var) and isinstance(defs.get(e.name), ir.BinOp) and defs[e.name].op in ("add", "sub"):
        return _terms(defs[e.name], sign, defs)
    if isinstance(e, ir.BinOp) and e.op in ("add", "sub"):
        return _terms(e.a, sign, defs) + _terms(e.b, sign if e.op == "add" else -sign, defs)
    return [(sign, expr_str(e), e)]

