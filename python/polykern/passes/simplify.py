"""Simplification: typed constant folding, constant branches, and code after return/break/continue.

Folding follows each type's real arithmetic (integers wrap at their width, ``//`` and ``%`` truncate
toward zero so ``INT_MIN // -1 == INT_MIN`` and ``INT_MIN % -1 == 0``, shifts take their amount modulo
the width, floats round in their own precision via NumPy scalars, comparisons see the typed values),
so a folded expression gives the bits the device would have computed. Integer division by zero is not
folded. Casts are not folded.
"""
from __future__ import annotations

import numpy as np

from ..ir import nodes as ir

_INT_FOLD = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
}
_FLOAT_FOLD = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
_CMP = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def _wrap(value: int, t) -> int:
    mask = (1 << t.bits) - 1
    value &= mask
    if t.code == 0 and value >> (t.bits - 1):
        value -= 1 << t.bits
    return value


def _const(value, t, loc):
    c = ir.Const(value, t)
    c.loc = loc
    return c


def fold(e: ir.Expr) -> ir.Expr:
    for name in ("a", "b", "cond", "index", "value", "compare"):
        sub = getattr(e, name, None)
        if isinstance(sub, ir.Expr):
            setattr(e, name, fold(sub))
    if isinstance(e, ir.Call):
        e.args = [fold(a) for a in e.args]
    if isinstance(e, ir.BinOp) and isinstance(e.a, ir.Const) and isinstance(e.b, ir.Const):
        t, x, y = e.a.type, e.a.value, e.b.value
        if t.is_float:  # compare and compute the numbers the device holds (hand-built IR may not round)
            with np.errstate(over="ignore"):
                x, y = float(t.numpy.type(x)), float(t.numpy.type(y))
        if e.op in _CMP:
            return _const(bool(_CMP[e.op](x, y)), e.type, e.loc)
        if e.op == "land":
            return _const(bool(x and y), e.type, e.loc)
        if e.op == "lor":
            return _const(bool(x or y), e.type, e.loc)
        if t.is_int and e.op in _INT_FOLD:
            return _const(_wrap(_INT_FOLD[e.op](int(x), int(y)), t), t, e.loc)
        if t.is_int and e.op in ("floordiv", "mod") and y != 0:  # x // 0 is left to the target
            q = abs(int(x)) // abs(int(y)) * (1 if (x < 0) == (y < 0) else -1)  # C: toward zero
            return _const(_wrap(q if e.op == "floordiv" else int(x) - q * int(y), t), t, e.loc)
        if t.is_int and e.op in ("shl", "shr"):
            n = int(y) % t.bits  # the IR takes the amount modulo the width
            return _const(_wrap(int(x) << n if e.op == "shl" else int(x) >> n, t), t, e.loc)
        if t.is_float and e.op in _FLOAT_FOLD and not (e.op == "div" and y == 0):
            with np.errstate(all="ignore"):
                return _const(float(_FLOAT_FOLD[e.op](t.numpy.type(x), t.numpy.type(y))), t, e.loc)
    if isinstance(e, ir.UnaryOp) and isinstance(e.a, ir.Const) and e.op == "not":
        return _const(not e.a.value, e.type, e.loc)
    if isinstance(e, ir.Select) and isinstance(e.cond, ir.Const):
        return e.a if e.cond.value else e.b
    return e


def _block(stmts):
    out = []
    for s in stmts:
        if isinstance(s, ir.Assign):
            s.value = fold(s.value)
        elif isinstance(s, ir.Store):
            s.index, s.value = fold(s.index), fold(s.value)
        elif isinstance(s, ir.ExprStmt):
            s.expr = fold(s.expr)
        elif isinstance(s, ir.If):
            s.cond = fold(s.cond)
            s.then, s.orelse = _block(s.then), _block(s.orelse)
            if isinstance(s.cond, ir.Const):
                out.extend(s.then if s.cond.value else s.orelse)
                if out and isinstance(out[-1], (ir.Return, ir.Break, ir.Continue)):
                    break
                continue
        elif isinstance(s, ir.For):
            s.start, s.stop = fold(s.start), fold(s.stop)
            s.body = _block(s.body)
        elif isinstance(s, ir.While):
            s.cond = fold(s.cond)
            s.body = _block(s.body)
            if isinstance(s.cond, ir.Const) and not s.cond.value:
                continue
        out.append(s)
        if isinstance(s, (ir.Return, ir.Break, ir.Continue)):
            break  # the rest of this block is unreachable
    return out


def simplify(fn: ir.Function) -> ir.Function:
    fn.body = _block(fn.body)
    return fn
