"""``exp`` and ``exp2`` in f32 (and f16 through f32) as straight-line IEEE arithmetic for CPUs.

LLVM lowers ``llvm.exp.f32``/``llvm.exp2.f32`` on a CPU to a libm call per element (no vector math
library is linked), and a call in a loop keeps the loop vectorizer from widening it. :class:`VectorExp`
expands them instead into adds, multiplies, compares, selects and integer bit operations only, which
every CPU vector unit has without FMA or a rounding instruction (x86-64 ``generic`` is SSE2), so a
loop of them vectorizes on every target:

- the argument is clamped to where the result is neither 0 nor infinite only by rounding (NaN kept);
- ``n = round(x * log2(e))`` by adding and subtracting ``1.5 * 2**23`` (ties to even; the sum's bits
  also give ``n`` as an integer, without a conversion that NaN would make poison);
- the reduced argument ``r = x - n*ln2`` with ln 2 split in two (Cody-Waite): the high part has 16
  significant bits, so ``n * hi`` and ``x - n * hi`` are exact for the ``|n| <= 160`` that occur;
  ``exp2``: ``f = x - n`` is exact and the polynomial is in ``f`` (coefficients ``ln2**k / k!``);
- ``e**r`` by its Taylor polynomial of degree 7 (``|r| <= ln2/2``: truncation below 0.1 ulp);
- ``* 2**n`` as two power-of-two factors that are both normal, so only the last product rounds
  (subnormal results are rounded once, not flushed).

Measured against the correctly rounded result (``backends/llvm/tests/test_cpu_vectorize.py``): within
the language's promise of 3 ulp (python/polykern/numerics.py), specials (NaN, +-inf, overflow,
underflow to subnormals and 0) as IEEE says. f64 keeps libm's ``exp``/``exp2``.

Being the fast form already, it is also what ``pk.fast_exp``/``pk.fast_exp2`` and ``build(fast_math=True)``
compile to on the CPU: the CPU has no entry in ``polykern.numerics.FAST_MATH``, so passes/fast_math.py
gives it the precise operations (this expansion, with the precise promise).
"""
from __future__ import annotations

from fractions import Fraction
from math import factorial
from typing import List

from llvmlite import ir as ll

from polykern.codegen.llvm_types import I32, value_type
from polykern.codegen.llvm_devmath import F32, LN2
from polykern.ir.types import ScalarType, f16, f32

__all__ = ["VectorExp", "EXP_TERMS"]

EXP_TERMS = 8  # Taylor terms of e**r, |r| <= ln2/2: r**8/8! < 0.1 ulp of f32
_MAGIC = 12582912.0  # 1.5 * 2**23: x + _MAGIC - _MAGIC rounds x (|x| < 2**22) to an integer, ties to even
_MAGIC_BITS = 0x4B400000  # its f32 bits: bits(x + _MAGIC) - _MAGIC_BITS is that integer
_LN2_HI = 0.693145751953125  # 16 significant bits: n * _LN2_HI is exact for |n| < 2**8
_LN2_LO = LN2 - Fraction(_LN2_HI)
_RANGE = (-110.0, 100.0)  # e**x is 0 below (after rounding) and inf above; inside, |n| <= 159


class VectorExp:
    """Mixin for an :class:`polykern.codegen.llvm_emitter.LLVMKernelEmitter` (put it first in the bases):
    f16/f32 ``exp``/``exp2`` without calls (see the module docstring); everything else as the base does."""

    def math_call(self, func: str, st: ScalarType, args: List[ll.Value]):
        if not (func in ("exp", "exp2") and st in (f16, f32)):  # bf16 math reaches here as f32
            return super().math_call(func, st, args)
        b = self.builder
        x = args[0] if st == f32 else b.fpext(args[0], F32.ty)
        y = self._vexp(x, natural=func == "exp")
        return y if st == f32 else b.fptrunc(y, value_type(st))

    def _vexp(self, x: ll.Value, natural: bool) -> ll.Value:
        b, c = self.builder, F32.const
        lo, hi = _RANGE if natural else (_RANGE[0] * 1.5, _RANGE[1] * 1.5)
        x = b.select(b.fcmp_ordered("<", x, c(lo)), c(lo), x)  # ordered: NaN stays x
        x = b.select(b.fcmp_ordered(">", x, c(hi)), c(hi), x)
        t = b.fmul(x, c(1 / LN2)) if natural else x
        s = b.fadd(t, c(_MAGIC))
        n = b.fsub(s, c(_MAGIC))  # round(t)
        k = b.sub(b.bitcast(s, I32), ll.Constant(I32, _MAGIC_BITS))
        if natural:
            r = b.fsub(b.fsub(x, b.fmul(n, c(_LN2_HI))), b.fmul(n, c(_LN2_LO)))
            coeffs = [Fraction(1, factorial(j)) for j in range(EXP_TERMS)]
        else:
            r = b.fsub(x, n)  # exact
            coeffs = [LN2 ** j / factorial(j) for j in range(EXP_TERMS)]
        p = c(coeffs[-1])
        for q in reversed(coeffs[:-1]):
            p = b.fadd(b.fmul(p, r), c(q))
        k1 = b.ashr(k, ll.Constant(I32, 1))
        k2 = b.sub(k, k1)
        return b.fmul(b.fmul(p, self._vexp_pow2(k1)), self._vexp_pow2(k2))

    def _vexp_pow2(self, k: ll.Value) -> ll.Value:
        """2**k for an i32 ``k`` in the normal exponent range."""
        b = self.builder
        return b.bitcast(b.shl(b.add(k, ll.Constant(I32, F32.bias)), ll.Constant(I32, F32.mant)), F32.ty)
