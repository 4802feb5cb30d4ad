"""KernelLowering's conversions (lower.py): every scalar conversion, with float -> int saturating (NaN
to 0), f64 -> f16 rounded once (through f32 rounded to odd), and f32 -> f16 computed from the bits with
integer ops (drivers fold OpFConvert round trips). A mixin: it reads the lowering's ``self.f``,
``self.m``, ``self.ty``, ``self.const``.
"""
from __future__ import annotations

import numpy as np

from polykern.errors import KernelTypeError
from polykern.ir.types import SCALAR_TYPES, ScalarType, bf16, bool_, f32, f64, u32
from polykern.numerics import saturation_bounds

from . import lower_bf16
from .spirv_spec import Op


class ConvertLowering:
    """Scalar conversions (mixed into KernelLowering)."""

    def convert(self, v: int, src: ScalarType, dst: ScalarType, exact: bool = False) -> int:
        """C-style conversion of ``v`` from ``src`` to ``dst``. ``exact``: ``v`` is known to be
        representable in ``dst`` (an f16 push constant in its f32 slot), so no rounding is needed."""
        f = self.f
        if src == dst:
            return v
        if bf16 in (src, dst):  # only to and from f32 after passes/widen_bf16.py
            if {src, dst} != {bf16, f32}:
                raise KernelTypeError(f"vulkan backend: a {src} -> {dst} conversion reached the lowering "
                                      "(bf16 converts through f32)", self.fn.loc)
            return (lower_bf16.to_bf16 if dst == bf16 else lower_bf16.from_bf16)(self, v)
        if dst.is_bool:
            if src.is_float:
                return f.val(Op.FUnordNotEqual, self.ty(bool_), v, self.const(src, 0.0))
            return f.val(Op.INotEqual, self.ty(bool_), v, self.const(src, 0))
        if src.is_bool:
            one = 1.0 if dst.is_float else 1
            zero = 0.0 if dst.is_float else 0
            return f.val(Op.Select, self.ty(dst), v, self.const(dst, one), self.const(dst, zero))
        if src.is_float and dst.is_float:
            if dst.bits == 16 and not exact:
                if src.bits == 64:  # via f32 rounded to odd: then one rounding to f16 is exact
                    v = self.f64_to_f32_odd(v)
                return self.f32_to_f16(v)
            # NoContraction makes the conversion "exact" for drivers' optimizers: Mesa otherwise folds
            # f32 -> f16 -> f32 into a no-op and the value never rounds to half precision.
            out = f.val(Op.FConvert, self.ty(dst), v)
            self.m.decorate(out, "NoContraction")
            return out
        if src.is_float:
            return self.float_to_int(v, src, dst)
        if dst.is_float:
            if dst.bits == 16:
                v = self.clamp_for_f16(v, src)
            return f.val(Op.ConvertSToF if src.is_signed else Op.ConvertUToF, self.ty(dst), v)
        # integer -> integer: extend by the source's signedness, then reinterpret the sign.
        from polykern.ir.types import SCALAR_TYPES

        if src.bits != dst.bits:
            if src.is_signed and dst.bits == 64:
                return self.sign_extend_to_64(v, src, dst)
            if src.is_signed:
                return f.val(Op.SConvert, self.ty(dst), v)
            wide = SCALAR_TYPES[f"u{dst.bits}"]
            v = f.val(Op.UConvert, self.ty(wide), v)
            src = wide
            if src == dst:
                return v
        return f.val(Op.Bitcast, self.ty(dst), v)

    def clamp_for_f16(self, v: int, src: ScalarType) -> int:
        """An integer about to become f16, clamped to +-65520 (the least magnitude f16 rounds to inf, so
        the result is unchanged). Without it lavapipe (its LLVM's instcombine) widens ``i2f16`` of a value
        with few significant bits straight to f32, ignoring f16's exponent range: ``f32(f16(a << 31))``
        gave -2**31, not -inf (tests/test_int_to_f16.py; the LLVM backends clamp the f32 they convert)."""
        if src.bits < 16 or (src.bits == 16 and src.is_signed):  # i8/u8/i16 always fit; u16 may reach 65535
            return v
        f = self.f
        b = self.ty(bool_)
        hi = self.const(src, 65520)
        if not src.is_signed:
            return f.val(Op.Select, self.ty(src), f.val(Op.UGreaterThan, b, v, hi), hi, v)
        v = f.val(Op.Select, self.ty(src), f.val(Op.SGreaterThan, b, v, hi), hi, v)
        lo = self.const(src, -65520)
        return f.val(Op.Select, self.ty(src), f.val(Op.SLessThan, b, v, lo), lo, v)

    def sign_extend_to_64(self, v: int, src: ScalarType, dst: ScalarType) -> int:
        """``v`` (signed, narrower) sign-extended to the 64-bit ``dst`` without OpSConvert to 64 bits:
        (zero-extended v32 ^ 2**31) - 2**31. Mesa 22.3's lavapipe compares an OpSConvert'ed i32 with
        a constant as if it had been zero-extended (i64(-1) < 0 was false: fuzz case fz6000113,
        i64(s) % 21 gave 15); no driver sees a sign extension here to rewrite."""


        f = self.f
        if src.bits < 32:
            v = f.val(Op.SConvert, self.ty(SCALAR_TYPES["i32"]), v)
        u64_ = SCALAR_TYPES["u64"]
        wide = f.val(Op.UConvert, self.ty(u64_), f.val(Op.Bitcast, self.ty(u32), v))
        bias = self.const(u64_, 1 << 31)
        out = f.val(Op.ISub, self.ty(u64_), f.val(Op.BitwiseXor, self.ty(u64_), wide, bias), bias)
        return out if dst == u64_ else f.val(Op.Bitcast, self.ty(dst), out)

    def f64_to_f32_odd(self, d: int) -> int:
        """``d`` rounded to f32 *to odd* (truncated, lowest bit set when inexact): rounding that to f16
        (11 bits) gives the correctly rounded f16 of ``d``, where going through an RNE f32 rounds twice."""
        f = self.f
        bid, uid = self.ty(bool_), self.ty(u32)
        r = f.val(Op.FConvert, self.ty(f32), d)
        self.m.decorate(r, "NoContraction")
        back = f.val(Op.FConvert, self.ty(f64), r)
        self.m.decorate(back, "NoContraction")
        inexact = f.val(Op.LogicalNot, bid, f.val(Op.FOrdEqual, bid, back, d))
        away = f.val(Op.FOrdGreaterThan, bid, self.glsl("FAbs", f64, back), self.glsl("FAbs", f64, d))
        bits = f.val(Op.Bitcast, uid, r)
        bits = f.val(Op.Select, uid, away, f.val(Op.ISub, uid, bits, self.u32c(1)), bits)
        bits = f.val(Op.Select, uid, inexact, f.val(Op.BitwiseOr, uid, bits, self.u32c(1)), bits)
        return f.val(Op.Bitcast, self.ty(f32), bits)

    def float_to_int(self, v: int, src: ScalarType, dst: ScalarType) -> int:
        """Saturating conversion, NaN -> 0 (polykern.numerics.float_to_int): OpConvertFTo* only on
        values in range (it is undefined outside), selects for the rest. The bounds are exact powers
        of two; where the type cannot reach one (f16 -> i32: hi = inf), the largest finite value
        bounds the range instead, so infinities still saturate."""
        f = self.f
        lo, hi = saturation_bounds(src.name, dst.name)
        lo = max(lo, -float(np.finfo(src.numpy).max))
        bid, tid = self.ty(bool_), self.ty(dst)
        above = f.val(Op.FOrdGreaterThanEqual, bid, v, self.const(src, hi))
        in_range = f.val(Op.LogicalAnd, bid, f.val(Op.FOrdGreaterThanEqual, bid, v, self.const(src, lo)),
                         f.val(Op.LogicalNot, bid, above))
        safe = f.val(Op.Select, self.ty(src), in_range, v, self.const(src, 0.0))
        conv = f.val(Op.ConvertFToS if dst.is_signed else Op.ConvertFToU, tid, safe)
        low = self.const(dst, 0)
        if dst.is_signed:  # below MIN -> MIN; NaN -> 0
            low = f.val(Op.Select, tid, f.val(Op.FOrdLessThan, bid, v, self.const(src, lo)),
                        self.const(dst, dst.min_value()), low)
        out_of_range = f.val(Op.Select, tid, above, self.const(dst, dst.max_value()), low)
        return f.val(Op.Select, tid, in_range, conv, out_of_range)

    def f32_to_f16(self, v: int) -> int:
        """f32 -> f16, round to nearest even, with 32-bit integer ops on the bit pattern and no
        OpFConvert: NVIDIA's driver folds an f32 -> f16 -> f32 OpFConvert pair into a no-op even
        when both are decorated NoContraction, so the value never rounds to half precision.

        With x the f32 bits and ax = x & 0x7fffffff (all unsigned; h gets the sign bit x >> 16 & 0x8000):
        - NaN (ax > 0x7f800000): quiet NaN 0x7e00 | top 10 mantissa bits;
        - ax >= 0x477ff000 (65520, the tie above 65504 = max half; inf included): inf 0x7c00;
        - ax >= 0x38800000 (2**-14, the smallest normal half): rebias the exponent (- 112 << 23), then
          (y + 0xfff + ((y >> 13) & 1)) >> 13 rounds 13 dropped bits to nearest even (a carry into
          the exponent is the correct next binade);
        - else a subnormal half (or zero): m = 24-bit significand, s = 126 - exponent (>= 14) is the
          shift that leaves units of 2**-24; q = m >> s, rounded up if the dropped bits exceed half,
          or equal half and q is odd; s >= 25 gives 0 (m < 2**24 < half of 2**25; f32 subnormals too).
        The 16-bit pattern is the low half of a u32 bitcast to a 2 x f16 vector (component 0 is the
        low-order bits), so no Int16 capability is needed."""
        from polykern.ir.types import f16

        f, m = self.f, self.m
        u, b = self.ty(u32), self.ty(bool_)
        c = self.u32c

        def op(opcode, *args):
            return f.val(opcode, u, *args)

        def sel(cond, x, y):
            return f.val(Op.Select, u, cond, x, y)

        x = op(Op.Bitcast, v)
        sign = op(Op.BitwiseAnd, op(Op.ShiftRightLogical, x, c(16)), c(0x8000))
        ax = op(Op.BitwiseAnd, x, c(0x7FFFFFFF))
        # NaN
        nan = op(Op.BitwiseOr, c(0x7E00), op(Op.BitwiseAnd, op(Op.ShiftRightLogical, ax, c(13)), c(0x3FF)))
        # normal half
        y = op(Op.ISub, ax, c(112 << 23))
        odd = op(Op.BitwiseAnd, op(Op.ShiftRightLogical, y, c(13)), c(1))
        normal = op(Op.ShiftRightLogical, op(Op.IAdd, y, op(Op.IAdd, c(0xFFF), odd)), c(13))
        # subnormal half (or zero)
        mant = op(Op.BitwiseOr, op(Op.BitwiseAnd, ax, c(0x7FFFFF)), c(0x800000))
        shift = op(Op.ISub, c(126), op(Op.ShiftRightLogical, ax, c(23)))  # >= 14 on this path
        too_small = f.val(Op.UGreaterThan, b, shift, c(24))
        s = sel(too_small, c(24), shift)  # keeps the shifts below in range; the result is 0 anyway
        q = op(Op.ShiftRightLogical, mant, s)
        half = op(Op.ShiftLeftLogical, c(1), op(Op.ISub, s, c(1)))
        rest = op(Op.BitwiseAnd, mant, op(Op.ISub, op(Op.ShiftLeftLogical, c(1), s), c(1)))
        above = f.val(Op.UGreaterThan, b, rest, half)
        tie_odd = f.val(Op.LogicalAnd, b, f.val(Op.IEqual, b, rest, half),
                        f.val(Op.INotEqual, b, op(Op.BitwiseAnd, q, c(1)), c(0)))
        up = f.val(Op.LogicalOr, b, above, tie_odd)
        sub = sel(too_small, c(0), op(Op.IAdd, q, sel(up, c(1), c(0))))
        # pick
        h = sel(f.val(Op.UGreaterThanEqual, b, ax, c(0x38800000)), normal, sub)
        h = sel(f.val(Op.UGreaterThanEqual, b, ax, c(0x477FF000)), c(0x7C00), h)
        h = sel(f.val(Op.UGreaterThan, b, ax, c(0x7F800000)), nan, h)
        h = op(Op.BitwiseOr, h, sign)
        half_t = self.ty(f16)
        pair = f.val(Op.Bitcast, m.t_vector(half_t, 2), h)
        return f.val(Op.CompositeExtract, half_t, pair, 0)

    # ------------------------------------------------------------------ atomics
