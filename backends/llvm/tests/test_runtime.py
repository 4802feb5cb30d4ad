"""The CPU runtime: parallel workgroups on a thread pool, thread-safe loading and launching,
launch-time checks."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, f64, i32
from polykern.errors import LaunchError
from polykern_llvm.runtime import pool as pool_mod
from polykern_llvm.runtime import CPUKernel, LLVMModule

RNG = np.random.default_rng(3)


@pk.kernel
def busy(n: i32, iters: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        v = f32(i)
        for k in range(iters):
            v = v * 0.999 + 1.0
        y[i] = v


@pk.kernel
def group_sum(x: Buffer[i32, "readonly"], out: Buffer[i32]):
    s = pk.shared(i32, 128)
    t = pk.local_id(0)
    s[t] = x[pk.global_id(0)]
    pk.barrier()
    k = 64
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        pk.barrier()
        k //= 2
    if t == 0:
        out[pk.group_id(0)] = s[0]


@pk.kernel
def big_private(y: Buffer[f64]):
    p = pk.local(f64, 4096)
    t = pk.local_id(0)
    p[0] = f64(t)
    pk.barrier()
    y[pk.global_id(0)] = p[0]


@pytest.fixture(scope="module")
def mod():
    return pk.build([busy, group_sum, big_private], targets=["llvm"])


def test_pool_has_one_worker_per_core_and_uses_them(mod):
    assert pool_mod.pool().workers == (int(os.environ[pool_mod.THREADS_ENV]) if os.environ.get(pool_mod.THREADS_ENV)
                                       else os.cpu_count())
    n = 4096
    y = np.zeros(n, np.float32)
    kernel = mod.on("llvm")["busy"].fn  # the runtime's kernel under the launch-time bounds check
    assert isinstance(kernel, CPUKernel)
    kernel(n, 20000, y, grid=n // 64, block=64)
    assert y[0] > 900  # the loop ran (v converges to 1000)
    if pool_mod.pool().workers > 1:
        assert len(kernel.last_threads) > 1, "workgroups ran on a single thread"
        # the launching thread takes part (small stack needs), the others are pool workers
        assert kernel.last_threads - {threading.get_ident()} <= {t.ident for t in pool_mod.pool()._threads}


def test_worker_pool_runs_chunks_concurrently():
    p = pool_mod.WorkerPool(workers=4, stack_mb=1)
    active, peak, lock = [0], [0], threading.Lock()
    seen = []

    def chunk(b, e):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            seen.append((b, e))
        time.sleep(0.05)  # releases the GIL like a ctypes call does
        with lock:
            active[0] -= 1

    threads = p.run(chunk, 10, chunks=8)
    assert len(threads) > 1 and peak[0] > 1
    assert sorted(seen)[0][0] == 0 and sum(e - b for b, e in seen) == 10  # disjoint cover of [0, 10)


def test_worker_count_from_environment(monkeypatch):
    monkeypatch.setenv(pool_mod.THREADS_ENV, "3")
    assert pool_mod.WorkerPool().workers == 3
    monkeypatch.setenv(pool_mod.THREADS_ENV, "zero")
    with pytest.raises(ValueError, match=pool_mod.THREADS_ENV):
        pool_mod.WorkerPool()


def test_many_threads_load_and_launch_at_once(mod):
    data = mod.export()
    shared_mod = pk.load(data)
    errors, start = [], threading.Barrier(8)

    def worker(k):
        try:
            start.wait()
            own = pk.load(data)  # concurrent JIT links of the same artifact
            for m in (own, shared_mod):  # and concurrent launches of one module
                x = np.random.default_rng(100 + k).integers(-100, 100, 128 * 20, dtype=np.int32)
                out = np.zeros(20, np.int32)
                m["group_sum"](x, out, grid=20, block=128)
                np.testing.assert_array_equal(out, x.reshape(20, 128).sum(1))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert shared_mod.on("llvm")._engine.attempts == 1  # linked once, however many threads asked


def test_lazy_link_happens_once_per_module(mod):
    dev = LLVMModule(mod.on("llvm").payload, "o", mod.on("llvm").functions)
    assert not dev._engine.done  # nothing linked before the first kernel is asked for
    kernels = []
    ts = [threading.Thread(target=lambda: kernels.append(dev["group_sum"])) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert dev._engine.attempts == 1 and len({id(k) for k in kernels}) == 1


def test_launch_errors(mod):
    k = mod["group_sum"]
    with pytest.raises(LaunchError, match="takes 2 arguments"):
        k(np.zeros(4, np.int32), grid=1, block=4)
    with pytest.raises(LaunchError, match="int32"):
        k(np.zeros(4, np.float32), np.zeros(1, np.int32), grid=1, block=4)

    class OnGPU:
        def __polykern_buffer__(self):
            return {"ptr": 1 << 40, "size": 4, "code": 0, "bits": 32, "device": ("cuda", 0)}

    with pytest.raises(LaunchError, match="host memory"):
        k(OnGPU(), np.zeros(1, np.int32), grid=1, block=4)


def test_stack_budget_is_checked(mod):
    k = mod["big_private"]
    y = np.zeros(64, np.float64)
    k(y, grid=2, block=32)  # 32 work-items x 32 KiB private arrays: fine
    np.testing.assert_array_equal(y, np.tile(np.arange(32), 2))
    with pytest.raises(LaunchError, match="stack"):
        k(np.zeros(1 << 14, np.float64), grid=1, block=1 << 14)  # 512 MiB of per-work-item arrays


def test_zero_copy_numpy_views(mod):
    base = np.zeros(300, np.float32)
    view = base[100:200]
    mod["busy"](100, 1, view, grid=2, block=64)
    assert (base[:100] == 0).all() and (base[200:] == 0).all()
    np.testing.assert_allclose(view, np.arange(100) * 0.999 + 1.0, rtol=1e-6)


def test_devices_and_status():
    from polykern import backends

    rec = [r for r in backends.status() if r["name"] == "llvm"][0]
    assert rec["codegen_ok"] and rec["runtime_available"], rec
    assert rec["devices"] and "worker threads" in rec["devices"][0]
