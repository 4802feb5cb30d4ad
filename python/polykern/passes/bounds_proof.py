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
from typing import List, Tuple

from ..ir import nodes as ir
from .bounds_poly import Clause, Poly
from .bounds_walk import Prover

__all__ = ["SAFE_KEY", "SAFE_VARIANT_KEY", "PROVEN", "ATTR", "ATTR_CLAUSE", "ATTR_AT", "prove", "encode", "attach",
           "all_proven"]

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


def prove(fn: ir.Function) -> List[Tuple[ir.Expr, Clause, str]]:
    """Mark the accesses of ``fn`` (in place) that are in bounds under a launch-time condition; return
    (node, clause, where) for each of them, in program order."""
    p = Prover(fn)
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
