"""Full unrolling of a ``For`` loop with constant bounds (the frontend applies it to ``range`` loops whose
bounds are compile-time constants naming a ``pk.constexpr`` parameter, and to the register loops of
``pk.wg_elements`` / ``pk.wg_rows``, lang/hopper.py).

Each iteration becomes ``var = value; <copy of the body>``, so a ``pk.local`` array indexed by the loop
variable is indexed by constants after constant propagation (every backend's compiler does it) and can
live in registers. After the copies ``var`` gets the value the loop would have left (``start`` when it
runs no iteration, else the last value plus ``step``, wrapped to the type as the loop would).

A loop is left as it is when it would run more than :data:`MAX_TRIPS` iterations (:data:`REGISTER_TRIPS`
when its variable indexes registers), when the copies would hold more than :data:`MAX_STMTS` statements,
when its body has a ``break`` or ``continue`` of its own, or when the body assigns the loop variable.
"""
from __future__ import annotations

from typing import List, Optional

from ..ir import nodes as ir
from .clone import clone_function

__all__ = ["unroll", "own_exit", "MAX_TRIPS", "REGISTER_TRIPS", "MAX_STMTS"]

MAX_TRIPS = 64
# A loop whose variable indexes registers (:func:`indexes_registers`: a ``pk.local`` array, or a warpgroup
# accumulator's or row vector's registers in a ``pk.wg_elements`` / ``pk.wg_rows`` loop, up to 128 of them)
# is unrolled up to this many iterations: register arrays need constant indices to stay in registers (a
# 128-entry accumulator initialized in a loop of 128 kept the whole array in local memory on NVPTX: 512
# bytes of stack, 40x slower).
REGISTER_TRIPS = 256
MAX_STMTS = 2048


def unroll(loop: ir.For) -> Optional[List[ir.Stmt]]:
    """The statements that replace ``loop``, or None where it stays a loop."""
    if not (isinstance(loop.start, ir.Const) and isinstance(loop.stop, ir.Const)):
        return None
    values = range(loop.start.value, loop.stop.value, loop.step)
    if len(values) > MAX_TRIPS and not (len(values) <= REGISTER_TRIPS and indexes_registers(loop)):
        return None
    if len(values) * sum(1 for _ in ir.walk_stmts(loop.body)) > MAX_STMTS:
        return None
    if own_exit(loop.body) or any(isinstance(s, ir.Assign) and s.name == loop.var or
                                   isinstance(s, ir.For) and s.var == loop.var for s in ir.walk_stmts(loop.body)):
        return None
    t = loop.start.type
    out: List[ir.Stmt] = []
    for v in values:
        out.append(_located(ir.Assign(loop.var, _const(v, t, loop)), loop))
        out.extend(clone_function(ir.Function("unrolled", [], loop.body)).body)
    final = _wrap(values[-1] + loop.step, t) if values else loop.start.value
    out.append(_located(ir.Assign(loop.var, _const(final, t, loop)), loop))
    return out


def indexes_registers(loop: ir.For) -> bool:
    """Whether ``loop``'s variable appears in the index of a register: a ``pk.local`` array's load or store,
    or a warpgroup register's read (``ir.WgReg``) or write (the ``HopperOp`` ``wg_set``, whose first operand
    is the index): the hidden register loop of ``pk.wg_elements`` / ``pk.wg_rows`` (lang/hopper.py)."""
    def by_var(index) -> bool:
        return any(isinstance(e, ir.Var) and e.name == loop.var for e in ir.walk_expr(index))

    def local(base) -> bool:
        return isinstance(base.type, ir.ArrayType) and base.type.scope == "local"

    for s in ir.walk_stmts(loop.body):
        if isinstance(s, ir.Store) and local(s.base) and by_var(s.index):
            return True
        if isinstance(s, ir.HopperOp) and s.op == "wg_set" and by_var(s.args[0]):
            return True
    return any(isinstance(e, ir.Load) and local(e.base) and by_var(e.index) or
               isinstance(e, ir.WgReg) and by_var(e.index) for e in ir.walk_all_exprs(loop.body))


def _wrap(v: int, t) -> int:
    v &= (1 << t.bits) - 1
    return v - (1 << t.bits) if t.is_signed and v >> (t.bits - 1) else v


def own_exit(stmts) -> bool:
    """A break/continue that leaves this loop (not one of an inner loop)."""
    for s in stmts:
        if isinstance(s, (ir.Break, ir.Continue)):
            return True
        if isinstance(s, ir.If) and (own_exit(s.then) or own_exit(s.orelse)):
            return True
    return False


def _const(v, t, loop):
    return _located(ir.Const(v, t), loop)


def _located(node, loop):
    node.loc = loop.loc
    return node
