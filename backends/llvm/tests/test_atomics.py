"""Atomics are real read-modify-writes: many workgroups contend from several threads at once."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, f64, i32, i64, u32, u64

RNG = np.random.default_rng(5)
BINS = 16


@pk.kernel
def histogram(n: i32, x: Buffer[i32, "readonly"], hist: Buffer[u32]):
    local_hist = pk.shared(u32, BINS)
    lid = pk.local_id(0)
    if lid < BINS:
        local_hist[lid] = u32(0)
    pk.barrier()
    i = pk.global_id(0)
    while i < n:  # grid-stride loop: every work-item handles several elements
        pk.atomic_add(local_hist, x[i] % BINS, u32(1))
        i += pk.num_groups(0) * pk.local_size(0)
    pk.barrier()
    if lid < BINS:
        pk.atomic_add(hist, lid, local_hist[lid])


@pk.kernel
def global_histogram(n: i32, x: Buffer[i32, "readonly"], hist: Buffer[i64]):
    i = pk.global_id(0)
    if i < n:
        pk.atomic_add(hist, x[i] % BINS, i64(1))


@pk.kernel
def min_max(n: i32, x: Buffer[f32, "readonly"], xi: Buffer[i32, "readonly"], fr: Buffer[f32],
            ir: Buffer[i32], ur: Buffer[u64], dr: Buffer[f64]):
    i = pk.global_id(0)
    if i < n:
        pk.atomic_min(fr, 0, x[i])
        pk.atomic_max(fr, 1, x[i])
        pk.atomic_min(ir, 0, xi[i])
        pk.atomic_max(ir, 1, xi[i])
        pk.atomic_max(ur, 0, u64(xi[i] + 1000))
        pk.atomic_add(dr, 0, f64(xi[i]))
        pk.atomic_add(fr, 2, 1.0)


@pk.kernel
def cas_counter(n: i32, counter: Buffer[i32], tickets: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        done = False
        while not done:
            old = counter[0]
            if pk.atomic_cas(counter, 0, old, old + 1) == old:
                tickets[i] = old
                done = True


@pk.kernel
def float_cas_add(n: i32, acc: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        while True:
            old = acc[0]
            if pk.atomic_cas(acc, 0, old, old + 2.0) == old:
                break


@pk.kernel
def exchange(n: i32, slot: Buffer[i32], seen: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        seen[i] = pk.atomic_xchg(slot, 0, i + 1)


@pytest.fixture(scope="module")
def mod():
    return pk.build([histogram, global_histogram, min_max, cas_counter, float_cas_add, exchange], targets=["llvm"])


def test_shared_then_global_histogram_many_groups(mod):
    n = 200_003
    x = RNG.integers(0, 1000, n, dtype=np.int32)
    hist = np.zeros(BINS, np.uint32)
    mod["histogram"](n, x, hist, grid=37, block=64)
    np.testing.assert_array_equal(hist, np.bincount(x % BINS, minlength=BINS))


def test_global_atomic_add_contention(mod):
    n = 300_001
    x = RNG.integers(0, 1 << 20, n, dtype=np.int32)
    hist = np.zeros(BINS, np.int64)
    mod["global_histogram"](n, x, hist, grid=(n + 127) // 128, block=128)
    np.testing.assert_array_equal(hist, np.bincount(x % BINS, minlength=BINS))


def test_atomic_min_max_add_types(mod):
    n = 50_000
    x = RNG.standard_normal(n).astype(np.float32)
    xi = RNG.integers(-(1 << 20), 1 << 20, n, dtype=np.int32)
    fr = np.array([np.inf, -np.inf, 0.0], np.float32)
    ir = np.array([np.iinfo(np.int32).max, np.iinfo(np.int32).min], np.int32)
    ur = np.zeros(1, np.uint64)
    dr = np.zeros(1, np.float64)
    mod["min_max"](n, x, xi, fr, ir, ur, dr, grid=(n + 255) // 256, block=256)
    assert fr[0] == x.min() and fr[1] == x.max()
    assert fr[2] == n  # exact: integers below 2^24
    assert ir[0] == xi.min() and ir[1] == xi.max()
    assert ur[0] == (xi + 1000).astype(np.uint64).max()  # C conversion: negative values wrap
    assert dr[0] == xi.astype(np.float64).sum()


def test_compare_and_swap_loops(mod):
    n = 20_000
    counter = np.zeros(1, np.int32)
    tickets = np.full(n, -1, np.int32)
    mod["cas_counter"](n, counter, tickets, grid=(n + 63) // 64, block=64)
    assert counter[0] == n
    np.testing.assert_array_equal(np.sort(tickets), np.arange(n))  # every ticket handed out once
    acc = np.zeros(1, np.float32)
    mod["float_cas_add"](4000, acc, grid=63, block=64)
    assert acc[0] == 8000.0


def test_exchange_hands_each_value_out_once(mod):
    n = 10_000
    slot = np.zeros(1, np.int32)
    seen = np.full(n, -7, np.int32)
    mod["exchange"](n, slot, seen, grid=(n + 99) // 100, block=100)
    values = np.concatenate([seen, slot])
    np.testing.assert_array_equal(np.sort(values), np.arange(n + 1))
