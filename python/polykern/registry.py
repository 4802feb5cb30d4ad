"""The global registry: string keys -> callables (and schema objects).

Like TVM's FFI registry, every extension point of polykern is a string key
(docs/internals.md lists them):

- ``target.build.<target kind>``    codegen entry, registered by every backend's codegen;
- ``target.kind.<target kind>``     a :class:`polykern.target.TargetKind` (attribute schema);
- ``module.create.<kind>``          real runtime module factory (runtime plugins only);
- ``module.load_from_bytes.<kind>`` real loader (runtime plugins only).
- ``module.payload.<kind>``         the payloads the kind's modules hold (``payload_formats.PayloadFormats``;
                                    registered by the codegen).

The registry is process-global and thread-safe. Registering a name twice is an
error unless ``override=True`` — two backends silently fighting over one key
is exactly the kind of bug this catches.

A runtime registers its ``module.*``/``runtime.*`` names when it is imported, which happens on first
need (polykern.backends): :func:`get` and :func:`require` of a name not registered yet first call the
resolver (:func:`set_resolver`, installed by polykern.backends), which imports the runtime it belongs to.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional

from .errors import BackendUnavailableError

__all__ = ["register", "get", "require", "names", "remove", "snapshot", "restore", "set_resolver"]

_lock = threading.RLock()
_entries: Dict[str, Any] = {}
_MISSING = object()
_resolver: Dict[str, Callable[[str], None]] = {}


def set_resolver(fn: Callable[[str], None]) -> None:
    """``fn(name)`` is called (outside the registry's lock) before :func:`get`/:func:`require` answer
    that ``name`` is not registered; it may register it (polykern.backends: a pending runtime)."""
    _resolver["fn"] = fn


def _lookup(name: str) -> Any:
    with _lock:
        entry = _entries.get(name)
    if entry is None and "fn" in _resolver:
        _resolver["fn"](name)
        with _lock:
            entry = _entries.get(name)
    return entry


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name or name != name.strip():
        raise ValueError(f"registry names are non-empty strings without surrounding blanks, got {name!r}")


def register(name: str, func: Any = None, override: bool = False):
    """Register ``func`` under ``name``.

    Usable directly (``register("target.build.x", build)``) or as a decorator
    (``@register("target.build.x")``). Raises ``ValueError`` if ``name`` is taken
    and ``override`` is false.
    """
    _check_name(name)
    if func is None:
        def decorator(f):
            register(name, f, override=override)
            return f
        return decorator
    with _lock:
        if name in _entries and not override:
            raise ValueError(f"registry name {name!r} is already registered (pass override=True to replace it)")
        _entries[name] = func
    return func


def get(name: str) -> Optional[Any]:
    """The entry registered under ``name``, or ``None``."""
    return _lookup(name)


def require(name: str) -> Any:
    """The entry registered under ``name``; raises :class:`BackendUnavailableError` if absent."""
    entry = _lookup(name)
    if entry is not None:
        return entry
    with _lock:
        prefix = name.rsplit(".", 1)[0] + "." if "." in name else ""
        siblings = sorted(n for n in _entries if prefix and n.startswith(prefix))
    hint = f"; registered under {prefix!r}: {', '.join(siblings)}" if siblings else ""
    raise BackendUnavailableError(f"nothing is registered under {name!r}{hint}")


def names(prefix: str = "") -> List[str]:
    """Every registered name starting with ``prefix``, sorted."""
    with _lock:
        return sorted(n for n in _entries if n.startswith(prefix))


def remove(name: str) -> bool:
    """Remove ``name``; returns whether it was registered."""
    with _lock:
        return _entries.pop(name, None) is not None


def snapshot() -> Dict[str, Any]:
    """A copy of the whole registry (used to undo a half-finished plugin registration)."""
    with _lock:
        return dict(_entries)


def restore(before: Dict[str, Any]) -> List[str]:
    """Put the registry back as it was at ``before`` (a :func:`snapshot`): names added since are removed,
    names replaced (``override=True``) or removed since get their old entry back. Returns the changed
    names, sorted. Undoes a failed plugin registration as a whole (backends.py)."""
    with _lock:
        changed = sorted(n for n in set(_entries) | set(before)
                         if _entries.get(n, _MISSING) is not before.get(n, _MISSING))
        for n in changed:
            if n in before:
                _entries[n] = before[n]
            else:
                del _entries[n]
        return changed
