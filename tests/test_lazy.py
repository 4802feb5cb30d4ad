"""polykern.runtime.lazy: one realization under concurrency, retry after failure."""
import threading
import time

import pytest

from polykern.runtime.lazy import Lazy, LazyMap


def test_one_realization_under_concurrency():
    calls = []

    def factory():
        calls.append(threading.get_ident())
        time.sleep(0.05)  # widen the race window
        return object()

    lazy = Lazy(factory)
    results = []
    start = threading.Barrier(16)

    def worker():
        start.wait()
        results.append(lazy.get())

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and lazy.attempts == 1
    assert len(results) == 16 and all(r is results[0] for r in results)
    assert lazy.done


def test_failure_is_not_cached_and_retries():
    outcomes = iter([RuntimeError("jit failed"), "ok"])

    def factory():
        v = next(outcomes)
        if isinstance(v, Exception):
            raise v
        return v

    lazy = Lazy(factory)
    with pytest.raises(RuntimeError, match="jit failed"):
        lazy.get()
    assert not lazy.done and isinstance(lazy.last_error, RuntimeError)
    assert lazy.get() == "ok" and lazy.attempts == 2 and lazy.last_error is None
    assert lazy.get() == "ok" and lazy.attempts == 2


def test_recursive_realization_is_an_error_not_a_deadlock():
    holder = {}
    holder["lazy"] = Lazy(lambda: holder["lazy"].get())
    with pytest.raises(RuntimeError, match="recursive"):
        holder["lazy"].get()
    assert not holder["lazy"].done


def test_reset():
    counter = iter(range(10))
    lazy = Lazy(lambda: next(counter))
    assert lazy.get() == 0 and lazy.get() == 0
    lazy.reset()
    assert lazy.get() == 1


def test_lazy_map_per_key():
    calls = []
    m = LazyMap(lambda k: calls.append(k) or k * 2)
    threads = [threading.Thread(target=m.get, args=(k % 3,)) for k in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(calls) == [0, 1, 2] and m.get(2) == 4 and 1 in m and 7 not in m
