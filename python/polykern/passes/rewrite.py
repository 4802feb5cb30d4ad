"""The walk every IR -> IR legalization pass shares: expressions rewritten bottom-up, with temporaries.

A pass subclasses :class:`Rewriter` and overrides :meth:`Rewriter.node`, which gets each expression
with its operands already rewritten and returns it or its replacement. A replacement that needs a value
twice (or a loop) assigns it to a temporary (:meth:`Rewriter.temp`) or appends statements to
``self.pre``: they run just before the statement being rewritten. A ``while`` condition's temporaries are
assigned at the top of its body, followed by the test and a ``break``; the right operand of a
short-circuit operator that needs them becomes a temporary set in an ``if``, so it keeps its condition.
Used by ``legalize_f16.py`` and ``legalize_numerics.py``.

A temporary runs before the rest of its statement. That keeps the meaning because an expression writes
nothing but through an atomic: in a statement that also uses an atomic's result, an operand hoisted past
that atomic would read memory before it (a known limit, as in ``legalize_f16`` before: the fuzzer's
programs never use an atomic's result). A select arm's temporaries run whichever arm is chosen: only values
without side effects are hoisted, and they always terminate.
"""
from __future__ import annotations

import dataclasses
from typing import List

from ..ir import nodes as ir
from ..ir.types import bool_


class Rewriter:
    """Rewrites one function's body in place (:meth:`stmts`); temporaries are named ``<prefix><n>``."""

    PREFIX = "_tmp"

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.pre: List[ir.Stmt] = []
        self.count = 0

    def fresh(self, type_) -> str:
        """A new local of ``type_`` (declared in the function, not assigned)."""
        while f"{self.PREFIX}{self.count}" in self.fn.locals:
            self.count += 1
        name = f"{self.PREFIX}{self.count}"
        self.count += 1
        self.fn.locals[name] = type_
        return name

    def temp(self, value: ir.Expr) -> ir.Var:
        """A fresh local assigned ``value`` before the current statement."""
        name = self.fresh(value.type)
        self.pre.append(ir.Assign(name, value))
        return ir.Var(name, value.type)

    def once(self, value: ir.Expr) -> ir.Expr:
        """``value`` itself where reading it twice costs nothing (a constant, a variable, a work-item id, or
        a cast or negation of one), else a temporary."""
        leaf = value.a if isinstance(value, (ir.Cast, ir.UnaryOp)) else value
        return value if isinstance(leaf, (ir.Const, ir.Var, ir.SpecialReg)) else self.temp(value)

    def node(self, e: ir.Expr) -> ir.Expr:  # pragma: no cover - every pass overrides it
        return e

    def expr(self, e: ir.Expr) -> ir.Expr:
        """``e`` rewritten bottom-up; temporaries go to ``self.pre``."""
        if isinstance(e, ir.BinOp) and e.op in ("land", "lor"):
            a = self.expr(e.a)
            outer, self.pre = self.pre, []
            b = self.expr(e.b)
            inner, self.pre = self.pre, outer
            if not inner:
                e.a, e.b = a, b
                return e
            t = self.temp(a)
            test = t if e.op == "land" else ir.UnaryOp("not", t)
            self.pre.append(ir.If(test, inner + [ir.Assign(t.name, b)], []))
            return t
        for f in dataclasses.fields(e):
            value = getattr(e, f.name)
            if isinstance(value, ir.Expr) and f.name not in ("type", "loc"):
                setattr(e, f.name, self.expr(value))
            elif isinstance(value, list) and value and isinstance(value[0], ir.Expr):
                setattr(e, f.name, [self.expr(v) for v in value])
        new = self.node(e)
        if new is not e:
            locate(new, e.loc)
        return new

    def stmts(self, body: List[ir.Stmt]) -> List[ir.Stmt]:
        out: List[ir.Stmt] = []
        for s in body:
            self.pre = []
            if isinstance(s, ir.While):
                cond = self.expr(s.cond)
                if self.pre:  # re-evaluated on every iteration: at the top of the body
                    pre, self.pre = self.pre, []
                    s.body = pre + [ir.If(ir.UnaryOp("not", cond), [ir.Break()], [])] + self.stmts(s.body)
                    s.cond = ir.Const(True, bool_)
                else:
                    s.cond = cond
                    s.body = self.stmts(s.body)
                out.append(s)
                continue
            for f in dataclasses.fields(s):
                value = getattr(s, f.name)
                if isinstance(value, ir.Expr) and f.name != "loc":
                    setattr(s, f.name, self.expr(value))
                elif isinstance(value, list) and value and isinstance(value[0], ir.Expr):
                    setattr(s, f.name, [self.expr(v) for v in value])
            pre = self.pre
            for f in dataclasses.fields(s):
                value = getattr(s, f.name)
                if isinstance(value, list) and value and isinstance(value[0], ir.Stmt):
                    setattr(s, f.name, self.stmts(value))
            for p in pre:
                _locate_stmt(p, s.loc)
            out.extend(pre)
            out.append(s)
        return out


def locate(e: ir.Expr, loc) -> None:
    """Give ``e`` and the new nodes under it (those without a location) the location ``loc``."""
    stack = [e]
    while stack:
        n = stack.pop()
        if n.loc is None:
            n.loc = loc
            stack.extend(n.children())


def _locate_stmt(s: ir.Stmt, loc) -> None:
    """Give a statement a pass made (and the statements and expressions in it) the location ``loc``."""
    s.loc = loc
    for f in dataclasses.fields(s):
        value = getattr(s, f.name)
        if isinstance(value, ir.Expr) and f.name != "loc":
            locate(value, loc)
        elif isinstance(value, list):
            for v in value:
                if isinstance(v, ir.Stmt):
                    _locate_stmt(v, loc)
                elif isinstance(v, ir.Expr):
                    locate(v, loc)
