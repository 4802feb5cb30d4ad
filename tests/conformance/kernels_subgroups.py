"""Conformance kernels, part 3: pk.subgroup_* (docs/language.md section 5.1) against NumPy.

The expected values come from the mapping the device reports (every work-item writes its
subgroup_size, subgroup_id and subgroup_local_id), so the checks hold for any subgroup size and any
mapping of work-items to subgroups. Shuffles are checked in full subgroups only (a shuffle from a
lane past a partial subgroup's end is unspecified); reductions and votes in every subgroup.
"""
import numpy as np

import polykern as pk
from polykern import Buffer, f32, f64, i32, i64, u32

from .case import Case

N, BLOCK = 96, 48  # two groups of 48: with 32-lane warps the second warp of a group is partial
SUBGROUPS = frozenset(["subgroups"])


@pk.kernel
def sg_ops(xf: Buffer[f32], xi: Buffer[i32], xu: Buffer[u32], of: Buffer[f32], oi: Buffer[i32],
           ou: Buffer[u32], ids: Buffer[i32]):
    i = pk.global_id(0)
    v = xf[i]
    w = xi[i]
    of[i * 4 + 0] = pk.subgroup_add(v)
    of[i * 4 + 1] = pk.subgroup_min(v) + pk.subgroup_max(v) * 100.0
    of[i * 4 + 2] = pk.subgroup_shuffle(v, pk.subgroup_local_id() + 1)
    of[i * 4 + 3] = pk.subgroup_shuffle_xor(v, 1) + pk.subgroup_broadcast_first(v) * 100.0
    oi[i * 4 + 0] = pk.subgroup_add(w)
    oi[i * 4 + 1] = pk.subgroup_min(w) * 1000 + pk.subgroup_max(w)
    oi[i * 4 + 2] = i32(pk.subgroup_any(w > 8)) + 2 * i32(pk.subgroup_all(w > -9))
    oi[i * 4 + 3] = pk.subgroup_shuffle(w, -1) * 1000 + pk.subgroup_shuffle_xor(w, 2)
    ou[i * 2 + 0] = pk.subgroup_add(xu[i])
    ou[i * 2 + 1] = pk.subgroup_max(xu[i]) - pk.subgroup_min(xu[i])
    ids[i * 3] = pk.subgroup_size()
    ids[i * 3 + 1] = pk.subgroup_id()
    ids[i * 3 + 2] = pk.subgroup_local_id()


@pk.kernel
def sg_loop(x: Buffer[f32], out: Buffer[f32], rounds: i32):
    """Collectives inside a uniform loop, with values carried across them."""
    i = pk.global_id(0)
    acc = 0.0
    v = x[i]
    for r in range(rounds):
        v = pk.subgroup_shuffle_xor(v, r + 1) + 1.0
        acc = acc + pk.subgroup_max(v)
    out[i] = acc


@pk.kernel
def sg_wide(a: Buffer[i64], d: Buffer[f64], oa: Buffer[i64], od: Buffer[f64]):
    i = pk.global_id(0)
    oa[i * 3] = pk.subgroup_add(a[i])
    od[i * 3] = pk.subgroup_add(d[i])
    oa[i * 3 + 1] = pk.subgroup_min(a[i])
    od[i * 3 + 1] = pk.subgroup_max(d[i])
    oa[i * 3 + 2] = pk.subgroup_shuffle_xor(a[i], 1)
    od[i * 3 + 2] = pk.subgroup_shuffle(d[i], pk.subgroup_local_id() + 3)


@pk.kernel
def sg_float_first(o: Buffer[f32], x: Buffer[f32], s: u32):
    """Two float broadcast_first beside another collective: lavapipe's LLVM aborted on this through
    Vulkan and WebGPU (fuzz seed 1000029); a float broadcast_first is now a shuffle from lane 0."""
    g = pk.global_id(0)
    o[g] = pk.subgroup_broadcast_first(x[g]) + pk.subgroup_broadcast_first(x[g] * 2.0) + f32(pk.subgroup_min(s + u32(g)))


def device_subgroups(mod):
    """(subgroup size, {(group, subgroup id): {lane: work-item}}) as the device of ``mod`` reports them."""
    z = np.zeros(4 * N, np.float32)
    ids = np.zeros(3 * N, np.int32)  # separate arrays: one array for two written parameters is refused
    mod["sg_ops"](np.zeros(N, np.float32), np.zeros(N, np.int32), np.zeros(N, np.uint32), z, z.astype(np.int32),
                  np.zeros(2 * N, np.uint32), ids, grid=N // BLOCK, block=BLOCK)
    return groups_of(ids)


def groups_of(ids):
    size, sgid, lane = ids[0::3], ids[1::3], ids[2::3]
    assert (size == size[0]).all() and size[0] in (4, 8, 16, 32, 64, 128), size
    out = {}
    for i in range(N):
        out.setdefault((i // BLOCK, int(sgid[i])), {})[int(lane[i])] = i
    for lanes in out.values():
        assert sorted(lanes) == list(range(len(lanes))), "lanes of a subgroup are 0 .. n-1"
    return int(size[0]), out


def _run_ops(mod, rng):
    xf = (rng.integers(-64, 64, N) / 8).astype(np.float32)  # exact sums in any order
    xi = rng.integers(-10, 11, N).astype(np.int32)
    xu = rng.integers(0, 1 << 31, N).astype(np.uint32)  # sums wrap
    of, oi = np.zeros(4 * N, np.float32), np.zeros(4 * N, np.int32)
    ou, ids = np.zeros(2 * N, np.uint32), np.zeros(3 * N, np.int32)
    mod["sg_ops"](xf, xi, xu, of, oi, ou, ids, grid=N // BLOCK, block=BLOCK)
    size, groups = groups_of(ids)
    of, oi, ou = of.reshape(N, 4), oi.reshape(N, 4), ou.reshape(N, 2)
    for lanes in groups.values():
        mem = [lanes[k] for k in sorted(lanes)]
        full = len(mem) == size
        for k, i in lanes.items():
            assert of[i, 0] == xf[mem].sum()
            assert of[i, 1] == xf[mem].min() + xf[mem].max() * 100
            assert oi[i, 0] == xi[mem].sum()
            assert oi[i, 1] == xi[mem].min() * 1000 + xi[mem].max()
            assert oi[i, 2] == int((xi[mem] > 8).any()) + 2 * int((xi[mem] > -9).all())
            assert ou[i, 0] == np.uint32(xu[mem].astype(np.uint64).sum() % (1 << 32))
            assert ou[i, 1] == xu[mem].max() - xu[mem].min()
            if full:
                assert of[i, 2] == xf[lanes[(k + 1) % size]]
                assert of[i, 3] == xf[lanes[k ^ 1]] + xf[mem[0]] * 100
                assert oi[i, 3] == xi[lanes[size - 1]] * 1000 + xi[lanes[k ^ (2 % size)]]


def _run_loop(mod, rng):
    x = rng.integers(-100, 100, N).astype(np.float32)
    out = np.zeros(N, np.float32)
    mod["sg_loop"](x, out, 3, grid=N // BLOCK, block=BLOCK)
    size, groups = device_subgroups(mod)
    for lanes in groups.values():
        if len(lanes) != size:
            continue
        v = {k: x[i] for k, i in lanes.items()}
        acc = 0.0
        for r in range(3):
            v = {k: v[k ^ ((r + 1) % size)] + 1 for k in v}
            acc += max(v.values())
        for i in lanes.values():
            assert out[i] == acc


def _run_wide(mod, rng):
    a = (np.arange(N, dtype=np.int64) - 40) * (1 << 40)
    d = rng.integers(0, 1000, N) / 4 + 1e10
    oa, od = np.zeros(3 * N, np.int64), np.zeros(3 * N, np.float64)
    mod["sg_wide"](a, d, oa, od, grid=N // BLOCK, block=BLOCK)
    size, groups = device_subgroups(mod)
    oa, od = oa.reshape(N, 3), od.reshape(N, 3)
    for lanes in groups.values():
        mem = [lanes[k] for k in sorted(lanes)]
        for k, i in lanes.items():
            assert oa[i, 0] == a[mem].sum() and od[i, 0] == d[mem].sum()
            assert oa[i, 1] == a[mem].min() and od[i, 1] == d[mem].max()
            if len(mem) == size:
                assert oa[i, 2] == a[lanes[k ^ 1]] and od[i, 2] == d[lanes[(k + 3) % size]]


def _run_float_first(mod, rng):
    x = rng.integers(0, 64, N).astype(np.float32) + 0.5
    o = np.zeros(N, np.float32)
    mod["sg_float_first"](o, x, 5, grid=N // BLOCK, block=BLOCK)
    _, groups = device_subgroups(mod)
    for lanes in groups.values():
        for i in lanes.values():
            assert o[i] == x[lanes[0]] * 3 + 5 + min(lanes.values())


CASES = [
    Case("subgroup_ops", [sg_ops], _run_ops, SUBGROUPS),
    Case("subgroup_loop", [sg_loop, sg_ops], _run_loop, SUBGROUPS),
    Case("subgroup_64bit", [sg_wide, sg_ops], _run_wide, SUBGROUPS | {"i64", "f64"}),
    Case("subgroup_float_broadcasts", [sg_float_first, sg_ops], _run_float_first, SUBGROUPS),
]
