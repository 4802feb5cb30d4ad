"""Fast math on one target's copy of the IR (docs/language.md "Fast math").

``fast_<op>`` calls (``ir.FAST_MATH``: the builtins ``pk.fast_exp`` ... ``pk.fast_div``) may be computed
within the fast-math promise ``polykern.numerics.promise("fast_<op>", ...)``. This pass, run by the
pipeline on each target's copy:

- with ``fast_math=True`` (``build(..., fast_math=True)``) first makes every f32 ``op`` of
  ``numerics.FAST_MATH_OPS`` its ``fast_<op>`` (float ``a / b`` becomes ``fast_div(a, b)``);
- then turns every ``fast_<op>`` the target does not compile back into the precise ``op``: where the
  target kind does not declare ``Capabilities.fast_math``, where ``numerics.FAST_MATH`` has no entry for
  its numerics profile, and on f16 and f64 (bf16 operations are f32 ones by now, ``widen_bf16``:
  they stay fast, rounded to bf16 once as always).

So an emitter sees ``fast_<op>`` only for the f32 operations its own table entry names, and a kernel
without fast math is left exactly as it was.
"""
from __future__ import annotations

from .. import capabilities, numerics
from ..ir import nodes as ir
from ..ir.types import f32
from .clone import child_fields

__all__ = ["fast_math", "uses_fast_math"]


def uses_fast_math(fn: ir.Function) -> bool:
    """Whether ``fn`` calls a ``pk.fast_*`` builtin (the pipeline runs :func:`fast_math` only then, or with
    ``fast_math=True``)."""
    return any(isinstance(e, ir.Call) and e.func in ir.FAST_MATH for e in ir.walk_all_exprs(fn.body))


def _fast(e: ir.Expr, on: bool, lowered) -> ir.Expr:
    """``e`` with fast math applied (``on``: the build option) and unlowered fast calls made precise."""
    if on and e.type == f32:
        if isinstance(e, ir.Call) and e.func in numerics.FAST_MATH_OPS:
            e = _located(ir.Call(numerics.FAST_PREFIX + e.func, list(e.args)), e)
        elif isinstance(e, ir.BinOp) and e.op == "div":
            e = _located(ir.Call(numerics.FAST_PREFIX + "div", [e.a, e.b]), e)
    if isinstance(e, ir.Call) and e.func in ir.FAST_MATH and not (e.type == f32 and ir.FAST_MATH[e.func] in lowered):
        precise = ir.FAST_MATH[e.func]
        if precise == "div":
            return _located(ir.BinOp("div", e.args[0], e.args[1]), e)
        return _located(ir.Call(precise, list(e.args)), e)
    return e


def _located(new: ir.Expr, old: ir.Expr) -> ir.Expr:
    new.loc = old.loc
    return new


def fast_math(fn: ir.Function, target, on: bool = False) -> ir.Function:
    """Apply fast math (``on``) to ``fn`` (a target's own copy, changed in place) for ``target``."""
    caps = capabilities.of(getattr(target, "kind", target))
    lowered = set(numerics.FAST_MATH.get(caps.numerics, {})) if caps.fast_math else set()
    done: dict = {}
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, ir.Expr):
                setattr(node, name, _visit(value, on, lowered, done, stack))
            elif isinstance(value, list):
                setattr(node, name, [_visit(v, on, lowered, done, stack) if isinstance(v, ir.Expr) else v
                                     for v in value])
                stack.extend(v for v in value if isinstance(v, ir.Stmt))
            elif isinstance(value, ir.Stmt):
                stack.append(value)
    return fn


def _visit(e: ir.Expr, on: bool, lowered, done: dict, stack: list) -> ir.Expr:
    """``e``'s replacement (once per node: a node reachable twice keeps one replacement)."""
    if id(e) not in done:
        new = _fast(e, on, lowered)
        done[id(e)] = (e, new)  # the old node is kept alive: its id is not reused while this runs
        stack.append(new)
    return done[id(e)][1]
