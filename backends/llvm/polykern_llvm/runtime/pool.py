"""The CPU runtime's worker pool: workgroups run in parallel on every core.

A launch splits its workgroups into contiguous chunks; the participants claim chunks one at a
time (an ``itertools.count``, atomic under the GIL) and call the kernel's ``K__range(args,
launch, begin, end)`` on them through ctypes, which releases the GIL for the duration of the
call, so the chunks really run concurrently. Claiming dynamically balances uneven chunks and
lets a late-waking worker simply find nothing left.

The launching thread is a participant too when the kernel's stack needs are small (the runtime
decides): a launch then never waits for a worker to wake up, and a one-group launch costs one
ctypes call. Workers are woken only for launches of more than one chunk, ``workers - 1`` of
them when the caller participates, so the participants never outnumber the cores. The caller
waits for its own launch only: many threads may launch at the same time.

Workers are started once, with a large stack (per-work-item storage of barrier kernels
lives on the stack; see the codegen), sized by ``POLYKERN_CPU_STACK_MB`` (default 64).
``POLYKERN_CPU_THREADS`` sets the worker count (default ``os.cpu_count()``).
"""
from __future__ import annotations

import itertools
import os
import queue
import threading
from typing import Callable, List, Optional, Set

__all__ = ["WorkerPool", "pool", "STACK_ENV", "THREADS_ENV"]

STACK_ENV = "POLYKERN_CPU_STACK_MB"
THREADS_ENV = "POLYKERN_CPU_THREADS"
CHUNKS_PER_WORKER = 4


def _env_int(name: str, default: int, lo: int, hi: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {text!r}") from None
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {value}")
    return value


class _Job:
    """One launch: ``n`` chunks of ``[0, total)`` claimed by the participants."""

    __slots__ = ("fn", "n", "step", "extra", "claims", "lock", "done", "finished", "threads", "error")

    def __init__(self, fn: Callable[[int, int], None], total: int, n: int):
        self.fn, self.n = fn, n
        self.step, self.extra = divmod(total, n)
        self.claims = itertools.count()
        self.lock = threading.Lock()
        self.done = 0
        self.finished = threading.Event()
        self.threads: Set[int] = set()
        self.error: Optional[BaseException] = None

    def work(self) -> None:
        """Run chunks until none is left; account for them once."""
        ran, error = 0, None
        fn, n, step, extra = self.fn, self.n, self.step, self.extra
        while True:
            i = next(self.claims)
            if i >= n:
                break
            begin = i * step + min(i, extra)
            try:
                fn(begin, begin + step + (1 if i < extra else 0))
            except BaseException as e:  # a ctypes call cannot raise; this is a Python-side failure
                error = error or e
            ran += 1
        if ran:
            with self.lock:
                self.threads.add(threading.get_ident())
                if error is not None and self.error is None:
                    self.error = error
                self.done += ran
                if self.done == n:
                    self.finished.set()


class WorkerPool:
    def __init__(self, workers: Optional[int] = None, stack_mb: Optional[int] = None):
        self.workers = workers or _env_int(THREADS_ENV, os.cpu_count() or 1, 1, 4096)
        self.stack_bytes = (stack_mb or _env_int(STACK_ENV, 64, 1, 4096)) << 20
        self._queue: "queue.SimpleQueue" = queue.SimpleQueue()
        self._threads: List[threading.Thread] = []
        self._lock = threading.Lock()

    def _start(self) -> None:
        with self._lock:
            if self._threads:
                return
            old = threading.stack_size()
            threading.stack_size(self.stack_bytes)
            try:
                for i in range(self.workers):
                    t = threading.Thread(target=self._work, name=f"polykern-cpu-{i}", daemon=True)
                    t.start()
                    self._threads.append(t)
            finally:
                threading.stack_size(old)

    def _work(self) -> None:
        while True:
            self._queue.get().work()

    def run(self, fn: Callable[[int, int], None], total: int, chunks: Optional[int] = None,
            caller: bool = False) -> Set[int]:
        """Call ``fn(begin, end)`` over ``[0, total)`` in chunks; wait; return the identities of the
        threads that ran them. ``caller``: the calling thread runs chunks too."""
        if total <= 0:
            return set()
        n = max(1, min(total, chunks or self.workers * CHUNKS_PER_WORKER))
        if n == 1 and caller:  # nothing to share: no bookkeeping at all
            fn(0, total)
            return {threading.get_ident()}
        job = _Job(fn, total, n)
        self._start()
        for _ in range(min(n, self.workers - 1 if caller else self.workers)):
            self._queue.put(job)
        if caller:
            job.work()
        job.finished.wait()
        if job.error is not None:
            raise job.error
        return job.threads


_pool: Optional[WorkerPool] = None
_pool_lock = threading.Lock()


def pool() -> WorkerPool:
    """The process-wide pool (created on first use)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = WorkerPool()
    return _pool
