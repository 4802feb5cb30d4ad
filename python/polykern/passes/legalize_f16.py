"""Conversions to the 16-bit floats written once, on the IR: f16 for targets whose own conversion does not
keep the promise, bf16 everywhere.

docs/language.md 7.3: a conversion to f16 rounds once to nearest even, overflows to inf, keeps
subnormals and keeps a NaN a NaN. Some targets' instruction meets that (NVPTX ``cvt.rn``, LLVM's
``fptrunc`` on the CPUs); others' does not reliably: drivers fold a SPIR-V ``OpFConvert`` f32 -> f16 -> f32
pair into nothing (NVIDIA, newer lavapipe) and lavapipe's LLVM widens an integer's ``i2f16`` past f16's
range. A backend declares what its target needs in its ``Capabilities.f16`` (polykern/capabilities.py: "bits": this pass rounds on
the integer bits, so the emitter only prints integer operations and an ``ir.Bitcast``; "clamp": the
target's own conversion rounds correctly but its LLVM folds past f16's range, so the value is clamped
first); the pipeline runs :func:`legalize_f16` on that target's copy of the IR (:func:`needs_soft_f16`
says whether a target rounds on the bits).

Rewrites for "bits" (after ``widen_bf16``: bf16 is only converted to and from f32):

- ``f16(x)`` of an f32: the rounding below on ``x``'s bits;
- ``f16(x)`` of an f64: ``x`` rounded to f32 *to odd* first (truncated, lowest bit set when inexact), so
  the one rounding to f16 is the correctly rounded f16 of ``x``;
- ``f16(n)`` of an integer: ``f16(f32(n))`` (exact up to 65520, and every larger magnitude is inf either way);
- the f16 operations the target lists in ``ops_in_f32`` (``div``, ``floordiv``, ``mod``, ``pow``, ``fma``):
  computed in f32 and rounded once, as above (``a // b`` is the floor of the rounded ``a / b``; ``fma`` is
  the exact f32 product plus ``c``, one f32 rounding, as the targets' own f16 fma gave).

For "clamp": ``f16(x)`` of an f32 or f64 is ``f16(clamp(x))``, of an integer that can reach 65520
``f16(clamp(f32(n)))`` (``clamped``: +-65520, a NaN kept by its own select).

bf16 (every target but the interpreter): ``bf16(x)`` of an f32 is docs/language.md 1.1's rounding on the
bits (``bf16_of_f32``), ``f32(b)`` of a bf16 the bits shifted up; ``ir.Bitcast`` moves between a bf16 and
the low half of a u32.

The rounding of the f32 bits ``x`` to f16 (all u32; ``ax = x & 0x7fffffff``; the sign ``x >> 16 & 0x8000``):
NaN (``ax > 0x7f800000``): quiet NaN ``0x7e00 | ax >> 13 & 0x3ff``; ``ax >= 0x477ff000`` (65520, the tie
above 65504): inf ``0x7c00``; ``ax >= 0x38800000`` (2**-14): the exponent rebiased (``y = ax - (112 << 23)``)
and ``(y + 0xfff + (y >> 13 & 1)) >> 13`` (13 dropped bits to nearest even; a carry is the next binade);
else a subnormal or zero: the 24-bit significand ``m`` shifted right by ``s = 126 - exponent`` (units of
2**-24), rounded up when the dropped bits exceed half or equal it with the kept value odd; ``s > 24``
gives 0.

The operand of a rewritten conversion is evaluated once, into a temporary assigned just before the
statement (a ``while`` condition's temporaries are assigned at the top of its body, followed by the
test and a ``break``; a short-circuit right operand that needs temporaries becomes a temporary set in an
``if``, so it keeps its condition).
"""
from __future__ import annotations

from typing import Optional

from .. import capabilities
from ..capabilities import F16Rounding
from ..ir import nodes as ir
from ..ir.types import bf16, f16, f32, f64, u32
from .rewrite import Rewriter

def f16_rounding(target) -> Optional[F16Rounding]:
    """How ``target`` (a Target or a target kind name) declared its conversions to f16 (its
    ``Capabilities.f16``), or None: its own instruction keeps the promise."""
    return capabilities.of(getattr(target, "kind", target)).f16


def needs_soft_f16(target) -> bool:
    """Whether ``target``'s conversions to f16 are rounded on the bits by :func:`legalize_f16`."""
    decl = f16_rounding(target)
    return decl is not None and decl.how == "bits"


# ---------------------------------------------------------------- IR builders


def _c(n: int) -> ir.Const:
    return ir.Const(n, u32)


def _b(op: str, a: ir.Expr, b) -> ir.Expr:
    return ir.BinOp(op, a, b if isinstance(b, ir.Expr) else _c(b))


def _sel(cond: ir.Expr, a, b) -> ir.Expr:
    return ir.Select(cond, a if isinstance(a, ir.Expr) else _c(a), b if isinstance(b, ir.Expr) else _c(b))


class _Legalizer(Rewriter):
    PREFIX = "_cvt16_"

    def __init__(self, fn: ir.Function, decl: Optional[F16Rounding]):
        super().__init__(fn)
        self.decl = decl
        self.ops = set(decl.ops_in_f32) if decl is not None else set()
        self.bits = decl is not None and decl.how == "bits"

    def f16_of_f32_bits(self, v: ir.Expr) -> ir.Expr:
        x = self.temp(ir.Bitcast(u32, v))
        sign = _b("and", _b("shr", x, 16), 0x8000)
        ax = self.temp(_b("and", x, 0x7FFFFFFF))
        nan = _b("or", _b("and", _b("shr", ax, 13), 0x3FF), 0x7E00)
        y = self.temp(_b("sub", ax, 112 << 23))
        normal = _b("shr", _b("add", y, _b("add", _b("and", _b("shr", y, 13), 1), 0xFFF)), 13)
        mant = self.temp(_b("or", _b("and", ax, 0x7FFFFF), 0x800000))
        shift = self.temp(_b("sub", _c(126), _b("shr", ax, 23)))  # >= 14 where the result is used
        too_small = _b("gt", shift, 24)
        s = self.temp(_sel(too_small, 24, shift))  # keeps every shift below in range
        q = self.temp(_b("shr", mant, s))
        half = self.temp(_b("shl", _c(1), _b("and", _b("sub", s, 1), 31)))
        rest = self.temp(_b("and", mant, _b("sub", _b("shl", _c(1), s), 1)))
        up = _b("or", _sel(_b("gt", rest, half), 1, 0), _sel(_b("eq", rest, half), _b("and", q, 1), 0))
        sub = _sel(_b("gt", shift, 24), 0, _b("add", q, up))
        h = _sel(_b("ge", ax, 0x38800000), normal, sub)
        h = _sel(_b("ge", ax, 0x477FF000), 0x7C00, h)
        h = _sel(_b("gt", ax, 0x7F800000), nan, h)
        return ir.Bitcast(f16, _b("or", h, sign))

    def f32_odd_of_f64(self, d: ir.Expr) -> ir.Expr:
        """``d`` rounded to f32 to odd (then one rounding to f16's 11 bits is the correct one)."""
        d = self.temp(d)
        r = self.temp(ir.Cast(f32, d))
        back = self.temp(ir.Cast(f64, r))
        bits = ir.Bitcast(u32, r)
        away = ir.BinOp("gt", ir.Call("abs", [back]), ir.Call("abs", [d]))
        bits = _sel(away, _b("sub", bits, 1), bits)
        bits = _sel(ir.BinOp("ne", back, d), _b("or", bits, 1), bits)
        return ir.Bitcast(f32, bits)

    def clamped(self, v: ir.Expr) -> ir.Expr:
        """``v`` (f32 or f64) clamped to +-65520 (every larger magnitude rounds to inf in f16, so the result
        is unchanged; after the clamp an 11-bit value is at most 65504, where LLVM's fold is exact); a NaN
        by its own select (LLVM's Hexagon backend turns a compare-and-select clamp into sfmin/sfmax, which
        return the other operand for a NaN: tests/test_f16_nan_clamp.py)."""
        t = self.temp(v)
        hi, lo = ir.Const(65520.0, v.type), ir.Const(-65520.0, v.type)
        c = self.temp(ir.Select(ir.BinOp("gt", t, hi), hi, t))
        return ir.Select(ir.BinOp("ne", t, t), t, ir.Select(ir.BinOp("lt", c, lo), lo, c))

    def to_f16(self, v: ir.Expr) -> ir.Expr:
        src = v.type
        if not self.bits:
            if src.is_int and (src.bits < 16 or (src.bits == 16 and src.is_signed)):
                return ir.Cast(f16, v)  # always below 65520
            return ir.Cast(f16, self.clamped(ir.Cast(f32, v) if src.is_int else v))
        if src == f64:
            v = self.f32_odd_of_f64(v)
        elif src.is_int:
            v = ir.Cast(f32, v)
        return self.f16_of_f32_bits(v)

    def bf16_of_f32(self, v: ir.Expr) -> ir.Expr:
        """docs/language.md 1.1 (ir/bfloat16.py): to nearest even on the bits, a NaN (found on the bits, so
        no flushing or fast math can hide it) keeps its sign and upper payload with the quiet bit set."""
        x = self.temp(ir.Bitcast(u32, v))
        upper = self.temp(_b("shr", x, 16))
        rounded = _b("shr", _b("add", x, _b("add", _b("and", upper, 1), 0x7FFF)), 16)
        nan = _b("gt", _b("and", x, 0x7FFFFFFF), 0x7F800000)
        return ir.Bitcast(bf16, _sel(nan, _b("or", upper, 0x40), rounded))

    def node(self, e: ir.Expr) -> ir.Expr:
        """``e`` (its operands already rewritten) legalized."""
        if isinstance(e, ir.Cast) and e.to == bf16 and e.a.type == f32:
            return self.bf16_of_f32(e.a)
        if isinstance(e, ir.Cast) and e.to == f32 and e.a.type == bf16:  # exact: the upper half
            return ir.Bitcast(f32, _b("shl", ir.Bitcast(u32, e.a), 16))
        if self.decl is None:
            return e
        if isinstance(e, ir.Cast) and e.to == f16 and e.a.type != f16 and (e.a.type.is_float or
                                                                             e.a.type.is_int):
            return self.to_f16(e.a)
        if e.type == f16 and ((isinstance(e, ir.BinOp) and e.op in self.ops) or
                              (isinstance(e, ir.Call) and e.func in self.ops)):
            wide = [ir.Cast(f32, a) for a in e.children()]
            if isinstance(e, ir.Call) and e.func == "fma":  # the product of two halves is exact in f32
                return self.to_f16(ir.BinOp("add", ir.BinOp("mul", wide[0], wide[1]), wide[2]))
            if isinstance(e, ir.BinOp) and e.op == "floordiv":  # floor of the f16 quotient
                return ir.Call("floor", [self.to_f16(ir.BinOp("div", *wide))])
            w = ir.BinOp(e.op, *wide) if isinstance(e, ir.BinOp) else ir.Call(e.func, wide)
            return self.to_f16(w)
        return e


def legalize_f16(fn: ir.Function, target) -> ir.Function:
    """``fn`` with its bf16 conversions written on the bits (every target: none has a conversion
    instruction polykern uses), and its conversions to f16 (and the declared f16 operations) as ``target``
    declared in its ``Capabilities.f16`` (unchanged without one)."""
    decl = f16_rounding(target)
    used = ir.used_types(fn)
    if bf16 not in used and (decl is None or f16 not in used):
        return fn
    fn.body = _Legalizer(fn, decl if f16 in used else None).stmts(fn.body)
    return fn
