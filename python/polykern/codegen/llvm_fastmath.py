"""Fast f32 ``exp`` and ``exp2`` for the CPU (``polykern.numerics.FAST_MATH["llvm"]``, docs/language.md
"Fast math").

``llvm.exp.f32`` is a libm call per element, which keeps LLVM from vectorizing the work-item loop; these
expansions are plain ``fmul``/``fadd``/``select`` and integer operations (no ``fma``, no ``rint``: the
``generic`` x86-64 CPU has neither as an instruction), so the loop vectorizes:

- ``exp(x)``: ``n = round(x log2 e)`` by the 1.5 * 2^23 shifter (``v = t + S``: ``v - S`` is ``t`` rounded
  to an integer, and ``v``'s bits are ``S``'s plus ``n``); ``r = x - n C1 - n C2`` with ``C1 = 355/512``
  (9 significant bits, so ``n C1`` is exact) and ``C2 = ln 2 - C1`` rounded; ``e^r`` (``|r| <= ln2/2``) by
  its Taylor polynomial to ``r^7`` (truncation below 2^-27 relatively), in pairs ``c_k + c_k+1 r`` of
  powers of ``r^2`` (a dependency chain of 9 operations, not Horner's 14: where the loop does not
  vectorize, iterations overlap), ``1 + r`` added last; times ``2^n`` as
  two normal powers of two, so only the last product rounds (subnormal results, overflow to inf).
- ``exp2(x)``: ``n = round(x)``, ``r = (x - n) ln 2`` (``x - n`` is exact), then as above.

The input is clamped to where the result is not yet 0 or inf (a NaN passes the clamp and stays NaN).
The bound, measured over every binade (tests/test_fast_math.py), is the table's promise.
"""
from __future__ import annotations

from fractions import Fraction
from math import factorial
from typing import List

from llvmlite import ir as ll

from polykern.codegen.llvm_devmath import F32, LN2
from polykern.errors import CompileError

__all__ = ["CPUFastMath"]

_F32 = ll.FloatType()
_I32 = ll.IntType(32)
_SHIFTER = 12582912.0  # 1.5 * 2^23 (bits 0x4B400000)
_SHIFTER_BITS = 0x4B400000
_LN2_HI = Fraction(355, 512)
_LN2_LO = F32.round(LN2 - _LN2_HI)
_LOG2E = F32.round(1 / LN2)
_TAYLOR = [F32.round(Fraction(1, factorial(k))) for k in range(8)]  # e^r = sum r^k / k!, k <= 7


def _c(v: float) -> ll.Constant:
    return ll.Constant(_F32, v)


class CPUFastMath:
    """Mixin for the CPU's :class:`polykern.codegen.llvm_base.LLVMKernelEmitter` (first in the bases): the
    ``fast_exp``/``fast_exp2`` expansions above."""

    def fast_math_call(self, op: str, st, args: List[ll.Value]) -> ll.Value:
        if op == "exp":
            return self._fast_exp(args[0])
        if op == "exp2":
            return self._fast_exp2(args[0])
        raise CompileError(f"the CPU has no fast-math lowering of f32 {op}() (polykern.numerics.FAST_MATH)")

    def _clamp(self, x: ll.Value, lo: float, hi: float) -> ll.Value:
        b = self.builder
        x = b.select(b.fcmp_ordered("<", x, _c(lo)), _c(lo), x)
        return b.select(b.fcmp_ordered(">", x, _c(hi)), _c(hi), x)

    def _round(self, t: ll.Value):
        """(t rounded to an integer as a float, the same integer as an i32), |t| < 2^22."""
        b = self.builder
        v = b.fadd(t, _c(_SHIFTER))
        return b.fsub(v, _c(_SHIFTER)), b.sub(b.bitcast(v, _I32), ll.Constant(_I32, _SHIFTER_BITS))

    def _exp_scaled(self, r: ll.Value, n: ll.Value) -> ll.Value:
        """e^r * 2^n: 1 + (r + r^2 ((c2 + c3 r) + r^2 ((c4 + c5 r) + r^2 (c6 + c7 r)))), then two
        normal powers of two."""
        b = self.builder
        r2 = b.fmul(r, r)
        pairs = [b.fadd(_c(_TAYLOR[k]), b.fmul(_c(_TAYLOR[k + 1]), r)) for k in (2, 4, 6)]  # c_k + c_k+1 r
        high = b.fadd(pairs[1], b.fmul(pairs[2], r2))
        q = b.fadd(r, b.fmul(b.fadd(pairs[0], b.fmul(high, r2)), r2))  # e^r - 1, |q| < 0.42
        p = b.fadd(_c(1.0), q)  # the 1 added last: one rounding near 1
        n1 = b.ashr(n, ll.Constant(_I32, 1))
        n2 = b.sub(n, n1)
        for k in (n1, n2):
            p = b.fmul(p, b.bitcast(b.shl(b.add(k, ll.Constant(_I32, 127)), ll.Constant(_I32, 23)), _F32))
        return p

    def _fast_exp(self, x: ll.Value) -> ll.Value:
        b = self.builder
        x = self._clamp(x, -104.0, 89.0)
        nf, n = self._round(b.fmul(x, _c(_LOG2E)))
        r = b.fsub(x, b.fmul(nf, _c(float(_LN2_HI))))
        r = b.fsub(r, b.fmul(nf, _c(_LN2_LO)))
        return self._exp_scaled(r, n)

    def _fast_exp2(self, x: ll.Value) -> ll.Value:
        b = self.builder
        x = self._clamp(x, -151.0, 129.0)
        nf, n = self._round(x)
        return self._exp_scaled(b.fmul(b.fsub(x, nf), _c(F32.round(LN2))), n)
