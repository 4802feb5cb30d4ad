"""The CPU runtime's worker pool: workgroups run in parallel on every core.

A launch splits its workgroups into contiguous chunks and the workers call the kernel's
``K__range(args, launch, begin, end)`` on them through ctypes, which releases the GIL for
the duration of the call, so the chunks really run concurrently. The caller waits for its
own chunks only: many threads may launch at the same time.

Workers are started once, with a large stack (per-work-item storage of barrier kernels
lives on the stack; see the codegen), sized by ``POLYKERN_CPU_STACK_MB`` (default 64).
``POLYKERN_CPU_THREADS`` sets the worker count (default ``os.cpu_count()``).
"""
from __future__ import annotations

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


class _Launch:
    """One launch's bookkeeping: outstanding chunks, the threads that ran them, the first error."""

    def __init__(self, chunks: int):
        self.remaining = chunks
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.threads: Set[int] = set()
        self.error: Optional[BaseException] = None

    def finish(self, error: Optional[BaseException]) -> None:
        with self.lock:
            self.threads.add(threading.get_ident())
            if error is not None and self.error is None:
                self.error = error
            self.remaining -= 1
            if self.remaining == 0:
                self.done.set()


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
            fn, begin, end, launch = self._queue.get()
            try:
                fn(begin, end)
            except BaseException as e:  # a ctypes call cannot raise; this is a Python-side failure
                launch.finish(e)
            else:
                launch.finish(None)

    def run(self, fn: Callable[[int, int], None], total: int, chunks: Optional[int] = None) -> Set[int]:
        """Call ``fn(begin, end)`` over ``[0, total)`` in chunks on the workers; wait; return the
        identities of the threads that ran them."""
        if total <= 0:
            return set()
        self._start()
        n = max(1, min(total, chunks or self.workers * CHUNKS_PER_WORKER))
        launch = _Launch(n)
        step, extra = divmod(total, n)
        begin = 0
        for i in range(n):
            end = begin + step + (1 if i < extra else 0)
            self._queue.put((fn, begin, end, launch))
            begin = end
        launch.done.wait()
        if launch.error is not None:
            raise launch.error
        return launch.threads


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
