"""bf16 arithmetic as f32 arithmetic: after this pass, bf16 values are only stored, loaded, moved and
converted to or from f32.

docs/language.md "bf16" defines every operation on bf16 as: convert the operands to f32 (exact),
compute in f32, round the result to bf16 once (to nearest even). This pass writes exactly that, so the
backends implement only bf16 storage (16 bits) and the two conversions ``Cast(f32 <- bf16)`` (the bits
shifted up) and ``Cast(bf16 <- f32)`` (RNE). Rewrites, on operands already rewritten:

- ``a <op> b`` / ``-a`` / ``fn(a, ...)`` of type bf16: ``bf16(f32(a) <op> f32(b))`` etc.;
  comparisons: ``f32(a) < f32(b)``;
- ``T(a)`` from bf16 to ``T`` other than f32: ``T(f32(a))``; ``bf16(x)`` from ``T`` other than f32:
  ``bf16(f32(x))`` (conversions to bf16 go through f32: an integer or f64 is rounded to f32 first);
- a bf16 constant: ``bf16(c)`` of the f32 constant with the same (exact) value.

Loads, stores, variables and ``select`` of bf16 are left alone. The pass runs before ``simplify`` (which
folds only float types with a NumPy scalar type) and is the identity for kernels without bf16.
"""
from __future__ import annotations

import dataclasses

from ..ir import nodes as ir
from ..ir.types import bf16, f32
from .clone import child_fields

def _mk(node: ir.Expr, loc) -> ir.Expr:
    node.loc = loc
    return node


def _to_f32(e: ir.Expr) -> ir.Expr:
    return _mk(ir.Cast(f32, e), e.loc) if e.type == bf16 else e


def _widen(e: ir.Expr) -> ir.Expr:
    """``e`` (its operands already rewritten) without bf16 arithmetic."""
    loc = e.loc
    if isinstance(e, ir.Const) and e.type == bf16:
        return _mk(ir.Cast(bf16, _mk(ir.Const(float(e.value), f32), loc)), loc)
    if isinstance(e, ir.Cast):
        src = e.a.type
        if e.to == bf16 and src == bf16:
            return e.a
        if e.to == bf16 and src != f32:
            return _mk(ir.Cast(bf16, _mk(ir.Cast(f32, e.a), loc)), loc)
        if src == bf16 and e.to != f32:
            return _mk(ir.Cast(e.to, _to_f32(e.a)), loc)
        return e
    if isinstance(e, ir.BinOp) and e.a.type == bf16:
        wide = _mk(ir.BinOp(e.op, _to_f32(e.a), _to_f32(e.b)), loc)
        return wide if wide.type != f32 else _mk(ir.Cast(bf16, wide), loc)
    if isinstance(e, ir.UnaryOp) and e.type == bf16:
        return _mk(ir.Cast(bf16, _mk(ir.UnaryOp(e.op, _to_f32(e.a)), loc)), loc)
    if isinstance(e, ir.Call) and e.type == bf16:
        return _mk(ir.Cast(bf16, _mk(ir.Call(e.func, [_to_f32(a) for a in e.args]), loc)), loc)
    return e


def _rewrite(root: ir.Expr) -> ir.Expr:
    """Rewrite an expression tree bottom-up, iteratively (expressions may be thousands deep)."""
    order, stack, seen = [], [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, ir.Expr):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ir.Expr))
    new: dict = {}
    for node in reversed(order):  # children before their parents
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, ir.Expr):
                setattr(node, name, new.get(id(value), value))
            elif isinstance(value, list):
                setattr(node, name, [new.get(id(v), v) if isinstance(v, ir.Expr) else v for v in value])
        new[id(node)] = _widen(node)
    return new[id(root)]


def _stmts(stmts) -> None:
    for s in stmts:
        for f in dataclasses.fields(s):
            value = getattr(s, f.name)
            if isinstance(value, ir.Expr):
                setattr(s, f.name, _rewrite(value))
            elif isinstance(value, list) and value and isinstance(value[0], ir.Expr):
                setattr(s, f.name, [_rewrite(v) for v in value])
            elif isinstance(value, list) and value and isinstance(value[0], ir.Stmt):
                _stmts(value)


def widen_bf16(fn: ir.Function) -> ir.Function:
    if bf16 in ir.used_types(fn):
        _stmts(fn.body)
    return fn
