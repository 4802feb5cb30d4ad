"""Specialization: the ``pk.constexpr`` and ``pk.dtype`` parameters of a kernel or device function, the
values bound to them, and the deterministic name of a specialized kernel.

``saxpy.specialize(T=f16, BLOCK=128)`` binds values by name; the specialized kernel is named
``saxpy__T_f16__BLOCK_128`` (the bound parameters in parameter order, each value spelled with ASCII
letters, digits and ``_`` only, so the name is an identifier on every backend). Its artifact records
the values in the FunctionInfo attribute ``specialization`` (``"T=f16,BLOCK=128"``).
"""
from __future__ import annotations

import math
from typing import Dict, List, Tuple

import numpy as np

from ..errors import KernelTypeError
from ..ir.types import ScalarType, i64, scalar_from_numpy, u64
from .annotations import TypeParam

__all__ = ["python_scope", "type_params", "check_value", "specialized_name", "describe", "ATTR", "INT_RANGE"]

ATTR = "specialization"


def python_scope(pyfunc) -> dict:
    """The names a kernel's or function's body sees: its module globals, then its closure cells."""
    env = dict(pyfunc.__globals__)
    if pyfunc.__closure__:
        for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__):
            try:
                env[name] = cell.cell_contents
            except ValueError:  # a cell not yet assigned
                pass
    return env


def type_params(pyfunc, where) -> List[Tuple[str, str]]:
    """``[(name, "constexpr" | "dtype"), ...]`` in parameter order. ``where`` locates errors."""
    env = None
    out = []
    names = pyfunc.__code__.co_varnames[:pyfunc.__code__.co_argcount]
    for name in names:
        ann = pyfunc.__annotations__.get(name)
        if isinstance(ann, str):  # from __future__ import annotations
            env = python_scope(pyfunc) if env is None else env
            try:
                ann = eval(ann, env)  # noqa: S307 - the user's own annotation, evaluated as Python would
            except Exception:  # noqa: BLE001 - not a marker; the frontend reports bad annotations
                continue
        if isinstance(ann, TypeParam):
            out.append((name, ann.kind))
    return out


#: The integers a pk.constexpr takes: those some kernel integer type holds (i64's least .. u64's largest).
INT_RANGE = (i64.min_value(), u64.max_value())


def _shown(value) -> str:
    """``repr(value)`` for a message, or what stands for it where repr fails or would be huge."""
    if isinstance(value, int) and value.bit_length() > 256:  # str() of a huge int is slow, or refused
        return f"an integer of {value.bit_length()} bits"
    try:
        return repr(value)
    except Exception as e:  # noqa: BLE001 - the user's object: its repr must not replace the message
        return f"a {type(value).__name__} (whose repr() raised {type(e).__name__})"


def check_value(owner: str, name: str, kind: str, value, loc=None):
    """``value`` as bound to parameter ``name`` (NumPy scalars and dtypes become Python ones), or a
    KernelTypeError naming what the parameter takes."""
    if kind == "dtype":
        if isinstance(value, ScalarType):
            return value
        t = None
        try:
            t = scalar_from_numpy(value)
        except Exception:  # noqa: BLE001 - anything NumPy cannot read as a dtype is refused below
            pass
        if t is None:
            raise KernelTypeError(f"{owner}: pk.dtype parameter '{name}' takes a scalar type (f32, i32, ...), "
                                  f"got {_shown(value)}", loc)
        return t
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if not INT_RANGE[0] <= v <= INT_RANGE[1]:
            raise KernelTypeError(f"{owner}: pk.constexpr parameter '{name}' takes an integer in "
                                  f"{INT_RANGE[0]}..{INT_RANGE[1]} (what i64 or u64 holds), got {_shown(v)}", loc)
        return v
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isinf(f) and np.isfinite(value):  # a long double beyond float64
            raise KernelTypeError(f"{owner}: pk.constexpr parameter '{name}' takes a float that float64 holds, "
                                  f"got {_shown(value)}, which rounds to {f}", loc)
        return f
    raise KernelTypeError(f"{owner}: pk.constexpr parameter '{name}' takes a Python number or bool, got "
                          f"{_shown(value)}", loc)


def _spell(value) -> str:
    if isinstance(value, ScalarType):
        return value.name
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value).replace("-", "m")
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "minf"
    return repr(value).replace("-", "m").replace("+", "").replace(".", "p")


def specialized_name(base: str, params: List[Tuple[str, str]], bindings: Dict[str, object]) -> str:
    """``base__P_value__Q_value`` for the bound parameters, in parameter order."""
    parts = [base] + [f"{p}_{_spell(bindings[p])}" for p, _ in params if p in bindings]
    return "__".join(parts)


def describe(params: List[Tuple[str, str]], bindings: Dict[str, object]) -> str:
    """``"T=f16,BLOCK=128"``: the attribute text recording a specialization."""
    return ",".join(f"{p}={bindings[p]!r}" if not isinstance(bindings[p], ScalarType) else f"{p}={bindings[p]}"
                    for p, _ in params if p in bindings)
