"""Typing rules of the kernel language.

The language is strictly typed, like WGSL or Rust: two operands of an operator must have the same type
and a value assigned to a variable must have the variable's type. The one convenience is *literal
adaptation*: an untyped literal (``2``, ``0.5``, or a Python constant from the enclosing scope) takes the
type of the other operand or of the destination, if it fits (an int literal fits any integer type whose
range holds it; an int or float literal fits any float type it rounds to a finite value of, rounded once
to nearest even). Alone, an int literal is ``i32`` and a float
literal is ``f32``.
"""
from __future__ import annotations

import ast
import math
from typing import List, Optional, Tuple

from ..errors import KernelTypeError, SourceLoc
from ..ir import nodes as ir
from ..ir.rounding import largest_finite, round_exact
from ..ir.types import ScalarType, bool_, f32, i32


def literal(value, loc: Optional[SourceLoc]) -> ir.Const:
    """An untyped ("weak") literal from a Python value."""
    if isinstance(value, bool):
        c = ir.Const(value, bool_)
        c.weak = False
    elif isinstance(value, int):
        c = ir.Const(value, i32)
        c.weak = True
    elif isinstance(value, float):
        c = ir.Const(value, f32)
        c.weak = True
    else:
        raise KernelTypeError(f"unsupported constant {value!r} of type {type(value).__name__}", loc)
    c.loc = loc
    return c


def is_weak(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and getattr(e, "weak", False)


def fits(value, t: ScalarType) -> bool:
    """Whether literal ``value`` may take type ``t``: an int within an integer type's range; for a float
    type, any number that rounds to a finite value (``65519.0`` as f16 is 65504; ``65520.0`` rounds to
    inf and does not fit), NaN and ±inf themselves."""
    if t.is_bool:
        return False
    if isinstance(value, float) and not t.is_float:
        return False
    if t.is_float:
        if isinstance(value, float) and not math.isfinite(value):
            return True
        return math.isfinite(round_exact(value, t.name))
    return t.min_value() <= value <= t.max_value()


def round_to(value, t: ScalarType):
    """``value`` as the type ``t`` holds it: a number rounded once from its exact value to t's precision
    (to nearest even; bf16 too, not through f32), an int unchanged. Every typed float ``ir.Const`` holds
    such a value, so folding sees the target's number."""
    if t.is_float:
        return round_exact(value, t.name)
    return int(value)


def retype_literal(e: ir.Const, t: ScalarType, what: str) -> ir.Const:
    if not fits(e.value, t):
        kind = "float" if isinstance(e.value, float) else "integer"
        hint = ""
        if kind == "integer" and t.is_int:
            hint = f" (range {t.min_value()}..{t.max_value()})"
        elif t.is_float:
            hint = f" (it rounds to infinity; the largest finite {t} is {largest_finite(t.name)!r})"
        raise KernelTypeError(f"{kind} literal {e.value!r} does not fit {t}{hint} in {what}", e.loc)
    c = ir.Const(round_to(e.value, t), t)
    c.loc = e.loc
    return c


def coerce(e: ir.Expr, t: ScalarType, what: str) -> ir.Expr:
    """Make ``e`` have type ``t``: literals adapt (and must fit), anything else must already match."""
    if is_weak(e):
        return retype_literal(e, t, what)
    if e.type == t:
        return e
    raise KernelTypeError(f"{what}: expected {t}, got {e.type}; cast explicitly, e.g. {t}(...)", e.loc)


#: An operator's operands as the user wrote them, for the examples in messages: (left, the operator's
#: text or None, right), the operands as ``ast`` nodes.
Operands = Tuple[ast.AST, Optional[str], ast.AST]
# Operands shown in parentheses beside a cast operand (``f32(i) * (a + b)``).
_COMPOUND = (ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp)
_LONGEST_SHOWN = 40


def cast_choices(ta: ScalarType, tb: ScalarType) -> List[Tuple[int, ScalarType]]:
    """The explicit casts that give operands of types ``ta`` and ``tb`` one type, as (operand 0 or 1, the
    type to cast it to), the one to suggest first: an integer or bool operand takes the other side's float
    type, a bool the other side's type, the narrower of two floats or of two integers of one signedness the
    wider type; signed with unsigned (and bf16 with f16) has no lossless choice, so both are offered."""
    for side, t, other in ((0, ta, tb), (1, tb, ta)):
        if (other.is_float and not t.is_float) or (t.is_bool and not other.is_bool):
            return [(side, other)]
    if ta.bits != tb.bits and (ta.is_float or ta.code == tb.code):
        return [(0, tb)] if ta.bits < tb.bits else [(1, ta)]
    return [(1, ta), (0, tb)]


def _shown(node: Optional[ast.AST], parens: bool) -> str:
    text = ast.unparse(node) if node is not None else "..."
    if len(text) > _LONGEST_SHOWN:
        return "..."
    return f"({text})" if parens and isinstance(node, _COMPOUND) else text


def cast_example(side: int, t: ScalarType, operands: Optional[Operands]) -> str:
    """The user's expression with operand ``side`` cast to ``t`` (``f * f32(i)``), or the cast alone
    (``f32(i)``; ``f32(...)`` without the operands)."""
    if operands is None:
        return f"{t}(...)"
    left, op, right = operands
    cast = f"{t}({_shown((left, right)[side], False)})"
    if op is None:
        return cast
    other = _shown((right, left)[side], True)
    return f"{cast} {op} {other}" if side == 0 else f"{other} {op} {cast}"


def unify(a: ir.Expr, b: ir.Expr, what: str, loc: Optional[SourceLoc], operands: Optional[Operands] = None):
    """Bring two operands to one type (literal adaptation), or raise a KernelTypeError whose example casts
    the operand :func:`cast_choices` picks (``operands``: the source of ``a`` and ``b``, for the example)."""
    if not isinstance(a.type, ScalarType) or not isinstance(b.type, ScalarType):
        bad = a if not isinstance(a.type, ScalarType) else b
        raise KernelTypeError(f"{what} needs scalar operands, got {bad.type}", bad.loc or loc)
    if a.type == b.type:
        return a, b
    wa, wb = is_weak(a), is_weak(b)
    for side, lit, other in ((0, a, b), (1, b, a)):
        if is_weak(lit) and not is_weak(other) and isinstance(lit.value, float) and other.type.is_int:
            raise KernelTypeError(
                f"float literal {lit.value!r} with the {other.type} operand in {what}: a float literal does not "
                f"make an integer a float; cast the integer explicitly, e.g. {cast_example(1 - side, f32, operands)}",
                lit.loc or loc)
    if wa and not wb:
        return retype_literal(a, b.type, what), b
    if wb and not wa:
        return a, retype_literal(b, a.type, what)
    if wa and wb:  # int literal with float literal
        t = f32
        return retype_literal(a, t, what), retype_literal(b, t, what)
    choices = cast_choices(a.type, b.type)
    if len(choices) == 1:
        side, t = choices[0]
        advice = f"cast the {(a.type, b.type)[side]} operand explicitly, e.g. {cast_example(side, t, operands)}"
    else:
        advice = ("cast one side explicitly, to whichever type holds the values: "
                  + " or ".join(cast_example(side, t, operands) for side, t in choices))
    raise KernelTypeError(f"mismatched operand types {a.type} and {b.type} in {what}; {advice}", loc)


def default_type(e: ir.Expr) -> ir.Expr:
    """A literal that is not adapted by context takes its default type (i32 / f32), and must fit it."""
    if is_weak(e):
        return retype_literal(e, e.type, "its default type (give it a type, e.g. i64(...), or let its "
                              "context type it)")
    return e
