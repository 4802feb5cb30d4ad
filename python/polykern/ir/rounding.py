"""Exact rounding of a number to a float type: the one definition of "rounded once, to nearest even".

:func:`round_exact` takes the exact value (a Python ``int``, ``float`` or ``Fraction``) and rounds it
once to the type, with IEEE 754's rules: ties to even, gradual underflow (subnormals keep the spacing of
the smallest normal binade), and a value whose rounding would pass the largest finite value becomes
±inf. Float literals (``lang/typing_rules.py``: ``65519.0`` as f16 is 65504, ``1.0039062500000002`` as
bf16 is 1.0078125) and the oracle's exact fma use it. NumPy's scalar conversions cannot: a Python int
goes through float64 first, and NumPy has no bfloat16.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Dict, Tuple, Union

#: float type -> (precision in bits, the hidden bit included; exponent of the smallest normal binade)
FORMATS: Dict[str, Tuple[int, int]] = {
    "f16": (11, -14),
    "bf16": (8, -126),
    "f32": (24, -126),
    "f64": (53, -1022),
}


def largest_finite(name: str) -> float:
    """The largest finite value of float type ``name`` (f16 65504, bf16 about 3.39e38)."""
    p, emin = FORMATS[name]
    return math.ldexp(2.0 - math.ldexp(1.0, 1 - p), 1 - emin)


def round_exact(value: Union[int, float, Fraction], name: str) -> float:
    """``value`` rounded once, to nearest even, to float type ``name`` (a key of :data:`FORMATS`), as a
    Python float (exact: every value of these types is a float64). ±inf past the range; a NaN or an
    infinity stays itself and a float zero keeps its sign."""
    if isinstance(value, float) and (name == "f64" or value != value or math.isinf(value) or value == 0.0):
        return value
    exact = Fraction(value)
    if exact == 0:
        return 0.0
    p, emin = FORMATS[name]
    m = abs(exact)
    e = m.numerator.bit_length() - m.denominator.bit_length()  # 2^(e-1) < m < 2^(e+1)
    if Fraction(2) ** e > m:
        e -= 1  # now 2^e <= m < 2^(e+1)
    step = max(e, emin) - (p - 1)  # the spacing of the type's values at m
    q = m / Fraction(2) ** step
    n, rem = divmod(q.numerator, q.denominator)
    if 2 * rem > q.denominator or (2 * rem == q.denominator and n & 1):
        n += 1
    # n < 2^(step + bits of n); at or past 2^(emax + 1) = 2^(2 - emin) it is past every finite value
    v = math.inf if step + n.bit_length() - 1 >= 2 - emin else math.ldexp(float(n), step)
    if v > largest_finite(name):
        v = math.inf
    return v if exact > 0 else -v
