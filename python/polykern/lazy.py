"""Thread-safe lazy realization for runtimes (docs/internals.md "Modules").

A runtime module often defers expensive work (JIT-compiling a payload, creating a
device context) until the first ``get_function``. :class:`Lazy` runs the factory
exactly once even when many threads ask at the same time (the others wait); if
the factory raises, nothing is cached, the caller gets the error, and the next
caller (including one that was waiting) tries again. :class:`LazyMap` does the same per key (e.g. one kernel handle per name).
"""
from __future__ import annotations

import threading
from typing import Callable, Dict, Generic, Hashable, Optional, TypeVar

__all__ = ["Lazy", "LazyMap"]

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
_UNSET = object()


class Lazy(Generic[T]):
    """``Lazy(factory).get()`` -> the factory's value, computed once."""

    __slots__ = ("_factory", "_lock", "_value", "_owner", "last_error", "attempts")

    def __init__(self, factory: Callable[[], T]):
        self._factory = factory
        self._lock = threading.Lock()
        self._value = _UNSET
        self._owner: Optional[int] = None
        #: The exception of the latest failed attempt (None after a success).
        self.last_error: Optional[BaseException] = None
        #: How many times the factory has been called.
        self.attempts = 0

    @property
    def done(self) -> bool:
        return self._value is not _UNSET

    def get(self) -> T:
        value = self._value
        if value is not _UNSET:  # fast path, no lock once realized
            return value  # type: ignore[return-value]
        if self._owner == threading.get_ident():
            raise RuntimeError("Lazy value requested again from inside its own factory (recursive realization)")
        with self._lock:
            if self._value is not _UNSET:
                return self._value  # type: ignore[return-value]
            self._owner = threading.get_ident()
            self.attempts += 1
            try:
                value = self._factory()
            except BaseException as e:
                self.last_error = e
                raise
            finally:
                self._owner = None
            self.last_error = None
            self._value = value
            return value

    def reset(self) -> None:
        """Forget the value; the next ``get`` realizes again."""
        with self._lock:
            self._value = _UNSET


class LazyMap(Generic[K, T]):
    """Per-key :class:`Lazy`: ``LazyMap(lambda key: compile(key)).get(key)``."""

    def __init__(self, factory: Callable[[K], T]):
        self._factory = factory
        self._lock = threading.Lock()
        self._items: Dict[K, Lazy[T]] = {}

    def get(self, key: K) -> T:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                item = self._items[key] = Lazy(lambda: self._factory(key))
        return item.get()

    def __contains__(self, key: object) -> bool:
        with self._lock:
            item = self._items.get(key)  # type: ignore[arg-type]
        return item is not None and item.done
