"""Which float operations of a kernel may feed which values: the oracle's map for the promises that hold
only for some inputs or some backends (``polykern.numerics.specials_promised``, ``MAY_REASSOCIATE``).

A *site* is one float operation of the IR: a binary operator or comparison on floats, a math builtin
on floats, a cast from a float, or a float subgroup or atomic min/max (a zero of unspecified sign).
The analysis is static and flow-insensitive (like the inexact taint of ``taint``): a variable or array carries every site that any assignment or store to it may carry, so
a value's sites over-approximate what fed it. Sites that reach control flow (a condition, a loop bound,
the index of a store or an atomic) are *global*: when one of them misbehaves, any value may differ.

A value's sites are split in *own* sites (reached through the storing work-item's own expressions and
variables, which are private) and *memory* sites (reached through a load or an atomic, so possibly
executed by another work-item). The interpreter records which sites saw a NaN or an infinity (an
operand or the result), per work-item; a buffer element is not checked where specials are not promised
when an own site of its stored value saw one in the storing work-item, or a memory site did in any.
``chain_sites`` are the float add/sub operations with an operand that is itself a float add/sub, and the
float products with a product operand (directly or through a variable): a backend that may reassociate
can change what they give. ``contract_sites`` are the float add/sub operations with a product operand
(directly or through a variable): a backend that may contract can compute them from the unrounded product.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Tuple

from ..ir import nodes as ir

Sites = FrozenSet[int]
_NONE: Sites = frozenset()


def is_site(e: ir.Expr) -> bool:
    """Whether ``e`` is a float operation whose result a finite-math backend may compute differently."""
    if isinstance(e, ir.BinOp):
        return e.op not in ("land", "lor") and e.a.type.is_float
    if isinstance(e, ir.Call):
        return any(a.type.is_float for a in e.args)
    if isinstance(e, ir.Cast):
        return e.a.type.is_float
    if isinstance(e, ir.Subgroup):  # a zero of unspecified sign (subgroups.resolve)
        return e.op in ("min", "max") and e.type.is_float
    if isinstance(e, ir.Atomic):  # the same for the element and the old value (exprs._e_Atomic)
        return e.op in ("min", "max") and e.type.is_float
    return False


class SiteFlow:
    """Sites (``id`` of the IR node) per variable and array of ``fn``; ``split(expr)`` gives an
    expression's (own, memory) sites, ``of(expr)`` all of them."""

    def __init__(self, fn: ir.Function):
        self.var: Dict[str, Sites] = {}      # own sites of a variable
        self.var_mem: Dict[str, Sites] = {}  # memory sites of a variable
        self.arr: Dict[str, Sites] = {}
        changed = True
        while changed:
            changed = False
            for s in ir.walk_stmts(fn.body):
                if isinstance(s, ir.Assign):
                    changed |= self._assign(s.name, s.value)
                elif isinstance(s, ir.For):
                    changed |= self._assign(s.var, s.start) | self._assign(s.var, s.stop)
                elif isinstance(s, ir.Store):
                    changed |= _join(self.arr, s.base.name, self.of(s.value))
                elif isinstance(s, ir.CopyAsync):  # the source's elements into the destination
                    changed |= _join(self.arr, s.dst.name, self.arr.get(s.src.name, _NONE))
                elif isinstance(s, ir.HopperOp) and s.names:  # warpgroup registers (ir.WgReg) flow like memory
                    changed |= _join(self.arr, s.names[0], _hopper_flow(s, self))
                for e in ir.stmt_exprs(s):
                    for a in ir.walk_expr(e):
                        if isinstance(a, ir.Atomic):
                            own = frozenset((id(a),)) if is_site(a) else _NONE
                            changed |= _join(self.arr, a.base.name, self.of(a.value) | self.of(a.compare) | own)
        glob = set()
        for s in ir.walk_stmts(fn.body):
            if isinstance(s, (ir.If, ir.While)):
                glob |= self.of(s.cond)
            elif isinstance(s, ir.For):
                glob |= self.of(s.start) | self.of(s.stop)
            elif isinstance(s, ir.Store):
                glob |= self.of(s.index)
            elif isinstance(s, ir.CopyAsync):
                glob |= self.of(s.dst_k) | self.of(s.src_k)
            for e in ir.stmt_exprs(s):
                for a in ir.walk_expr(e):
                    if isinstance(a, ir.Atomic):
                        glob |= self.of(a.index)
        self.global_sites: Sites = frozenset(glob)
        self.chain_sites: Sites = _links(fn, ((_ADD_SUB, _ADD_SUB), (_MUL, _MUL)))
        self.contract_sites: Sites = _links(fn, ((_ADD_SUB, _MUL),))

    def _assign(self, name: str, e) -> bool:
        own, mem = self.split(e)
        return _join(self.var, name, own) | _join(self.var_mem, name, mem)

    def split(self, e) -> Tuple[Sites, Sites]:
        if e is None:
            return _NONE, _NONE
        own, mem = set(), set()
        for x in ir.walk_expr(e):
            if is_site(x):
                own.add(id(x))
            if isinstance(x, ir.Var):
                own |= self.var.get(x.name, _NONE)
                mem |= self.var_mem.get(x.name, _NONE)
            elif isinstance(x, (ir.Load, ir.Atomic)):
                mem |= self.arr.get(x.base.name, _NONE)
            elif isinstance(x, ir.WgReg):
                mem |= self.arr.get(x.name, _NONE)
        return frozenset(own), frozenset(mem)

    def of(self, e) -> Sites:
        own, mem = self.split(e)
        return own | mem


def _hopper_flow(s: ir.HopperOp, flow: "SiteFlow") -> Sites:
    """What a Hopper operation brings into the registers (or memory) it writes: a stored element's sites,
    a row reduction's accumulator, a wgmma's register operand."""
    if s.op == "wg_set":
        return flow.of(s.args[1])
    if s.op in ("wg_row_max", "wg_row_sum"):
        return flow.arr.get(s.names[1], _NONE)
    if s.op in ("wgmma", "wgmma_kn"):
        return flow.arr.get(s.names[1], _NONE) | flow.arr.get(s.names[2], _NONE)
    return _NONE


def _join(table, key, sites) -> bool:
    old = table.get(key, _NONE)
    new = old | sites
    if new != old:
        table[key] = new
        return True
    return False


_ADD_SUB, _MUL = ("add", "sub"), ("mul",)


def _links(fn: ir.Function, pairs) -> Sites:
    """For each (outer, inner) pair of operator sets: the float ``outer`` operations with an operand that
    is a float ``inner`` operation, directly or through variables assigned one. ((add/sub, add/sub) and
    (mul, mul): what numerics.MAY_REASSOCIATE lets a backend evaluate in another association; (add/sub,
    mul): the a*b+c that numerics.MAY_CONTRACT lets a backend fuse.)"""
    assigns = [s for s in ir.walk_stmts(fn.body) if isinstance(s, ir.Assign)]
    out = set()
    for outer, inner in pairs:
        def is_op(e, ops):
            return isinstance(e, ir.BinOp) and e.op in ops and e.type.is_float

        held = {s.name for s in assigns if is_op(s.value, inner)}
        copies = True
        while copies:  # t = a * b; u = t: u holds a product too
            more = {s.name for s in assigns if isinstance(s.value, ir.Var) and s.value.name in held}
            copies = not more <= held
            held |= more
        for e in ir.walk_all_exprs(fn.body):
            if is_op(e, outer) and any(is_op(x, inner) or (isinstance(x, ir.Var) and x.name in held)
                                       for x in (e.a, e.b)):
                out.add(id(e))
    return frozenset(out)
