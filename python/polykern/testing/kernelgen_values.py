"""kernelgen's types and values: the type pools a program's types are drawn from, the lengths of its
arrays, the source spelling of a type (:func:`annot`), and random values of each type (the inputs of a
generated program, drawn from NumPy's generator): edges and small integers, float specials (NaN,
infinities, f16's maximum, values around the integer ranges), no subnormal inputs (a device may flush
them)."""
from __future__ import annotations

import numpy as np

from ..ir.bfloat16 import round_value

INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOATS = ("f16", "f32", "f64", "bf16")
PORTABLE = ("bool", "i32", "u32", "f32", "f16")
ALL = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64")
#: every type a program may use, in declaration order: ALL (the pool the types are drawn from) and bf16,
#: which joins from a random stream of its own (so the programs of earlier seeds stay what they were)
TYPE_ORDER = ALL + ("bf16",)

N_IN = 16  # input buffer length (indices masked with N_IN - 1)
N_LOCAL = 8  # pk.local array length
N_ACC = 8  # atomic accumulator length


def annot(t: str, role) -> str:
    """The source spelling of a parameter of type ``t`` and ``role`` (None: a scalar; "in": a readonly buffer;
    else a buffer)."""
    tn = "bool_" if t == "bool" else t
    if role is None:
        return tn
    if role == "in":
        return f'Buffer[{tn}, "readonly"]'
    return f"Buffer[{tn}]"


def itemsize(t: str) -> int:
    """Bytes per element of ``t`` (bf16: 2)."""
    return np.dtype(np_name(t)).itemsize


def np_name(t: str) -> str:
    """The NumPy dtype name of ``t`` (bf16: of its bits, uint16)."""
    return {"bool": "bool", "f16": "float16", "f32": "float32", "f64": "float64", "bf16": "uint16"}.get(
        t, ("int" if t[0] == "i" else "uint") + t[1:])


RANGES = {t: (int(np.iinfo(np_name(t)).min), int(np.iinfo(np_name(t)).max)) for t in INTS}


FLOAT_SPECIAL = (0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 1e4, -1e4, 65504.0, 1e30, float("inf"), float("-inf"),
                  float("nan"), 2147483648.0, -2147483904.0, 4294967296.0, 255.5, -128.5)


def rand_value(rng, t: str, finite: bool = False):
    if t == "bool":
        return bool(rng.integers(0, 2))
    if t in FLOATS:
        r = rng.random()
        if r < 0.25:
            v = float(FLOAT_SPECIAL[int(rng.integers(0, len(FLOAT_SPECIAL)))])
        elif r < 0.6:
            v = float(rng.integers(-20, 21)) / float(rng.choice([1, 2, 4, 8]))
        else:
            v = float(rng.normal(0, 100.0))
        ft = "float32" if t == "bf16" else np_name(t)
        with np.errstate(all="ignore"):
            x = np.dtype(ft).type(v)
            if finite and not np.isfinite(x):  # also what overflows the type (1e30 as f16)
                x = np.dtype(ft).type(1.5)
        if t != "f64" and np.isfinite(x) and x != 0 and abs(float(x)) < float(np.finfo(ft).tiny):
            x = np.dtype(ft).type(0.0)  # no subnormal inputs (a device may flush them)
        return np.float32(round_value(x)) if t == "bf16" else x
    lo, hi = RANGES[t]
    r = rng.random()
    if r < 0.2:
        edges = [lo, hi, 0, 1, -1 if lo < 0 else 2, lo + 1, hi - 1]
        return edges[int(rng.integers(0, len(edges)))]
    if r < 0.6:
        v = int(rng.integers(-16, 17))
        return v if lo <= v <= hi else -v
    if t == "u64":
        return int(rng.integers(0, 1 << 63, dtype=np.int64)) * 2 + int(rng.integers(0, 2))
    return int(rng.integers(lo, hi, endpoint=True, dtype=np.int64))
