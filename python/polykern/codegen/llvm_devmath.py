"""Transcendental functions for GPUs without a device math library, as IEEE operations in IR.

:class:`PortableMath` is a mixin for :class:`polykern.codegen.llvm_emitter.LLVMKernelEmitter` that
expands ``exp exp2 log log2 sin cos tanh pow`` in f32 and f64 (f16 through f32) into fma, rint,
division, integer and bit operations and a constant table of 2/pi, so the same expansion runs on
every LLVM target and is checked on the CPU (``backends/rocm/tests/test_rocm_math.py``): within 2 ulp of the
correctly rounded result, huge ``sin``/``cos`` arguments included. The ROCm emitter keeps LLVM's
intrinsics for f16/f32 ``exp exp2 log log2``, which the AMDGPU backend lowers to the hardware
instructions with full-precision range handling. Used by the nvptx and rocm code generators.
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import factorial
from typing import List, Tuple

import numpy as np
from llvmlite import ir as ll

from polykern.codegen.llvm_types import I1, I32, I64, value_type
from polykern.ir.types import ScalarType, f32, f64

TRANSCENDENTAL = ("exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow")


# ---------------------------------------------------------------- constants, derived here


def _pi_fraction(bits: int = 320) -> Fraction:
    """pi to ``bits`` bits (Machin's formula in integer arithmetic)."""
    g = bits + 16
    one = 1 << g

    def atan_inv(n: int) -> int:  # atan(1/n) * 2**g
        total, power, k, sign = 0, one // n, 1, 1
        while power:
            total += sign * (power // k)
            power //= n * n
            k += 2
            sign = -sign
        return total

    return Fraction(16 * atan_inv(5) - 4 * atan_inv(239), one)


PI = _pi_fraction(1400)  # enough for the 2/pi table below
LN2 = Fraction(6931471805599453094172321214581765680755, 10 ** 40)  # ln 2, 40 digits
# 2/pi as 32-bit words: table bit p (0 = most significant bit of word 0) is fraction bit p-31 of
# 2/pi, so the first word is zero and a window may start just before the binary point.
_TABLE_WORDS = 40  # f64 windows end below bit 1001 + 30 + 192
_TWO_OVER_PI_BITS = 2 * PI.denominator * (1 << (32 * _TABLE_WORDS - 32)) // PI.numerator
TWO_OVER_PI_TABLE = [(_TWO_OVER_PI_BITS >> (32 * (_TABLE_WORDS - 1 - j))) & 0xFFFFFFFF
                     for j in range(_TABLE_WORDS)]


def _split(value: Fraction, parts: int, fmt: "_FP") -> List[float]:
    """``value`` as ``parts`` floats of ``fmt`` whose exact sum approximates it (Cody-Waite)."""
    out, rest = [], value
    for _ in range(parts):
        v = fmt.round(rest)
        out.append(v)
        rest -= Fraction(v)
    return out


@lru_cache(maxsize=None)
def _tanh_taylor(terms: int) -> List[Fraction]:
    """Coefficients c1.. of tanh(x) = x + x * sum(c_k x^(2k)) (from Bernoulli numbers)."""
    n_max = terms + 1
    bern = [Fraction(1)]
    for m in range(1, 2 * n_max + 1):
        bern.append(-sum(Fraction(factorial(m + 1), factorial(j) * factorial(m + 1 - j)) * bern[j]
                         for j in range(m)) / (m + 1))
    out = []
    for n in range(2, n_max + 1):  # x^(2n-1)
        out.append(Fraction(2 ** (2 * n) * (2 ** (2 * n) - 1)) * bern[2 * n] / factorial(2 * n))
    return out


class _FP:
    """One float format: LLVM type, integer twin, exponent bias, polynomial sizes."""

    def __init__(self, st: ScalarType):
        self.st, self.bits = st, st.bits
        self.ty = value_type(st)
        self.ity = ll.IntType(st.bits)
        self.mant = 23 if st.bits == 32 else 52
        self.bias = 127 if st.bits == 32 else 1023
        self._np = np.float32 if st.bits == 32 else np.float64
        self.exp_terms = 8 if st.bits == 32 else 14  # Taylor terms of e^r, |r| <= ln2/2
        self.log_terms = 4 if st.bits == 32 else 10  # terms of the atanh series, s^2 <= 0.0295
        self.tanh_terms = 9 if st.bits == 32 else 18  # Taylor terms of tanh, |x| < 0.5
        self.sin_terms = 4 if st.bits == 32 else 9  # Taylor terms of sin after r, |r| <= pi/4
        self.trig_fast_log2 = 17 if st.bits == 32 else 30  # Cody-Waite below 2^this, Payne-Hanek above

    def round(self, q) -> float:
        """The float of this format nearest to the rational ``q``."""
        if self.bits == 64:
            return float(q)
        v = np.float32(float(q))
        # float(q) may sit on a tie of f32 after double rounding; pick the nearer neighbour exactly.
        cands = [v, np.nextafter(v, np.float32(np.inf)), np.nextafter(v, np.float32(-np.inf))]
        return float(min(cands, key=lambda c: abs(Fraction(float(c)) - Fraction(q))))

    def const(self, v) -> ll.Constant:
        return ll.Constant(self.ty, float(self._np(v)) if not isinstance(v, Fraction) else self.round(v))


F32, F64 = _FP(f32), _FP(f64)


class PortableMath:
    """Mixin for an :class:`LLVMKernelEmitter` (put it first in the bases): the functions of
    :data:`TRANSCENDENTAL` in f16 (through f32), f32 and f64, built from IEEE operations that every
    GPU has (fma, rint, division, integer and bit operations, a constant table). Nothing here is
    target-specific, so the same expansions run, and are checked, on a CPU."""

    CONST_AS = 0  # address space of the 2/pi table (a constant global)
    def math_call(self, func: str, st: ScalarType, args: List[ll.Value]) -> ll.Value:
        if not (st.is_float and func in TRANSCENDENTAL):
            return super().math_call(func, st, args)
        impl = getattr(self, f"pm_{func}")
        if st.bits == 16:  # through f32, rounded once at the end
            b = self.builder
            return b.fptrunc(impl(F32, *[b.fpext(a, F32.ty) for a in args]), value_type(st))
        return impl(F64 if st.bits == 64 else F32, *args)

    # ------------------------------------------------------------------ small helpers
    def _fcall(self, name: str, fp: _FP, *args) -> ll.Value:
        return self.call_intrinsic(f"llvm.{name}.f{fp.bits}", fp.ty, list(args))

    def _fma(self, fp, a, b, c):
        return self._fcall("fma", fp, a, b, c)

    def _horner(self, fp, x, coeffs) -> ll.Value:
        """sum(coeffs[k] * x**k) by Horner's rule with fma."""
        acc = fp.const(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self._fma(fp, acc, x, fp.const(c))
        return acc

    def _clamp(self, fp, x, lo: float, hi: float):
        """min(max(x, lo), hi) that keeps NaN."""
        b = self.builder
        x = b.select(b.fcmp_ordered("<", x, fp.const(lo)), fp.const(lo), x)
        return b.select(b.fcmp_ordered(">", x, fp.const(hi)), fp.const(hi), x)

    def _pow2i(self, fp, k) -> ll.Value:
        """2**k for an integer ``k`` (of ``fp.ity``) within the normal exponent range."""
        b = self.builder
        biased = b.add(k, ll.Constant(fp.ity, fp.bias))
        return b.bitcast(b.shl(biased, ll.Constant(fp.ity, fp.mant)), fp.ty)

    def _scale(self, fp, p, n) -> ll.Value:
        """p * 2**n for an integral float ``n`` (callers clamp it so that n/2 is a normal exponent):
        two power-of-two factors, each normal, so only the last multiplication rounds."""
        b = self.builder
        ni = self.call_intrinsic(f"llvm.fptosi.sat.i{fp.bits}.f{fp.bits}", fp.ity, [n])
        n1 = b.ashr(ni, ll.Constant(fp.ity, 1))
        n2 = b.sub(ni, n1)
        return b.fmul(b.fmul(p, self._pow2i(fp, n1)), self._pow2i(fp, n2))

    def _two_sum(self, x, y):
        """(s, err) with s = fl(x + y) and s + err == x + y exactly (Knuth's TwoSum)."""
        b = self.builder
        s = b.fadd(x, y)
        yv = b.fsub(s, x)
        return s, b.fadd(b.fsub(x, b.fsub(s, yv)), b.fsub(y, yv))

    def _signbit(self, fp, x) -> ll.Value:
        return self.builder.icmp_signed("<", self.builder.bitcast(x, fp.ity), ll.Constant(fp.ity, 0))

    # ------------------------------------------------------------------ exp family
    def _exp_reduced(self, fp, r, n) -> ll.Value:
        """e**r * 2**n for |r| <= ln2/2."""
        return self._scale(fp, self._horner(fp, r, [Fraction(1, factorial(k)) for k in range(fp.exp_terms)]), n)

    def _exp_range(self, fp):
        # Beyond these e**x is 0 or inf in the format; inside, n fits the split scale.
        return (-110.0, 100.0) if fp.bits == 32 else (-760.0, 720.0)

    def pm_exp(self, fp, x):
        b = self.builder
        x = self._clamp(fp, x, *self._exp_range(fp))
        n = self._fcall("rint", fp, b.fmul(x, fp.const(1 / LN2)))
        ln2_hi, ln2_lo = _split(LN2, 2, fp)
        nn = b.fneg(n)
        r = self._fma(fp, nn, fp.const(ln2_hi), x)
        r = self._fma(fp, nn, fp.const(ln2_lo), r)
        return self._exp_reduced(fp, r, n)

    def pm_exp2(self, fp, x):
        b = self.builder
        lo, hi = self._exp_range(fp)
        x = self._clamp(fp, x, lo * 1.5, hi * 1.5)
        n = self._fcall("rint", fp, x)
        f = b.fsub(x, n)  # exact
        return self._exp_reduced(fp, b.fmul(f, fp.const(LN2)), n)

    # ------------------------------------------------------------------ log family
    def _log_parts(self, fp, x) -> Tuple[ll.Value, ll.Value, ll.Value]:
        """(e, f, c) with ln x = e*ln2 + f - c: x = 2**e * m, m in [sqrt(1/2), sqrt(2)), f = m - 1
        exactly and c the small correction; for finite x > 0."""
        b = self.builder
        it = fp.ity
        tiny = b.fcmp_ordered("<", x, fp.const(2.0 ** (1 - fp.bias)))  # subnormal: scale up first
        xs = b.select(tiny, b.fmul(x, fp.const(2.0 ** fp.mant)), x)
        bits = b.bitcast(xs, it)
        e = b.sub(b.lshr(bits, ll.Constant(it, fp.mant)), ll.Constant(it, fp.bias))
        e = b.sub(e, b.select(tiny, ll.Constant(it, fp.mant), ll.Constant(it, 0)))
        mbits = b.or_(b.and_(bits, ll.Constant(it, (1 << fp.mant) - 1)), ll.Constant(it, fp.bias << fp.mant))
        m = b.bitcast(mbits, fp.ty)
        big = b.fcmp_ordered(">", m, fp.const(2 ** 0.5))
        m = b.select(big, b.fmul(m, fp.const(0.5)), m)
        e = b.add(e, b.zext(big, it))
        # ln m = 2 atanh(s), s = f/(2+f): ln m = f - s*(f - R), R = 2s^2/3 + 2s^4/5 + ...
        f = b.fsub(m, fp.const(1.0))
        s = b.fdiv(f, b.fadd(f, fp.const(2.0)))
        z = b.fmul(s, s)
        coeffs = [Fraction(2, 2 * k + 1) for k in range(1, fp.log_terms + 1)]
        big_r = b.fmul(z, self._horner(fp, z, coeffs))
        return b.sitofp(e, fp.ty), f, b.fmul(s, b.fsub(f, big_r))

    def _log_specials(self, fp, x, finite_result):
        """Result for x > 0 finite, else -inf (x == 0), +inf (x == inf), NaN (x < 0 or NaN)."""
        b = self.builder
        inf = fp.const(float("inf"))
        ok = b.and_(b.fcmp_ordered(">", x, fp.const(0.0)), b.fcmp_ordered("<", x, inf))
        special = b.select(b.fcmp_ordered("==", x, fp.const(0.0)), fp.const(float("-inf")),
                           b.select(b.fcmp_ordered("==", x, inf), inf, fp.const(float("nan"))))
        return b.select(ok, finite_result, special)

    def _ln(self, fp, x):
        e, f, c = self._log_parts(fp, x)
        ln2_hi, ln2_lo = _split(LN2, 2, fp)
        return self._fma(fp, e, fp.const(ln2_hi), self._fma(fp, e, fp.const(ln2_lo), self.builder.fsub(f, c)))

    def pm_log(self, fp, x):
        return self._log_specials(fp, x, self._ln(fp, x))

    def pm_log2(self, fp, x):
        e, f, c = self._log_parts(fp, x)
        return self._log_specials(fp, x, self._fma(fp, self.builder.fsub(f, c), fp.const(1 / LN2), e))

    # ------------------------------------------------------------------ pow
    def _pow_abs(self, fp, ax, y):
        """|a|**y for ax = |a|. f32: exp(y * ln|a|) in f64, rounded once. f64: ln|a| as a
        double-f64 (hi + lo) so that y * ln|a| keeps its low bits, then exp(hi) * (1 + lo)."""
        b = self.builder
        if fp.bits == 32:
            wa, wy = b.fpext(ax, F64.ty), b.fpext(y, F64.ty)
            ln = self._log_specials(F64, wa, self._ln(F64, wa))
            return b.fptrunc(self.pm_exp(F64, b.fmul(wy, ln)), fp.ty)
        e, f, c = self._log_parts(fp, ax)
        l_hi = float(Fraction(round(LN2 * (1 << 41)), 1 << 41))  # 41 bits: e * l_hi is exact
        l_lo = fp.round(LN2 - Fraction(l_hi))
        lnm, err1 = self._two_sum(f, b.fneg(c))
        hi, err2 = self._two_sum(b.fmul(e, fp.const(l_hi)), lnm)
        lo = b.fadd(b.fadd(err1, err2), b.fmul(e, fp.const(l_lo)))
        hi = self._log_specials(fp, ax, hi)
        y_hi = b.fmul(y, hi)
        finite = b.fcmp_ordered("<", self._fcall("fabs", fp, y_hi), fp.const(float("inf")))  # not NaN either
        y_lo = b.fadd(self._fma(fp, y, hi, b.fneg(y_hi)), b.fmul(y, lo))
        r = self.pm_exp(fp, y_hi)
        fine = b.and_(finite, b.fcmp_ordered("<", r, fp.const(float("inf"))))
        return b.select(fine, self._fma(fp, r, y_lo, r), r)

    def pm_pow(self, fp, a, y):
        b = self.builder
        r = self._pow_abs(fp, self._fcall("fabs", fp, a), y)
        # Signs and IEEE special cases: a < 0 needs an integral y (odd y keeps the sign).
        y_int = b.fcmp_ordered("==", self._fcall("rint", fp, y), y)
        half = b.fmul(y, fp.const(0.5))
        y_odd = b.and_(y_int, b.fcmp_unordered("!=", self._fcall("rint", fp, half), half))
        neg = self._signbit(fp, a)
        r = b.select(b.and_(neg, y_odd), b.fneg(r), r)
        neg_finite = b.and_(b.fcmp_ordered("<", a, fp.const(0.0)), b.fcmp_ordered(">", a, fp.const(float("-inf"))))
        r = b.select(b.and_(neg_finite, b.not_(y_int)), fp.const(float("nan")), r)
        one = b.or_(b.fcmp_ordered("==", y, fp.const(0.0)), b.fcmp_ordered("==", a, fp.const(1.0)))
        minus_one_inf = b.and_(b.fcmp_ordered("==", a, fp.const(-1.0)),
                               b.fcmp_ordered("==", self._fcall("fabs", fp, y), fp.const(float("inf"))))
        one = b.or_(one, minus_one_inf)  # IEEE 754: pow(-1, +-inf) = 1
        return b.select(one, fp.const(1.0), r)

    # ------------------------------------------------------------------ sin / cos
    def _two_over_pi(self):
        table = self.module.globals.get("__pk_two_over_pi")
        if table is None:
            ty = ll.ArrayType(I32, len(TWO_OVER_PI_TABLE))
            table = ll.GlobalVariable(self.module, ty, name="__pk_two_over_pi", addrspace=self.CONST_AS)
            table.initializer = ll.Constant(ty, [ll.Constant(I32, w) for w in TWO_OVER_PI_TABLE])
            table.global_constant = True
            table.linkage = "internal"
        return table

    def _window(self, word, sh, j: int, i128):
        """96 bits of the 2/pi table from bit ``sh`` of word ``word + j``, as the low bits of an i128
        shifted so that bits [sh, sh + 64) of the window are its low 64 bits."""
        b = self.builder
        acc = ll.Constant(i128, 0)
        for t in range(3):
            idx = b.zext(b.add(word, ll.Constant(I32, j + t)), I64)
            w = b.load(b.gep(self._two_over_pi(), [ll.Constant(I64, 0), idx], inbounds=True), typ=I32)
            acc = b.or_(acc, b.shl(b.zext(w, i128), ll.Constant(i128, 32 * (2 - t))))
        return b.lshr(acc, b.zext(b.sub(ll.Constant(I32, 32), sh), i128))

    def _trig_reduce(self, fp, ax):
        """(r, r_lo, q): ax = (4k + q) * pi/2 + r + r_lo with |r| <= pi/4 (r_lo a correction far
        below r's ulp, or None), q in 0..3, for finite ax >= 0."""
        b = self.builder
        fast_bb, slow_bb, done_bb = (self.new_block(f"trig.{n}") for n in ("fast", "slow", "done"))
        b.cbranch(b.fcmp_ordered("<", ax, fp.const(2.0 ** fp.trig_fast_log2)), fast_bb, slow_bb)
        # Small arguments: three-part Cody-Waite with fma (x - k*P1 is exact for these k).
        b.position_at_end(fast_bb)
        k = self._fcall("rint", fp, b.fmul(ax, fp.const(2 / PI)))
        nk = b.fneg(k)
        r_fast = ax
        for part in _split(PI / 2, 3, fp):
            r_fast = self._fma(fp, nk, fp.const(part), r_fast)
        q_fast = b.trunc(self.call_intrinsic(f"llvm.fptosi.sat.i{fp.bits}.f{fp.bits}", fp.ity, [k]), I32)
        q_fast = b.and_(q_fast, ll.Constant(I32, 3))
        fast_end = b.block
        b.branch(done_bb)
        # Large arguments: exact reduction (Payne-Hanek) with the bits of 2/pi.
        b.position_at_end(slow_bb)
        r_slow, lo_slow, q_slow = self._payne_hanek_f32(ax) if fp.bits == 32 else self._payne_hanek_f64(ax)
        slow_end = b.block
        b.branch(done_bb)
        b.position_at_end(done_bb)
        r, q = b.phi(fp.ty, "trig.r"), b.phi(I32, "trig.q")
        r.add_incoming(r_fast, fast_end)
        r.add_incoming(r_slow, slow_end)
        q.add_incoming(q_fast, fast_end)
        q.add_incoming(q_slow, slow_end)
        if lo_slow is None:
            return r, None, q
        r_lo = b.phi(fp.ty, "trig.r_lo")
        r_lo.add_incoming(fp.const(0.0), fast_end)
        r_lo.add_incoming(lo_slow, slow_end)
        return r, r_lo, q

    def _payne_hanek_f32(self, ax):
        """(r, None, q) for an f32 ``ax`` >= 2^17: ax = M * 2^E with a 24-bit integer M; only the 96
        bits of 2/pi from fraction bit E-1 on matter modulo 4, and M * window gives q and r."""
        b = self.builder
        i128 = ll.IntType(128)
        bits = b.bitcast(ax, I32)
        big_e = b.sub(b.lshr(bits, ll.Constant(I32, 23)), ll.Constant(I32, 150))  # ax = M * 2^E
        mant = b.or_(b.and_(bits, ll.Constant(I32, 0x7FFFFF)), ll.Constant(I32, 0x800000))
        start = b.add(big_e, ll.Constant(I32, 30))  # table bit of fraction bit E-1 (>= 24 here)
        word, sh = b.lshr(start, ll.Constant(I32, 5)), b.and_(start, ll.Constant(I32, 31))
        m64 = ll.Constant(i128, (1 << 64) - 1)
        hi = b.and_(self._window(word, sh, 0, i128), m64)  # window bits [0, 64)
        lo = b.lshr(b.and_(self._window(word, sh, 2, i128), m64), ll.Constant(i128, 32))  # [64, 96)
        window = b.or_(b.shl(hi, ll.Constant(i128, 32)), lo)
        mask96 = ll.Constant(i128, (1 << 96) - 1)
        prod = b.and_(b.mul(b.zext(mant, i128), window), mask96)
        q = b.trunc(b.lshr(prod, ll.Constant(i128, 94)), I32)
        frac = b.and_(prod, ll.Constant(i128, (1 << 94) - 1))
        up = b.icmp_unsigned(">=", frac, ll.Constant(i128, 1 << 93))  # round to the nearest quadrant
        q = b.and_(b.add(q, b.zext(up, I32)), ll.Constant(I32, 3))
        frac = b.select(up, b.sub(frac, ll.Constant(i128, 1 << 94)), frac)
        top = b.trunc(b.ashr(frac, ll.Constant(i128, 30)), I64)  # fraction * 2^64 of a quarter turn
        r64 = b.fmul(b.sitofp(top, F64.ty), F64.const(PI / 2 / (1 << 64)))
        return b.fptrunc(r64, F32.ty), None, q

    def _payne_hanek_f64(self, ax):
        """(r, r_lo, q) for an f64 ``ax`` >= 2^30: ax = M * 2^E with a 53-bit M; the 192 bits of 2/pi
        from fraction bit E-1 on, as three 64-bit limbs, times M modulo 2^192 give q (top two
        bits) and 190 fraction bits, turned into a double-f64 and multiplied by pi/2."""
        b = self.builder
        i128 = ll.IntType(128)
        m64 = ll.Constant(i128, (1 << 64) - 1)
        bits = b.bitcast(ax, I64)
        big_e = b.trunc(b.sub(b.lshr(bits, ll.Constant(I64, 52)), ll.Constant(I64, 1075)), I32)
        mant = b.or_(b.and_(bits, ll.Constant(I64, (1 << 52) - 1)), ll.Constant(I64, 1 << 52))
        start = b.add(big_e, ll.Constant(I32, 30))
        word, sh = b.lshr(start, ll.Constant(I32, 5)), b.and_(start, ll.Constant(I32, 31))
        m = b.zext(mant, i128)
        limbs = [b.and_(self._window(word, sh, 2 * j, i128), m64) for j in (2, 1, 0)]  # low limb first
        out, carry = [], ll.Constant(i128, 0)
        for limb in limbs:  # schoolbook M * W modulo 2^192
            p = b.add(b.mul(m, limb), carry)
            out.append(b.trunc(p, I64))
            carry = b.lshr(p, ll.Constant(i128, 64))
        r0, r1, r2 = out
        q = b.trunc(b.lshr(r2, ll.Constant(I64, 62)), I32)
        top = b.and_(r2, ll.Constant(I64, (1 << 62) - 1))
        up = b.icmp_unsigned(">=", top, ll.Constant(I64, 1 << 61))  # round to the nearest quadrant
        q = b.and_(b.add(q, b.zext(up, I32)), ll.Constant(I32, 3))
        top = b.select(up, b.sub(top, ll.Constant(I64, 1 << 62)), top)  # signed now
        # fraction = top*2^-62 + r1*2^-126 + r0*2^-190 quarter turns, from exact 32-bit pieces.
        m32 = ll.Constant(I64, 0xFFFFFFFF)
        f = F64
        pieces = [(b.sitofp(b.ashr(top, ll.Constant(I64, 32)), f.ty), 2.0 ** -30),
                  (b.uitofp(b.and_(top, m32), f.ty), 2.0 ** -62),
                  (b.uitofp(b.lshr(r1, ll.Constant(I64, 32)), f.ty), 2.0 ** -94),
                  (b.uitofp(b.and_(r1, m32), f.ty), 2.0 ** -126),
                  (b.uitofp(b.lshr(r0, ll.Constant(I64, 32)), f.ty), 2.0 ** -158)]
        vals = [b.fmul(v, f.const(scale)) for v, scale in pieces]  # exact: powers of two
        hi, lo = self._two_sum(vals[0], vals[1])
        hi, err = self._two_sum(hi, vals[2])
        lo = b.fadd(b.fadd(lo, err), b.fadd(vals[3], vals[4]))
        hi, lo = self._two_sum(hi, lo)
        p_hi, p_lo = _split(PI / 2, 2, f)
        r = b.fmul(hi, f.const(p_hi))
        r_lo = b.fadd(self._fma(f, hi, f.const(p_hi), b.fneg(r)),
                      self._fma(f, hi, f.const(p_lo), b.fmul(lo, f.const(p_hi))))
        return self._two_sum(r, r_lo) + (q,)

    def _sin_poly(self, fp, r):
        z = self.builder.fmul(r, r)
        coeffs = [Fraction((-1) ** k, factorial(2 * k + 1)) for k in range(1, fp.sin_terms + 1)]
        return self._fma(fp, self.builder.fmul(r, z), self._horner(fp, z, coeffs), r)

    def _cos_poly(self, fp, r):
        z = self.builder.fmul(r, r)
        coeffs = [Fraction((-1) ** k, factorial(2 * k)) for k in range(0, fp.sin_terms + 2)]
        return self._horner(fp, z, coeffs)

    def _trig(self, fp, x, want_sin: bool):
        b = self.builder
        ax = self._fcall("fabs", fp, x)
        finite = b.fcmp_ordered("<", ax, fp.const(float("inf")))
        safe = b.select(finite, ax, fp.const(0.0))
        r, r_lo, q = self._trig_reduce(fp, safe)
        s, c = self._sin_poly(fp, r), self._cos_poly(fp, r)
        if r_lo is not None:  # sin(r + d) = sin r + d cos r, cos(r + d) = cos r - d sin r
            s, c = self._fma(fp, r_lo, c, s), self._fma(fp, b.fneg(r_lo), s, c)
        if not want_sin:  # cos(x) = sin(|x| + pi/2): shift the quadrant
            q = b.add(q, ll.Constant(I32, 1))
        odd = b.trunc(q, I1)
        neg = b.icmp_unsigned("!=", b.and_(q, ll.Constant(I32, 2)), ll.Constant(I32, 0))
        v = b.select(odd, c, s)
        if want_sin:
            neg = b.xor(neg, self._signbit(fp, x))
        v = b.select(neg, b.fneg(v), v)
        return b.select(finite, v, fp.const(float("nan")))

    def pm_sin(self, fp, x):
        return self._trig(fp, x, True)

    def pm_cos(self, fp, x):
        return self._trig(fp, x, False)

    # ------------------------------------------------------------------ tanh
    def pm_tanh(self, fp, x):
        b = self.builder
        ax = self._fcall("fabs", fp, x)
        # |x| < 0.5: odd Taylor polynomial; else 1 - 2/(e^(2|x|) + 1) (e^(2|x|) = inf gives 1).
        z = b.fmul(ax, ax)
        small = self._fma(fp, b.fmul(ax, z), self._horner(fp, z, _tanh_taylor(fp.tanh_terms)), ax)
        e = self.pm_exp(fp, b.fadd(ax, ax))
        large = b.fsub(fp.const(1.0), b.fdiv(fp.const(2.0), b.fadd(e, fp.const(1.0))))
        r = b.select(b.fcmp_unordered("<", ax, fp.const(0.5)), small, large)
        return self._fcall("copysign", fp, r, x)
