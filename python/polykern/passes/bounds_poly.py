"""The algebra of the bounds proof (:mod:`polykern.passes.bounds_proof`): polynomials over launch symbols
(rational coefficients), ranges of them as alternatives ``(lo, hi, assumptions)``, and what holds for
every launch.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..ir.types import ScalarType

__all__ = ["Poly", "Clause", "MAX_ALTS", "Range", "const", "sym", "padd", "pmul", "is_const", "exact_range", "fit",
           "least_value", "always_holds", "product_range"]

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


def exact_range(p: Poly) -> Range:
    return Range([(p, p, [])])


def fit(lo: Poly, hi: Poly, t: ScalarType) -> List[Poly]:
    """The conditions for a value known as ``[lo, hi]`` (its true value) to fit ``t``: then the machine
    value is the true one, and a comparison of the machine value bounds the true one."""
    return [padd(lo, const(-t.min_value())), padd(const(t.max_value()), hi, -1)]



def least_value(p: Poly) -> Optional[int]:
    """The least value of ``p`` over every launch when it is a constant plus terms of block and grid
    sizes (each >= 1) with positive coefficients; else None."""
    total = 0
    for m, k in p.items():
        if m and not (k > 0 and all(s[0] in "bg" for s in m)):
            return None
        total += k
    return int(total) if total == int(total) else None



def always_holds(p: Poly) -> bool:
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



def product_range(alo: Poly, ahi: Poly, blo: Poly, bhi: Poly, asm):
    """[alo, ahi] * [blo, bhi]: a constant factor scales (and may swap); otherwise both factors are
    assumed >= 0 (the assumption is part of the launch condition)."""
    for (lo, hi), (clo, chi) in (((alo, ahi), (blo, bhi)), ((blo, bhi), (alo, ahi))):
        c = is_const(clo)
        if c is not None and clo == chi:
            return (pmul(lo, clo), pmul(hi, clo), asm) if c >= 0 else (pmul(hi, clo), pmul(lo, clo), asm)
    if any(is_const(p) is not None and is_const(p) < 0 for p in (alo, blo)):
        return None  # a factor that may be negative: the corners would be needed
    return pmul(alo, blo), pmul(ahi, bhi), asm + [p for p in (alo, blo) if is_const(p) is None]

