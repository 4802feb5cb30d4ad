"""The language's integer, conversion, ``fmod`` and ``pow`` promises written once, on the IR.

docs/language.md 7.1-7.3 (and 5, the accuracy of ``pk.log``/``pk.log2``) promise, on every backend: integer ``//`` and ``%`` truncate, with ``x // 0 == x``,
``x % 0 == 0``, ``MIN // -1 == MIN`` and ``MIN % -1 == 0``; a shift takes its amount modulo the width;
float -> int saturates and sends NaN to 0; float ``%`` is C's exact ``fmod``; ``pk.pow`` keeps C99
Annex F's special cases. A target kind declares in its ``Capabilities.ints`` (:class:`IntSemantics`)
and ``Capabilities.floats`` (:class:`FloatSemantics`, polykern/capabilities.py) which of these its own
instructions keep; the pipeline runs :func:`legalize_numerics` on that target's copy of the IR (after
``legalize_f16``, so an f16 ``%`` or ``pow`` the target computes in f32 is seen in f32) and it writes
the others, so an emitter prints each operation as its target's plain instruction:

- ``division == "guard"``: ``a // b`` and ``a % b`` become ``a // b'`` with ``b' = 1`` where ``b == 0`` or
  (signed) ``a == MIN and b == -1``, else ``b`` (``a // 1 == a``, ``a % 1 == 0``: the promised values);
  a constant divisor other than 0 and (signed) -1 is left alone;
- ``remainder == "magnitudes"``: signed ``a % b`` is ``r = |a| % |b|`` in the unsigned type of the same
  width (``|MIN|`` is exact there; ``|b|`` of 0 is 1), then ``-r`` where ``a < 0``;
- ``shifts == "mask"``: the amount becomes ``s & (bits - 1)`` (a constant is reduced; an amount
  already masked so is left alone);
- ``float_to_int == "select"``: ``int(x)`` converts only ``x`` in ``[lo, hi)`` (``numerics.saturation_bounds``;
  0 in its place elsewhere, so the plain conversion never sees a value out of range) and selects MAX at
  or above ``hi``, MIN below ``lo`` and 0 for NaN; an f16 is widened to f32 first (exact); where the
  target declares ``finite_math`` (WGSL may assume no NaN in comparisons) an f32's NaN is also found from
  its bits;
- ``fmod == "exact"``: ``x % y`` of floats is: NaN where x is infinite or NaN or y is 0 or NaN; ``x``
  where ``|x| < |y|`` (the cases found from the bits where the target declares ``finite_math``); else with ``t = |y| * 2**k`` the largest such ``t <= |x|``, ``t`` is subtracted
  from ``r = |x|`` wherever it fits while ``t`` is halved back to ``|y|`` (each subtraction is exact:
  ``t <= r < 2t``), and ``r`` gets ``x``'s sign. An f16 remainder is computed in f32 (exact);
- ``pow == "c99"``: ``pow(x, y)`` is the target's ``pow(|x|, y)`` with C99 F.9.4.4's cases selected over
  it: y infinite, x zero, x infinite, the sign for negative x and odd integer y, NaN for negative
  finite x and non-integer y, NaN operands, ``pow(-1, +-inf) == 1``, ``pow(x, 0) == pow(1, y) == 1``.
  Infinities and NaN are found from the bits;
- ``division == "negated_divisor"``: float ``x / y`` (and ``//``) is ``q = x / -|y|``, then ``q`` where y's
  sign bit is set, else ``-q``: the same IEEE value, and the target never sees a +0.0 divisor (a nonzero
  constant divisor is left alone);
- ``log == "scale_subnormals"``: f32 ``log(x)`` / ``log2(x)`` of ``x < 2**-126`` (a subnormal, 0, negative)
  is ``log(x * 2**24) - 24 ln 2`` / ``log2(x * 2**24) - 24`` (the target's log of a subnormal is wrong; a
  target that flushes the product gives ``log(0) = -inf``, which polykern.numerics allows).

Operands used more than once are evaluated once, into temporaries (passes/rewrite.py).
"""
from __future__ import annotations

import math
from typing import Optional

from .. import capabilities
from ..capabilities import FloatSemantics, IntSemantics
from ..ir import nodes as ir
from ..ir.types import SCALAR_TYPES, ScalarType, bool_, f16, f32
from ..numerics import saturation_bounds
from .rewrite import Rewriter

__all__ = ["legalize_numerics", "legalize_with", "semantics_of"]


def semantics_of(target):
    """``(IntSemantics, FloatSemantics)`` that ``target`` (a Target or a target kind name) declared."""
    caps = capabilities.of(getattr(target, "kind", target))
    return caps.ints, caps.floats


def _k(value, t: ScalarType) -> ir.Const:
    return ir.Const(value, t)


def _b(op: str, a: ir.Expr, b: ir.Expr) -> ir.BinOp:
    return ir.BinOp(op, a, b)


def _unsigned(t: ScalarType) -> ScalarType:
    return SCALAR_TYPES[f"u{t.bits}"]


class _Numerics(Rewriter):
    PREFIX = "_num"

    def __init__(self, fn: ir.Function, ints: IntSemantics, floats: FloatSemantics):
        super().__init__(fn)
        self.ints, self.floats = ints, floats

    def node(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.BinOp) and e.op in ("div", "floordiv", "mod") and e.a.type.is_int:
            if e.op == "mod" and e.a.type.is_signed and self.ints.remainder == "magnitudes":
                return self.remainder_of_magnitudes(e)
            return e if self.ints.division == "native" else self.guarded_division(e)
        if isinstance(e, ir.BinOp) and e.op in ("shl", "shr") and e.a.type.is_int and self.ints.shifts == "mask":
            return self.masked_shift(e)
        if (isinstance(e, ir.Cast) and e.a.type.is_float and e.to.is_int and
                self.ints.float_to_int == "select"):
            return self.saturating(e.a, e.to)
        if isinstance(e, ir.BinOp) and e.op == "mod" and e.a.type.is_float and self.floats.fmod == "exact":
            if e.a.type == f16:  # the remainder of two halves is a half: exact in f32
                return ir.Cast(f16, self.fmod(ir.Cast(f32, e.a), ir.Cast(f32, e.b)))
            return self.fmod(e.a, e.b)
        if (isinstance(e, ir.BinOp) and e.op in ("div", "floordiv") and e.type.is_float and
                self.floats.division == "negated_divisor" and not _nonzero_constant(e.b)):
            q = self.divided_by_negative(e.a, e.b)
            return ir.Call("floor", [q]) if e.op == "floordiv" else q
        if (isinstance(e, ir.Call) and e.func in ("log", "log2") and e.type == f32 and
                self.floats.log == "scale_subnormals"):
            return self.log_of_subnormals(e.func, e.args[0])
        if isinstance(e, ir.Call) and e.func == "pow" and e.type.is_float and self.floats.pow == "c99":
            if e.type == f16:
                return ir.Cast(f16, self.pow(ir.Cast(f32, e.args[0]), ir.Cast(f32, e.args[1])))
            return self.pow(*e.args)
        return e

    # ------------------------------------------------------------ integers

    def guarded_division(self, e: ir.BinOp) -> ir.Expr:
        t = e.a.type
        b_const = e.b.value if isinstance(e.b, ir.Const) else None
        if b_const is not None and b_const != 0 and not (t.is_signed and b_const == -1):
            return e
        if b_const == 0:
            return ir.BinOp(e.op, e.a, _k(1, t))
        a, b = self.once(e.a), self.once(e.b)
        bad: Optional[ir.Expr] = None if b_const is not None else _b("eq", b, _k(0, t))
        if t.is_signed:
            ovf = _b("eq", a, _k(t.min_value(), t)) if b_const == -1 else \
                _b("and", _b("eq", a, _k(t.min_value(), t)), _b("eq", b, _k(-1, t)))
            bad = ovf if bad is None else _b("or", bad, ovf)
        return ir.BinOp(e.op, a, ir.Select(bad, _k(1, t), b))

    def remainder_of_magnitudes(self, e: ir.BinOp) -> ir.Expr:
        t, ut = e.a.type, _unsigned(e.a.type)
        zero = _k(0, ut)
        a = self.once(e.a)
        negative = self.temp(_b("lt", a, _k(0, t)))
        ua = self.temp(ir.Cast(ut, a))
        mag_a = ir.Select(negative, _b("sub", zero, ua), ua)
        if isinstance(e.b, ir.Const):
            mag_b: ir.Expr = _k(abs(int(e.b.value)) % (1 << t.bits) or 1, ut)
        else:
            b = self.once(e.b)
            ub = self.temp(ir.Cast(ut, b))
            mag_b = self.temp(ir.Select(_b("lt", b, _k(0, t)), _b("sub", zero, ub), ub))
            mag_b = ir.Select(_b("eq", mag_b, zero), _k(1, ut), mag_b)
        r = self.temp(_b("mod", mag_a, mag_b))
        return ir.Cast(t, ir.Select(negative, _b("sub", zero, r), r))

    def masked_shift(self, e: ir.BinOp) -> ir.Expr:
        t, s = e.a.type, e.b
        top = t.bits - 1
        if isinstance(s, ir.Const):
            n = int(s.value) % t.bits
            return e if n == s.value else ir.BinOp(e.op, e.a, _k(n, s.type))
        if (isinstance(s, ir.BinOp) and s.op == "and" and isinstance(s.b, ir.Const) and
                0 <= s.b.value <= top):
            return e
        return ir.BinOp(e.op, e.a, _b("and", s, _k(top, s.type)))

    # ------------------------------------------------------------ float -> int

    def is_nan_bits(self, x: ir.Expr) -> ir.Expr:
        """Whether ``x`` (a variable of f32 or f64) is a NaN, from its bits."""
        return _b("gt", _magnitude_bits(x), _layout(x.type)[2])

    def saturating(self, v: ir.Expr, dst: ScalarType) -> ir.Expr:
        if v.type == f16:  # every f16 is exact in f32 (and f32 reaches every bound)
            v = ir.Cast(f32, v)
        src = v.type
        lo, hi = saturation_bounds(src.name, dst.name)
        x = self.once(v)
        in_range = self.temp(_b("and", _b("ge", x, _k(lo, src)), _b("lt", x, _k(hi, src))))
        converted = ir.Cast(dst, ir.Select(in_range, x, _k(0.0, src)))
        low: ir.Expr = _k(0, dst)
        if dst.is_signed:
            low = ir.Select(_b("lt", x, _k(lo, src)), _k(dst.min_value(), dst), low)
        out = ir.Select(in_range, converted, ir.Select(_b("ge", x, _k(hi, src)), _k(dst.max_value(), dst), low))
        if src == f32 and self.floats.finite_math:
            out = ir.Select(self.is_nan_bits(x), _k(0, dst), out)
        return out

    # ------------------------------------------------------------ fmod, pow

    def fmod(self, a: ir.Expr, b: ir.Expr) -> ir.Expr:
        t = a.type
        ut, sign, inf_u = _layout(t)
        x, y = self.temp(a), self.temp(b)
        if self.floats.finite_math:  # NaN and inf from the bits: comparisons may be assumed to see none
            bx, by = self.temp(_magnitude_bits(x)), self.temp(_magnitude_bits(y))
            ax, ay = ir.Bitcast(t, bx), ir.Bitcast(t, by)
            run = _b("and", _b("and", _b("ge", bx, by), _b("lt", bx, inf_u)), _b("ne", by, _k(0, ut)))
            small = _b("and", _b("lt", bx, by), _b("le", by, inf_u))
        else:
            ax, ay = self.temp(ir.Call("abs", [x])), self.temp(ir.Call("abs", [y]))
            run = _b("and", _b("and", _b("ge", ax, ay), _b("lt", ax, ir.Bitcast(t, inf_u))), _b("gt", ay, _k(0.0, t)))
            small = _b("lt", ax, ay)
        r, mag_x, mag_y = self.fresh(t), self.fresh(t), self.fresh(t)
        step, twice, rest = self.fresh(t), self.fresh(t), self.fresh(t)
        v = lambda name: ir.Var(name, t)  # noqa: E731
        up = ir.While(ir.Const(True, bool_), [  # step = |y| * 2**k, the largest not above |x|
            ir.Assign(twice, _b("add", v(step), v(step))),
            ir.If(_b("gt", v(twice), v(mag_x)), [ir.Break()], []),
            ir.Assign(step, v(twice))])
        down = ir.While(ir.Const(True, bool_), [  # subtract it where it fits, halving it down to |y| (exact)
            ir.If(_b("ge", v(rest), v(step)), [ir.Assign(rest, _b("sub", v(rest), v(step)))], []),
            ir.Assign(step, _b("mul", v(step), _k(0.5, t))),
            ir.If(_b("lt", v(step), v(mag_y)), [ir.Break()], [])])
        if self.floats.finite_math:  # x's sign bit on the remainder
            signed = ir.Bitcast(t, _b("or", ir.Bitcast(ut, v(rest)), _b("and", ir.Bitcast(ut, x), _k(sign, ut))))
        else:  # x is not zero here, so x < 0 is its sign
            signed = ir.Select(_b("lt", x, _k(0.0, t)), ir.UnaryOp("neg", v(rest)), v(rest))
        self.pre.append(ir.Assign(r, ir.Select(small, x, _nan(t))))  # |x| < |y|: x; the special cases: NaN
        self.pre.append(ir.If(run, [ir.Assign(mag_x, ax), ir.Assign(mag_y, ay), ir.Assign(step, v(mag_y)), up,
                                    ir.Assign(rest, v(mag_x)), down, ir.Assign(r, signed)], []))
        return v(r)

    def divided_by_negative(self, a: ir.Expr, b: ir.Expr) -> ir.Expr:
        t = a.type
        y = self.once(b)
        q = self.temp(_b("div", a, ir.UnaryOp("neg", ir.Call("abs", [y]))))
        if t == f16:  # its bits are a u32's low half
            bits, sign = ir.Bitcast(SCALAR_TYPES["u32"], y), _k(0x8000, SCALAR_TYPES["u32"])
        else:
            ut, s, _ = _layout(t)
            bits, sign = ir.Bitcast(ut, y), _k(s, ut)
        return ir.Select(_b("ne", _b("and", bits, sign), _k(0, sign.type)), q, ir.UnaryOp("neg", q))

    def log_of_subnormals(self, func: str, a: ir.Expr) -> ir.Expr:
        x = self.temp(a)  # a variable even for a constant: naga const-evaluates a builtin of constants
        small = self.temp(_b("lt", x, _k(2.0 ** -126, f32)))
        r = self.temp(ir.Call(func, [ir.Select(small, _b("mul", x, _k(2.0 ** 24, f32)), x)]))
        shift = 24 * math.log(2.0) if func == "log" else 24.0
        return ir.Select(small, _b("sub", r, _k(shift, f32)), r)

    def pow(self, a: ir.Expr, b: ir.Expr) -> ir.Expr:
        t = a.type
        ut, sign, inf_u = _layout(t)
        x, y = self.once(a), self.once(b)
        k = lambda value: _k(value, t)  # noqa: E731
        inf = ir.Bitcast(t, inf_u)
        ax = self.temp(ir.Call("abs", [x]))
        y_neg = self.temp(_b("lt", y, k(0.0)))
        y_inf = self.temp(_b("eq", _magnitude_bits(y), inf_u))
        x_inf = self.temp(_b("eq", _magnitude_bits(x), inf_u))
        r: ir.Expr = ir.Call("pow", [ax, y])
        r = ir.Select(y_inf, ir.Select(_b("eq", _b("lt", ax, k(1.0)), y_neg), inf, k(0.0)), r)
        r = ir.Select(_b("eq", ax, k(0.0)), ir.Select(y_neg, inf, k(0.0)), r)
        r = self.temp(ir.Select(x_inf, ir.Select(y_neg, k(0.0), inf), r))
        y_int = self.temp(_b("eq", ir.Call("floor", [y]), y))
        half = self.temp(_b("mul", y, k(0.5)))
        y_odd = _b("and", y_int, _b("ne", ir.Call("floor", [half]), half))
        x_sign = _b("ne", _b("and", ir.Bitcast(ut, x), _k(sign, ut)), _k(0, ut))
        r = ir.Select(_b("and", x_sign, y_odd), ir.UnaryOp("neg", r), r)
        finite_negative = _b("and", _b("lt", x, k(0.0)), ir.UnaryOp("not", x_inf))
        r = ir.Select(_b("and", finite_negative, ir.UnaryOp("not", y_int)), _nan(t), r)
        any_nan = _b("or", _b("gt", _magnitude_bits(x), inf_u), _b("gt", _magnitude_bits(y), inf_u))
        r = ir.Select(any_nan, _nan(t), r)
        r = ir.Select(_b("and", _b("eq", x, k(-1.0)), y_inf), k(1.0), r)
        return ir.Select(_b("or", _b("eq", y, k(0.0)), _b("eq", x, k(1.0))), k(1.0), r)


def _nonzero_constant(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and e.value == e.value and e.value != 0


def _layout(t: ScalarType):
    """(the unsigned type of float type ``t``'s width, its sign bit, +inf's bits as a constant of it)."""
    ut = _unsigned(t)
    return ut, 1 << (t.bits - 1), _k(_inf_bits(t), ut)


def _magnitude_bits(v: ir.Expr) -> ir.Expr:
    """The bits of float ``v`` without its sign (compared with +inf's: infinite, NaN)."""
    ut, sign, _ = _layout(v.type)
    return _b("and", ir.Bitcast(ut, v), _k(sign - 1, ut))


def _inf_bits(t: ScalarType) -> int:
    mant = {32: 23, 64: 52}[t.bits]
    return ((1 << (t.bits - 1 - mant)) - 1) << mant


def _nan(t: ScalarType) -> ir.Expr:
    """A quiet NaN of ``t`` from its bits (naga rejects a NaN literal)."""
    ut = _unsigned(t)
    return ir.Bitcast(t, _k(_inf_bits(t) | (1 << ({32: 22, 64: 51}[t.bits])), ut))


def legalize_numerics(fn: ir.Function, target) -> ir.Function:
    """``fn`` with the integer, float -> int, ``fmod`` and ``pow`` promises that ``target``'s instructions do
    not keep written on the IR, as it declared in its ``Capabilities.ints`` and ``Capabilities.floats``."""
    return legalize_with(fn, *semantics_of(target))


def legalize_with(fn: ir.Function, ints: IntSemantics, floats: FloatSemantics) -> ir.Function:
    """``fn`` legalized for the given declarations (:func:`legalize_numerics` reads them off a target)."""
    fn.body = _Numerics(fn, ints, floats).stmts(fn.body)
    return fn
