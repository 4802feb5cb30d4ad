"""The canonical serialized form of IR functions: bytes that are equal exactly when two functions are
the same IR (every field of every node, including source locations and pass attributes), in any
process. The compile cache keys on it (polykern.build_cache).

IR nodes and types are dataclasses; what they hold is None, bool, int, float, str, bytes, lists,
tuples, sets and dicts of those (dicts in sorted key order, sets sorted), and other dataclasses. Any
other value (an object without a stable serialized form) raises :class:`NotCanonical`; so does a
reference cycle: the caller then does not cache.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterable, List

__all__ = ["NotCanonical", "canonical_bytes"]


class NotCanonical(Exception):
    """The IR holds a value without a canonical form (it cannot be a cache key)."""


_SCALARS = (type(None), bool, int, str, bytes)
_FIELDS: dict = {}  # dataclass type -> (its "module.qualname(", its field names)


def canonical_bytes(functions: Iterable[Any]) -> bytes:
    """The canonical form of a list of ``ir.Function`` (order kept)."""
    out: List[str] = []
    for f in functions:
        _emit(f, out, set())
        out.append("\n")
    return "".join(out).encode("utf-8", "surrogatepass")


def _emit(value: Any, out: List[str], active: set) -> None:
    if isinstance(value, _SCALARS):
        out.append(f"{type(value).__name__}:{value!r};")
    elif isinstance(value, float):
        # repr is exact for floats; the sign of a NaN and of 0.0 are kept by the hex form
        out.append(f"float:{value.hex() if not math.isnan(value) else repr(value)};")
    elif isinstance(value, (list, tuple, set, frozenset, dict)) or dataclasses.is_dataclass(value):
        if id(value) in active:
            raise NotCanonical(f"a reference cycle through a {type(value).__name__}")
        active.add(id(value))
        try:
            _emit_container(value, out, active)
        finally:
            active.discard(id(value))
    else:
        raise NotCanonical(f"a {type(value).__module__}.{type(value).__qualname__} value")


def _emit_container(value: Any, out: List[str], active: set) -> None:
    if isinstance(value, (list, tuple)):
        out.append(f"{type(value).__name__}[")
        for v in value:
            _emit(v, out, active)
        out.append("]")
    elif isinstance(value, (set, frozenset)):
        items = []
        for v in value:
            part: List[str] = []
            _emit(v, part, active)
            items.append("".join(part))
        out.append("set[" + "".join(sorted(items)) + "]")
    elif isinstance(value, dict):
        items = []
        for k, v in value.items():
            part = []
            _emit(k, part, active)
            part.append("=")
            _emit(v, part, active)
            items.append("".join(part))
        out.append("dict{" + ",".join(sorted(items)) + "}")
    else:
        cls = type(value)
        shape = _FIELDS.get(cls)
        if shape is None:
            shape = _FIELDS[cls] = (f"{cls.__module__}.{cls.__qualname__}(",
                                    tuple(f.name for f in dataclasses.fields(value)))
        out.append(shape[0])
        for name in shape[1]:
            out.append(name + "=")
            _emit(getattr(value, name), out, active)
        out.append(")")
