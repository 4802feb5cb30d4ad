"""Half-precision conversion routines for targets without native f16 conversions.

LLVM lowers ``half`` arithmetic on such targets (x86-64 without F16C, i.e. the
portable ``-mcpu=generic``) to calls of ``__extendhfsf2``, ``__truncsfhf2`` and
``__truncdfhf2``, which normally come from compiler-rt/libgcc. A kernel object
must be self-contained (it is loaded by polykern's ELF loaders, Python and native, neither of
which links a compiler runtime), so a CPU backend appends these definitions to its
module. They are written with integer operations only, so their own lowering cannot
call themselves, and are ``hidden`` so they never leak out of the object.

Rounding is IEEE round-to-nearest-even; NaN stays NaN (quiet), overflow gives inf,
subnormals are exact.
"""
from __future__ import annotations

__all__ = ["F16_LIBCALLS", "f16_libcall_ir"]

F16_LIBCALLS = ("__extendhfsf2", "__truncsfhf2", "__truncdfhf2")

_EXTEND = """
define hidden float @__extendhfsf2(half %h) nounwind {
  %x = bitcast half %h to i16
  %w = zext i16 %x to i32
  %sign = and i32 %w, 32768
  %sgn = shl i32 %sign, 16
  %e = lshr i32 %w, 10
  %exp = and i32 %e, 31
  %man = and i32 %w, 1023
  %isspecial = icmp eq i32 %exp, 31
  %issub = icmp eq i32 %exp, 0
  %e2 = add i32 %exp, 112
  %e3 = shl i32 %e2, 23
  %m3 = shl i32 %man, 13
  %normal = or i32 %e3, %m3
  %special = or i32 %m3, 2139095040
  %mf = uitofp i32 %man to float
  %sf = fmul float %mf, 0x3E70000000000000
  %subn = bitcast float %sf to i32
  %r1 = select i1 %issub, i32 %subn, i32 %normal
  %r2 = select i1 %isspecial, i32 %special, i32 %r1
  %r = or i32 %r2, %sgn
  %f = bitcast i32 %r to float
  ret float %f
}
"""

# float -> half: normal numbers by re-biasing the exponent with a round-to-nearest-even
# carry; numbers below 2^-14 by adding 0.5, whose ulp is 2^-24 (the f16 subnormal step),
# so the FPU does the rounding.
_TRUNC_SF = """
define hidden half @__truncsfhf2(float %f) nounwind {
  %x = bitcast float %f to i32
  %s0 = lshr i32 %x, 16
  %sign = and i32 %s0, 32768
  %a = and i32 %x, 2147483647
  %isnan = icmp ugt i32 %a, 2139095040
  %isbig = icmp uge i32 %a, 1199566848
  %isnorm = icmp uge i32 %a, 947912704
  %n0 = lshr i32 %a, 13
  %n1 = and i32 %n0, 1023
  %nan = or i32 %n1, 32256
  %odd = and i32 %n0, 1
  %b0 = sub i32 %a, 939524096
  %b1 = add i32 %b0, 4095
  %b2 = add i32 %b1, %odd
  %norm = lshr i32 %b2, 13
  %af = bitcast i32 %a to float
  %sum = fadd float %af, 5.000000e-01
  %sb = bitcast float %sum to i32
  %subn = sub i32 %sb, 1056964608
  %r1 = select i1 %isnorm, i32 %norm, i32 %subn
  %r2 = select i1 %isbig, i32 31744, i32 %r1
  %r3 = select i1 %isnan, i32 %nan, i32 %r2
  %r = or i32 %r3, %sign
  %t = trunc i32 %r to i16
  %h = bitcast i16 %t to half
  ret half %h
}
"""

# double -> half directly (going through float would round twice). Subnormals: 2^28 has
# an ulp of 2^-24 in double.
_TRUNC_DF = """
define hidden half @__truncdfhf2(double %d) nounwind {
  %x = bitcast double %d to i64
  %s0 = lshr i64 %x, 48
  %sign = and i64 %s0, 32768
  %a = and i64 %x, 9223372036854775807
  %isnan = icmp ugt i64 %a, 9218868437227405312
  %isbig = icmp uge i64 %a, 4679237813814689792
  %isnorm = icmp uge i64 %a, 4544132024016830464
  %n0 = lshr i64 %a, 42
  %n1 = and i64 %n0, 1023
  %nan = or i64 %n1, 32256
  %odd = and i64 %n0, 1
  %b0 = sub i64 %a, 4539628424389459968
  %b1 = add i64 %b0, 2199023255551
  %b2 = add i64 %b1, %odd
  %norm = lshr i64 %b2, 42
  %af = bitcast i64 %a to double
  %sum = fadd double %af, 0x41B0000000000000
  %sb = bitcast double %sum to i64
  %subn = sub i64 %sb, 4733283208366391296
  %r1 = select i1 %isnorm, i64 %norm, i64 %subn
  %r2 = select i1 %isbig, i64 31744, i64 %r1
  %r3 = select i1 %isnan, i64 %nan, i64 %r2
  %r = or i64 %r3, %sign
  %t = trunc i64 %r to i16
  %h = bitcast i16 %t to half
  ret half %h
}
"""


def f16_libcall_ir() -> str:
    """LLVM IR text defining the three conversion routines (append it to a module's text)."""
    return _EXTEND + _TRUNC_SF + _TRUNC_DF
