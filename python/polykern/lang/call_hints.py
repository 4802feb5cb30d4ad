"""The message for a call a kernel cannot make: what to write instead.

A kernel calls polykern builtins, device functions, type casts, and the Python functions that
``builtins.PYTHON_ALIASES`` maps to builtins (``min``, ``math.sqrt`` ...). Any other callee is refused
with a message naming its polykern equivalent where one exists, found by the callee's name (NumPy's,
``math``'s, PyTorch's ``exp`` is ``pk.exp``; ``np.float32`` is the cast ``f32``), ``@pk.func`` for a
plain Python function of the user's, and otherwise listing what is callable.
"""
from __future__ import annotations

import builtins as _py
import math as _math
import types as _pytypes
from typing import Any, Iterable, List, Optional

import numpy as np

from ..ir.types import scalar_from_numpy
from . import builtins as B

# Names of other libraries' functions that differ from the polykern builtin's of the same meaning.
_RENAMED = {"absolute": "abs", "fabs": "abs", "power": "pow", "minimum": "min", "maximum": "max",
            "fmin": "min", "fmax": "max", "amin": "min", "amax": "max", "where": "select"}
_EQUIVALENT_CATEGORIES = ("math", "select")
# Libraries whose functions are matched to builtins by name even when written in Python.
_LIBRARIES = ("numpy", "math", "cmath", "torch", "jax", "jaxlib", "cupy", "cupyx", "scipy", "numba")


def python_callables(casts: Iterable[Any]) -> List[str]:
    """The Python functions a kernel may call, by name (``min``, ``math.sqrt`` ...): the keys of
    ``PYTHON_ALIASES`` and the Python types ``casts`` (``int``, ``float`` ...)."""
    out = [n for n in dir(_py) if id(getattr(_py, n)) in B.PYTHON_ALIASES]
    out += [c.__name__ for c in casts]
    out += [f"math.{n}" for n in dir(_math) if id(getattr(_math, n)) in B.PYTHON_ALIASES]
    return out


def equivalent(fn: Any) -> Optional[str]:
    """The polykern spelling of ``fn`` (``pk.exp`` for ``np.exp``, ``f32`` for ``np.float32``), or None."""
    if isinstance(fn, type) and issubclass(fn, np.generic):
        try:
            t = scalar_from_numpy(fn)
        except TypeError:
            return None
        return str(t) if t is not None else None
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return None
    name = _RENAMED.get(name, name)
    b = B.BUILTINS.get(name)
    return f"pk.{name}" if b is not None and b.category in _EQUIVALENT_CATEGORIES else None


def _users_function(fn: Any) -> bool:
    """A Python function defined outside the array and math libraries (a helper of the user's)."""
    lib = (getattr(fn, "__module__", None) or "").split(".")[0]
    return isinstance(fn, _pytypes.FunctionType) and lib not in _LIBRARIES


def uncallable_message(fn: Any, text: str, casts: Iterable[Any]) -> str:
    """Why ``text`` (the callee as written, resolving to ``fn``) cannot be called in a kernel, and what to
    write instead (``casts``: the Python types a kernel calls as casts)."""
    head = f"'{text}' cannot be called in a kernel"
    if fn is _py.len:
        return (f"{head}: a Buffer's length is not known inside a kernel; pass the length as a parameter "
                "(e.g. n: i32) and use it (if i < n: ...)")
    if _users_function(fn):
        return (f"{head}: it is a plain Python function; decorate it with @pk.func (and type its parameters) "
                "to make it a device function kernels can call")
    alt = equivalent(fn)
    if alt is not None:
        return f"{head}; use {alt}(...) instead (the polykern {'cast' if alt[:3] != 'pk.' else 'builtin'})"
    return (f"{head}: it has no polykern equivalent. A kernel calls polykern builtins (pk.exp, pk.min, pk.select "
            f"... docs/language.md section 5), @pk.func device functions, type casts (f32(...), i32(...)) and of "
            f"Python's functions only {', '.join(python_callables(casts))}")
