"""Thread-safe lazy realization for runtimes (docs/internals.md "Modules").

A runtime module often defers expensive work (JIT-compiling a payload, creating a
device context) until the first ``get_function``. :class:`Lazy` runs the factory
exactly once even when many threads ask at the same time (the others wait); if
the factory raises, nothing is cached, the caller gets the error, and the next
caller (including one that was waiting) tries again. :class:`LazyMap` does the same per key (e.g. one kernel handle per name).

:class:`BoundedLazyMap` is a LazyMap for keys without a natural limit — one pipeline per launch shape
(block, ``shared_size``) — that keeps at most a fixed number of values, least recently used first out,
and gives each evicted value to a ``dispose`` function once no launch is using it.
"""
from __future__ import annotations

import collections
import threading
from typing import Callable, Dict, Generic, Hashable, List, Optional, Tuple, TypeVar

__all__ = ["Lazy", "LazyMap", "BoundedLazyMap", "PIPELINES_PER_KERNEL"]

#: Pipelines a runtime keeps per kernel (Vulkan, WebGPU): one per launch shape (block, shared_size),
#: least recently used first out. A loop or an autotuning sweep over up to this many shapes creates
#: each pipeline once; more shapes recreate the evicted ones (about 0.1 MiB of host memory each on
#: lavapipe, so a kernel holds at most a few MiB of them however many shapes it is launched with).
PIPELINES_PER_KERNEL = 64

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


class _Entry(Generic[T]):
    __slots__ = ("lazy", "users", "evicted", "kept")

    def __init__(self, lazy: Lazy[T]):
        self.lazy = lazy
        self.users = 0  # launches between acquire and release
        self.evicted = False
        self.kept = False  # abandon(): never disposed (the device may still use it)


class BoundedLazyMap(Generic[K, T]):
    """A :class:`LazyMap` keeping at most ``bound`` values (least recently used first out).

    ``acquire(key)`` -> ``(value, lease)`` realizes the value (once, as LazyMap) and marks it in use
    until ``release(lease)``; an evicted value is passed to ``dispose(value)`` when its last user
    releases it (at once if none). ``abandon(lease)`` instead of ``release`` keeps a value from ever
    being disposed (a launch that failed after submission: the device may still use it). ``get(key)``
    is for values whose users keep them alive by reference (nothing to pin). ``clear()`` disposes
    everything not in use (the rest when released)."""

    def __init__(self, factory: Callable[[K], T], bound: int, dispose: Callable[[T], None] = lambda value: None):
        if bound < 1:
            raise ValueError(f"BoundedLazyMap needs a bound of at least 1, got {bound}")
        self._factory = factory
        self.bound = bound
        self._dispose = dispose
        self._lock = threading.Lock()
        self._items: "collections.OrderedDict[K, _Entry[T]]" = collections.OrderedDict()
        self.evictions = 0  # observable: how many values were evicted

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            entry = self._items.get(key)  # type: ignore[arg-type]
        return entry is not None and entry.lazy.done

    def values(self) -> List[T]:
        """The values kept now (realized ones), least recently used first."""
        with self._lock:
            entries = list(self._items.values())
        return [e.lazy.get() for e in entries if e.lazy.done]

    def acquire(self, key: K) -> Tuple[T, "_Entry[T]"]:
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                entry = self._items[key] = _Entry(Lazy(lambda: self._factory(key)))
            else:
                self._items.move_to_end(key)
            entry.users += 1
            gone = self._overflow()
        self._dispose_all(gone)
        try:
            return entry.lazy.get(), entry
        except BaseException:
            self.release(entry)
            raise

    def get(self, key: K) -> T:
        value, entry = self.acquire(key)
        self.release(entry)
        return value

    def release(self, entry: "_Entry[T]") -> None:
        with self._lock:
            entry.users -= 1
            gone = [entry] if entry.evicted and not entry.users else []
        self._dispose_all(gone)

    def abandon(self, entry: "_Entry[T]") -> None:
        with self._lock:
            entry.kept = True
            entry.users -= 1

    def clear(self) -> None:
        with self._lock:
            entries = list(self._items.values())
            self._items.clear()
            for e in entries:
                e.evicted = True
        self._dispose_all([e for e in entries if not e.users])

    def _overflow(self) -> List["_Entry[T]"]:
        """Evict the least recently used entries beyond the bound (under the lock); those not in use."""
        gone = []
        while len(self._items) > self.bound:
            _, old = self._items.popitem(last=False)
            old.evicted = True
            self.evictions += 1
            if not old.users:
                gone.append(old)
        return gone

    def _dispose_all(self, entries: List["_Entry[T]"]) -> None:
        for e in entries:
            if e.lazy.done and not e.kept:
                self._dispose(e.lazy.get())
