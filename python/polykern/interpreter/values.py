"""Typed scalar arithmetic of the kernel language, for the IR interpreter (the oracle).

Values are plain Python objects: ``bool`` for bool, ``int`` (already wrapped to the type's range) for
integers, and ``float`` for floats, holding a value that is exactly representable in the float type
(f16/f32 results are computed in double and rounded once to the type: for + - * / and sqrt this
double rounding is innocuous, since 53 >= 2 * 24 + 2). The functions here are built once per
(operation, type) and return closures, so the interpreter never dispatches on types per work-item.

The meanings follow ``polykern.ir.nodes``: integers wrap, ``//`` and ``%`` truncate toward zero
as ``polykern.numerics`` defines them (``MIN // -1 == MIN``, ``MIN % -1 == 0``, ``x // 0 == x``,
``x % 0 == 0``), float ``%`` is C ``fmod``, shifts
take the amount modulo the bit width, float -> int casts saturate with NaN -> 0, and math builtins
are computed in float64 and rounded to the type.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

import numpy as np

from .. import numerics
from ..errors import InterpretError
from ..ir import nodes as ir
from ..ir.bfloat16 import BF16_TINY, bits_to_f32, f32_to_bits, round_value
from ..ir.rounding import round_exact
from ..ir.types import ScalarType, bf16, f32


#: The oracle cannot give this program a meaning (undefined behaviour, a race, a runaway loop): the
#: interpreter's error, with DataRaceError and UninitializedReadError for the two kinds users look for.
OracleError = InterpretError


# ---------------------------------------------------------------- rounding to a type


#: set when an f16/f32 operation produced a subnormal result since the last reset: a backend that
#: may flush subnormals (numerics.Promise.may_flush_subnormals) can then legitimately differ anywhere
SUBNORMAL_SEEN = {"f16": False, "f32": False, "bf16": False}


def rounder(t: ScalarType) -> Callable[[float], float]:
    """float -> the nearest value of float type ``t`` (round to nearest even, overflow to inf). bf16:
    rounded to f32 first, then to bf16 (docs/language.md "bf16"; the oracle runs programs after
    passes/widen_bf16.py, so this is the f32 -> bf16 conversion, ir/bfloat16.py's rounding)."""
    if t.bits == 64:
        return float
    if t == bf16:
        to_f32, seen = rounder(f32), SUBNORMAL_SEEN

        def rnd_bf16(x):
            y = round_value(to_f32(x))
            if -BF16_TINY < y < BF16_TINY and y != 0.0:
                seen["bf16"] = True
            return y

        return rnd_bf16
    np_t = np.float32 if t.bits == 32 else np.float16
    tiny = float(np.finfo(np_t).tiny)
    seen, name = SUBNORMAL_SEEN, t.name

    def rnd(x, _t=np_t):
        y = float(_t(x))
        if -tiny < y < tiny and y != 0.0:
            seen[name] = True
        return y

    return rnd


def wrapper(t: ScalarType) -> Callable[[int], int]:
    """int -> the value of integer type ``t`` with the same low bits (two's complement wrap)."""
    bits = t.bits
    mask = (1 << bits) - 1
    if t.code == 1:  # unsigned
        return lambda x: x & mask
    half = 1 << (bits - 1)
    return lambda x: ((x + half) & mask) - half


def zero(t: ScalarType):
    if t.is_bool:
        return False
    return 0.0 if t.is_float else 0


def canon(t: ScalarType, v):
    """A Python value (e.g. read from a NumPy array) as the interpreter represents values of ``t``."""
    if t.is_bool:
        return bool(v)
    if t.is_float:
        return float(v)
    return int(v)


# ---------------------------------------------------------------- binary operators


def _fdiv(a: float, b: float) -> float:
    if b == 0.0:
        if a != a or a == 0.0:
            return math.nan
        neg = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
        return -math.inf if neg else math.inf
    return a / b


def _fmod(a: float, b: float) -> float:
    if a != a or b != b or b == 0.0 or math.isinf(a):
        return math.nan
    if math.isinf(b):
        return a
    return math.fmod(a, b)


_CMP = {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}


def binop(op: str, t: ScalarType, where: str) -> Callable:
    """The function computing ``a <op> b`` for operands of type ``t`` (``land``/``lor`` excluded:
    the interpreter short-circuits them). ``where`` names the source location for errors."""
    if op in _CMP:
        return _CMP[op]
    if t.is_bool:
        return {"and": lambda a, b: a and b, "or": lambda a, b: a or b,
                "xor": lambda a, b: a != b}[op]
    if t.is_float:
        r = rounder(t)
        if op == "add":
            return lambda a, b: r(a + b)
        if op == "sub":
            return lambda a, b: r(a - b)
        if op == "mul":
            return lambda a, b: r(a * b)
        if op == "div":
            return lambda a, b: r(_fdiv(a, b))
        if op == "mod":
            return lambda a, b: r(_fmod(a, b))
        raise OracleError(f"{where}: operator '{op}' on {t}")
    w = wrapper(t)
    bits = t.bits
    if op == "add":
        return lambda a, b: w(a + b)
    if op == "sub":
        return lambda a, b: w(a - b)
    if op == "mul":
        return lambda a, b: w(a * b)
    if op in ("floordiv", "mod"):
        # numerics defines both: truncation toward zero, MIN // -1 == MIN, x // 0 == x, x % 0 == 0
        f = numerics.int_rem if op == "mod" else numerics.int_div
        name = t.name
        return lambda a, b: f(a, b, name)
    if op == "and":
        return lambda a, b: a & b
    if op == "or":
        return lambda a, b: a | b
    if op == "xor":
        return lambda a, b: w(a ^ b)
    if op == "shl":
        return lambda a, b: w(a << (b % bits))
    if op == "shr":
        if t.code == 1:
            return lambda a, b: a >> (b % bits)
        return lambda a, b: a >> (b % bits)  # arithmetic: Python's >> on a signed value
    raise OracleError(f"{where}: operator '{op}' on {t}")


def unop(op: str, t: ScalarType, where: str) -> Callable:
    if op == "not":
        return lambda a: not a
    if op == "neg":
        if t.is_float:
            return lambda a: -a
        w = wrapper(t)
        return lambda a: w(-a)
    if op == "invert":
        w = wrapper(t)
        return lambda a: w(~a)
    raise OracleError(f"{where}: unary operator '{op}' on {t}")


# ---------------------------------------------------------------- casts


def _int_to_float(x: int, to: ScalarType) -> float:
    if to.bits == 64 or -(1 << 24) <= x <= (1 << 24):
        return rounder(to)(float(x))  # Python rounds int -> float64 correctly; small ints are exact
    # Round directly to f32/f16: going through float64 first could round twice.
    return rounder(to)(_exact_narrow(x, to))


def _exact_narrow(x: int, to: ScalarType) -> float:
    """Round a large integer directly to f32/f16 (nearest, ties to even)."""
    mant = 24 if to.bits == 32 else 11
    neg = x < 0
    m = -x if neg else x
    shift = m.bit_length() - mant
    if shift > 0:
        q, rem = divmod(m, 1 << shift)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and q & 1):
            q += 1
        m = q << shift
    v = float(m) if m < (1 << 1000) else math.inf
    return -v if neg else v


def caster(frm: ScalarType, to: ScalarType) -> Callable:
    """The function converting a value of ``frm`` to ``to`` (float -> int saturates, NaN -> 0)."""
    if to.is_bool:
        return lambda a: a != 0
    if frm.is_bool:
        one, zero_ = (1.0, 0.0) if to.is_float else (1, 0)
        return lambda a: one if a else zero_
    if to.is_float:
        if frm.is_float:
            return rounder(to)
        return lambda a: _int_to_float(a, to)
    if frm.is_float:
        name = to.name
        f2i = numerics.float_to_int  # saturating, NaN -> 0
        return lambda a: f2i(a, name)
    return wrapper(to)


def bitcaster(frm: ScalarType, to: ScalarType) -> Callable:
    """The function reading a value of ``frm`` as the bits of ``to`` (ir.Bitcast: a float and the unsigned
    integer of its width, or a 16-bit float and the low half of a u32)."""
    if frm.is_float:
        if frm == bf16:
            return lambda a: int(f32_to_bits(np.float32(a)))
        np_t = {16: np.float16, 32: np.float32, 64: np.float64}[frm.bits]
        u_t = {16: np.uint16, 32: np.uint32, 64: np.uint64}[frm.bits]
        return lambda a: int(np.asarray(a, np_t).view(u_t))
    if to == bf16:
        return lambda a: float(bits_to_f32(np.uint16(a & 0xFFFF)))
    np_t = {16: np.float16, 32: np.float32, 64: np.float64}[to.bits]
    u_t = {16: np.uint16, 32: np.uint32, 64: np.uint64}[to.bits]
    mask = (1 << to.bits) - 1
    return lambda a: float(np.asarray(a & mask, u_t).view(np_t))


# ---------------------------------------------------------------- math builtins


def _np1(fn):
    def g(a):
        with np.errstate(all="ignore"):
            return float(fn(np.float64(a)))

    return g


def _rsqrt(a):
    with np.errstate(all="ignore"):
        return float(np.float64(1.0) / np.sqrt(np.float64(a)))


def _fmin(a, b):
    if a != a:
        return b
    if b != b:
        return a
    if a == b == 0.0:  # -0 < +0 for min/max, as most hardware does
        return a if math.copysign(1.0, a) < 0 else b
    return a if a < b else b


def _fmax(a, b):
    if a != a:
        return b
    if b != b:
        return a
    if a == b == 0.0:
        return b if math.copysign(1.0, a) < 0 else a
    return a if a > b else b


def _fma_exact(a, b, c):
    if any(math.isinf(x) or x != x for x in (a, b, c)):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # the sign of a zero sum is IEEE's a*b + c (-0 * 1 + -0 is -0; Fraction has no -0)
        return a * b + c
    return float(exact)


def _fma_narrow(t: ScalarType) -> Callable[[float, float, float], float]:
    """fma on f32/f16: the exact a*b + c rounded once to ``t``. Rounding the exact value to float64 first
    and then to ``t`` rounds twice (fuzz seed 31001762: fma(3, 1.1672183e18, 63) in f32 is 3.501655e18;
    through float64 the +63 vanished and the tie went to even, 3.5016548e18)."""
    r, name = rounder(t), t.name

    def fma(a, b, c):
        if any(math.isinf(x) or x != x for x in (a, b, c)):
            return r(a * b + c)
        exact = Fraction(a) * Fraction(b) + Fraction(c)
        if exact == 0:
            return r(_fma_exact(a, b, c))  # the sign of an exact zero: as IEEE's a*b + c
        return r(round_exact(exact, name))

    return fma


_FLOAT_MATH = {
    "sqrt": _np1(np.sqrt), "rsqrt": _rsqrt, "exp": _np1(np.exp), "exp2": _np1(np.exp2),
    "log": _np1(np.log), "log2": _np1(np.log2), "sin": _np1(np.sin), "cos": _np1(np.cos),
    "tanh": _np1(np.tanh), "abs": abs, "floor": _np1(np.floor), "ceil": _np1(np.ceil),
    "pow": lambda a, b: _pow(a, b), "min": _fmin, "max": _fmax, "fma": _fma_exact,
}


def _odd_integer(y: float) -> bool:
    return math.isfinite(y) and math.fmod(y, 2.0) in (1.0, -1.0)


def _pow(a, b):
    """C99 Annex F pow (NumPy's scalar power takes sqrt for y = 0.5: pow(-inf, 0.5) NaN, pow(-0, 0.5) -0;
    C's are +inf and +0)."""
    try:
        return math.pow(a, b)
    except OverflowError:
        return -math.inf if a < 0 and _odd_integer(b) else math.inf
    except ValueError:  # a pole (pow(+-0, y < 0)) or a negative base to a non-integer power
        if a == 0:
            return math.copysign(math.inf, a) if _odd_integer(b) else math.inf
        return math.nan


def math_fn(func: str, t: ScalarType, where: str) -> Callable:
    """The math builtin ``func`` on type ``t``: float64 then rounded to ``t`` (exact for integers). A
    ``fast_<op>`` is the exact ``op`` (its looser promise is the comparison's business)."""
    if func in ir.FAST_MATH:
        precise = ir.FAST_MATH[func]
        return binop(precise, t, where) if precise == "div" else math_fn(precise, t, where)
    if t.is_float:
        f = _FLOAT_MATH.get(func)
        if f is None:
            raise OracleError(f"{where}: unknown math builtin {func}()")
        if t.bits == 64:
            return f
        r = rounder(t)
        if func in ("min", "max", "abs", "floor", "ceil"):
            return f  # exact in any type: the result is one of the inputs or an integer of that type
        if func == "fma":
            return _fma_narrow(t)
        n = 2 if func == "pow" else 1
        if n == 1:
            return lambda a: r(f(a))
        return lambda a, b: r(f(a, b))
    w = wrapper(t)
    if func == "abs":
        return lambda a: w(abs(a))
    if func == "min":
        return min
    if func == "max":
        return max
    raise OracleError(f"{where}: {func}() on integer type {t}")
