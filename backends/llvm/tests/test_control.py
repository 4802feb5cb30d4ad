"""Structured control flow, launch geometry and private arrays on the CPU, with real @pk.kernel
kernels (no barriers here; see test_barriers.py)."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32, i64, u32

RNG = np.random.default_rng(7)


@pk.kernel
def branches(n: i32, x: Buffer[i32, "readonly"], y: Buffer[i32]):
    i = pk.global_id(0)
    if i >= n:
        return
    v = x[i]
    if v < -50:
        y[i] = -1
    elif v < 0:
        y[i] = v * 2
    elif v == 0:
        y[i] = 1000
    else:
        y[i] = v // 3


@pk.kernel
def loops(n: i32, x: Buffer[i32, "readonly"], y: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        acc = 0
        for k in range(x[i]):
            if k % 3 == 1:
                continue
            if k > 20:
                break
            acc += k
        down = 0
        for k in range(10, 0, -3):
            down = down * 10 + k
        w = x[i]
        steps = 0
        while w != 1 and w > 0:
            w = w // 2 if w % 2 == 0 else 3 * w + 1
            steps += 1
        y[i] = acc * 1000000 + steps * 100000 + down


def loops_reference(x):
    out = []
    for v in x.tolist():
        acc = 0
        for k in range(v):
            if k % 3 == 1:
                continue
            if k > 20:
                break
            acc += k
        down = 0
        for k in range(10, 0, -3):
            down = down * 10 + k
        w, steps = v, 0
        while w != 1 and w > 0:
            w = w // 2 if w % 2 == 0 else 3 * w + 1
            steps += 1
        out.append(acc * 1000000 + steps * 100000 + down)
    return np.array(out, dtype=np.int32)


@pk.kernel
def short_circuit(n: i32, x: Buffer[i32, "readonly"], calls: Buffer[i32], y: Buffer[i32]):
    i = pk.global_id(0)
    # The right operands have a side effect (an atomic): it must run only when it decides.
    if i < n and pk.atomic_add(calls, 0, 1) >= 0:
        y[i] = 1
    if i >= n or pk.atomic_add(calls, 1, 1) < 0:
        return
    if x[i] > 0 and (x[i] % 2 == 0 or x[i] % 3 == 0):
        y[i] += 10


@pk.kernel
def geometry(out: Buffer[i32]):
    gx = pk.global_id(0)
    gy = pk.global_id(1)
    gz = pk.global_id(2)
    w = pk.num_groups(0) * pk.local_size(0)
    h = pk.num_groups(1) * pk.local_size(1)
    idx = (gz * h + gy) * w + gx
    out[idx * 4 + 0] = pk.local_id(0) + 10 * pk.local_id(1) + 100 * pk.local_id(2)
    out[idx * 4 + 1] = pk.group_id(0) + 10 * pk.group_id(1) + 100 * pk.group_id(2)
    out[idx * 4 + 2] = pk.local_size(0) + 10 * pk.local_size(1) + 100 * pk.local_size(2)
    out[idx * 4 + 3] = pk.num_groups(0) + 10 * pk.num_groups(1) + 100 * pk.num_groups(2)


@pk.kernel
def local_sort(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i >= n // 4:
        return
    t = pk.local(f32, 4)
    for k in range(4):
        t[k] = x[i * 4 + k]
    for a in range(4):
        for b in range(3 - a):
            if t[b] > t[b + 1]:
                tmp = t[b]
                t[b] = t[b + 1]
                t[b + 1] = tmp
    for k in range(4):
        y[i * 4 + k] = t[k]


@pk.kernel
def wide_index(n: i64, y: Buffer[u32]):
    i = i64(pk.global_id(0))
    if i < n:
        y[i] = u32(i) * u32(2654435761)


@pytest.fixture(scope="module")
def mod():
    return pk.build([branches, loops, short_circuit, geometry, local_sort, wide_index], targets=["llvm"])


def test_if_elif_else_and_early_return(mod):
    n = 1000
    x = RNG.integers(-100, 100, n, dtype=np.int32)
    y = np.full(n + 5, 7, np.int32)
    mod["branches"](n, x, y, grid=(n + 63) // 64 + 1, block=64)
    want = np.where(x < -50, -1, np.where(x < 0, x * 2, np.where(x == 0, 1000, x // 3)))
    np.testing.assert_array_equal(y[:n], want)
    assert (y[n:] == 7).all()  # work-items past n returned before touching anything


def test_for_while_break_continue(mod):
    x = np.concatenate([np.arange(0, 40), RNG.integers(1, 200, 61)]).astype(np.int32)
    y = np.zeros(x.size, np.int32)
    mod["loops"](x.size, x, y, grid=2, block=64)
    np.testing.assert_array_equal(y, loops_reference(x))


def test_land_lor_short_circuit(mod):
    n = 77
    x = RNG.integers(-10, 10, n, dtype=np.int32)
    calls = np.zeros(2, np.int32)
    y = np.zeros(128, np.int32)
    mod["short_circuit"](n, x, calls, y, grid=2, block=64)
    assert calls[0] == n  # rhs of `and` ran only where i < n
    assert calls[1] == n  # rhs of `or` ran only where i >= n was false
    want = 1 + 10 * ((x > 0) & ((x % 2 == 0) | (x % 3 == 0)))
    np.testing.assert_array_equal(y[:n], want)
    assert not y[n:].any()


@pytest.mark.parametrize("grid,block", [((3, 2, 2), (4, 3, 2)), ((1, 1, 1), (5, 1, 1)), ((7, 1, 1), (1, 1, 1)),
                                        ((2, 3, 1), (8, 8, 1))])
def test_launch_geometry_3d(mod, grid, block):
    w, h, d = (g * b for g, b in zip(grid, block))
    out = np.full(w * h * d * 4, -1, np.int32)
    mod["geometry"](out, grid=grid, block=block)
    out = out.reshape(d, h, w, 4)
    z, yy, xx = np.meshgrid(np.arange(d), np.arange(h), np.arange(w), indexing="ij")
    lid = (xx % block[0]) + 10 * (yy % block[1]) + 100 * (z % block[2])
    gid = (xx // block[0]) + 10 * (yy // block[1]) + 100 * (z // block[2])
    np.testing.assert_array_equal(out[..., 0], lid)
    np.testing.assert_array_equal(out[..., 1], gid)
    assert (out[..., 2] == block[0] + 10 * block[1] + 100 * block[2]).all()
    assert (out[..., 3] == grid[0] + 10 * grid[1] + 100 * grid[2]).all()


def test_private_arrays_are_per_work_item(mod):
    n = 4 * 333
    x = RNG.standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    mod["local_sort"](n, x, y, grid=6, block=64)
    np.testing.assert_array_equal(y, np.sort(x.reshape(-1, 4), axis=1).reshape(-1))


def test_i64_indices_and_u32_wraparound(mod):
    n = 1000
    y = np.zeros(n, np.uint32)
    mod["wide_index"](n, y, grid=16, block=64)
    np.testing.assert_array_equal(y, (np.arange(n, dtype=np.uint64) * 2654435761 % 2 ** 32).astype(np.uint32))
