"""Real workgroup semantics on the CPU: shared memory, barrier() (also inside loops and ifs),
values live across barriers, early return before and after barriers."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.passes.barrier_fission import GIf, GLoop, Region, plan_fission
from polykern import registry
from polykern.backends import load_all
from polykern.errors import KernelTypeError
from polykern.ir.verifier import verify
from polykern.lang.frontend import translate
from polykern.passes import run_default_passes
from polykern.target import Target

RNG = np.random.default_rng(11)
TILE = 8


@pk.kernel
def tree_sum(n: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    s = pk.shared(f32, 256)
    t = pk.local_id(0)
    i = pk.global_id(0)
    s[t] = x[i] if i < n else 0.0
    pk.barrier()
    k = pk.local_size(0) // 2
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        pk.barrier()
        k = k // 2
    if t == 0:
        out[pk.group_id(0)] = s[0]


@pk.kernel
def matmul(m: i32, n: i32, kk: i32, a: Buffer[f32, "readonly"], b: Buffer[f32, "readonly"], c: Buffer[f32]):
    ta = pk.shared(f32, TILE * TILE)
    tb = pk.shared(f32, TILE * TILE)
    tx = pk.local_id(0)
    ty = pk.local_id(1)
    col = pk.global_id(0)
    row = pk.global_id(1)
    acc = 0.0
    for t0 in range(0, kk, TILE):
        ta[ty * TILE + tx] = a[row * kk + t0 + tx] if row < m and t0 + tx < kk else 0.0
        tb[ty * TILE + tx] = b[(t0 + ty) * n + col] if col < n and t0 + ty < kk else 0.0
        pk.barrier()
        for q in range(TILE):
            acc += ta[ty * TILE + q] * tb[q * TILE + tx]
        pk.barrier()
    if row < m and col < n:
        c[row * n + col] = acc


@pk.kernel
def hillis_steele(n: i32, x: Buffer[i32, "readonly"], y: Buffer[i32]):
    s = pk.shared(i32, 512)
    lid = pk.local_id(0)
    i = pk.global_id(0)
    s[lid] = x[i] if i < n else 0
    pk.barrier()
    offset = 1
    while offset < pk.local_size(0):
        v = s[lid - offset] if lid >= offset else 0
        pk.barrier()
        s[lid] += v
        pk.barrier()
        offset *= 2
    if i < n:
        y[i] = s[lid]


@pk.kernel
def return_before_barrier(n: i32, x: Buffer[i32, "readonly"], y: Buffer[i32]):
    i = pk.global_id(0)
    if i >= n:
        return  # these work-items never reach the barrier; the others must not wait for them
    s = pk.shared(i32, 64)
    lid = pk.local_id(0)
    mine = x[i] * 3  # lives across the barrier: per work-item
    s[lid] = x[i]
    pk.barrier()
    partner = lid ^ 1
    other = 0
    if pk.group_id(0) * pk.local_size(0) + partner < n:
        other = s[partner]
    y[i] = mine + other


@pk.kernel
def return_after_barrier(x: Buffer[i32, "readonly"], y: Buffer[i32]):
    s = pk.shared(i32, 64)
    lid = pk.local_id(0)
    i = pk.global_id(0)
    s[lid] = x[i]
    pk.barrier()
    y[i] = s[63 - lid]
    if lid % 2 == 1:
        return
    pk.barrier()  # reached by the even work-items only
    s[lid + 1] = -s[lid]
    pk.barrier()
    y[i] += 1000 * s[lid + 1]


@pk.kernel
def loop_controls(rounds: i32, x: Buffer[i32, "readonly"], y: Buffer[i32]):
    s = pk.shared(i32, 32)
    lid = pk.local_id(0)
    i = pk.global_id(0)
    acc = x[i]
    r = 0
    while True:
        r += 1
        if r > rounds:
            break
        if r % 3 == 0:
            continue
        s[lid] = acc
        pk.barrier()
        acc = acc + s[(lid + r) % 32]
        pk.barrier()
    y[i] = acc


def loop_controls_reference(rounds, x):
    y = x.astype(np.int64).reshape(-1, 32)
    for r in range(1, rounds + 1):
        if r % 3 == 0:
            continue
        y = y + np.roll(y, -r, axis=1)
    return (y & 0xFFFFFFFF).astype(np.uint32).view(np.int32).reshape(-1)


@pk.kernel
def uniform_if(flag: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    s = pk.shared(f32, 16)
    lid = pk.local_id(0)
    i = pk.global_id(0)
    tmp = pk.local(f32, 2)
    tmp[0] = x[i]
    tmp[1] = x[i] * 2.0
    if flag > 0:
        s[lid] = tmp[0]
        pk.barrier()
        y[i] = s[15 - lid] + tmp[1]
    else:
        s[15 - lid] = tmp[1]
        pk.barrier()
        y[i] = s[lid] - tmp[0]


@pk.kernel
def carried(steps: i32, y: Buffer[i32]):
    s = pk.shared(i32, 16)
    lid = pk.local_id(0)
    prev = 0
    for k in range(steps):
        if k > 0:
            s[lid] = prev  # prev is written below in the previous iteration of the barrier loop
        else:
            s[lid] = lid
        pk.barrier()
        prev = s[(lid + 1) % 16] + 1
        pk.barrier()
    y[pk.global_id(0)] = prev


@pk.kernel
def stencil_steps(steps: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    a = pk.shared(f32, 66)
    b = pk.shared(f32, 66)
    lid = pk.local_id(0) + 1
    a[lid] = x[pk.global_id(0)]
    if lid == 1:
        a[0] = 0.0
        a[65] = 0.0
        b[0] = 0.0
        b[65] = 0.0
    pk.barrier()
    for st in range(steps):
        for half in range(2):
            if half == 0:
                b[lid] = 0.25 * a[lid - 1] + 0.5 * a[lid] + 0.25 * a[lid + 1]
            else:
                a[lid] = 0.25 * b[lid - 1] + 0.5 * b[lid] + 0.25 * b[lid + 1]
            pk.barrier()
    y[pk.global_id(0)] = a[lid]


@pk.kernel
def cube_sum(out: Buffer[i32]):
    s = pk.shared(i32, 64)
    t = pk.local_id(0) + 4 * (pk.local_id(1) + 4 * pk.local_id(2))
    s[t] = t + 1
    pk.barrier()
    if t == 0:
        total = 0
        for k in range(64):
            total += s[k]
        out[pk.group_id(0)] = total


@pk.kernel
def divergent(y: Buffer[i32]):
    # Not portable (GPUs need barriers in uniform control flow), but defined on the CPU: a barrier
    # waits for the work-items still running in the construct; the others wait at its end.
    s = pk.shared(i32, 32)
    lid = pk.local_id(0)
    s[lid] = 0
    pk.barrier()
    if lid < 16:
        s[lid] = lid + 1
        pk.barrier()
        y[pk.global_id(0)] = s[15 - lid]
    else:
        for k in range(lid - 15):
            if k == 3:
                return
            s[lid] += 1
            pk.barrier()
        y[pk.global_id(0)] = -s[lid]


# These three reach a barrier in non-uniform control flow (after an early return that only some
# work-items take, or inside a divergent if/loop): the language refuses them (polykern.passes.uniformity),
# but the CPU backend still defines them for IR that reaches it, which these tests keep checking.
DIVERGENT = (return_before_barrier, return_after_barrier, divergent)


def unchecked_ir(k):
    return translate(k.pyfunc, check_barriers=False)


@pytest.fixture(scope="module")
def mod():
    root = pk.build([tree_sum, matmul, hillis_steele, loop_controls, uniform_if, carried, stencil_steps,
                     cube_sum], targets=["llvm"])
    load_all()
    divergent_mod = registry.get("target.build.llvm")([run_default_passes(unchecked_ir(k)) for k in DIVERGENT],
                                                      Target("llvm"))

    class Both:
        def __getitem__(self, name):
            return (divergent_mod if name in divergent_mod.functions else root)[name]

    return Both()


@pytest.mark.parametrize("k", DIVERGENT, ids=[k.name for k in DIVERGENT])
def test_the_language_refuses_divergent_barriers(k):
    with pytest.raises(KernelTypeError, match="barrier\\(\\) is reached only by some work-items"):
        pk.build([k], targets=["llvm"])


@pytest.mark.parametrize("n,block", [(256 * 40, 256), (1000, 128), (5, 64), (4097, 32)])
def test_shared_memory_tree_reduction(mod, n, block):
    x = RNG.integers(-50, 50, n).astype(np.float32)  # integer values: exact sums
    groups = (n + block - 1) // block
    out = np.zeros(groups, np.float32)
    mod["tree_sum"](n, x, out, grid=groups, block=block)
    np.testing.assert_array_equal(out, np.pad(x, (0, groups * block - n)).reshape(groups, block).sum(1))


@pytest.mark.parametrize("m,n,k", [(16, 16, 16), (45, 29, 37), (1, 9, 70)])
def test_tiled_matmul_barrier_inside_for(mod, m, n, k):
    a = RNG.integers(-4, 5, (m, k)).astype(np.float32)
    b = RNG.integers(-4, 5, (k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    mod["matmul"](m, n, k, a, b, c, grid=((n + TILE - 1) // TILE, (m + TILE - 1) // TILE), block=(TILE, TILE))
    np.testing.assert_array_equal(c, a @ b)


@pytest.mark.parametrize("n,block", [(512, 512), (1000, 256), (777, 96), (3, 1)])
def test_hillis_steele_scan_two_barriers_per_step(mod, n, block):
    x = RNG.integers(-100, 100, n, dtype=np.int32)
    y = np.zeros(n, np.int32)
    groups = (n + block - 1) // block
    mod["hillis_steele"](n, x, y, grid=groups, block=block)
    want = np.concatenate([np.cumsum(c) for c in np.array_split(x, range(block, n, block))])
    np.testing.assert_array_equal(y, want)


def test_early_return_before_barrier(mod):
    n = 100  # second group: 36 of 64 work-items return first
    x = np.arange(1, n + 1, dtype=np.int32)
    y = np.zeros(128, np.int32)
    mod["return_before_barrier"](n, x, y, grid=2, block=64)
    idx = np.arange(n)
    partner = idx ^ 1
    other = np.where(partner < n, x[np.minimum(partner, n - 1)], 0)
    np.testing.assert_array_equal(y[:n], x * 3 + other)
    assert not y[n:].any()


def test_early_return_after_barrier(mod):
    x = RNG.integers(0, 100, 128, dtype=np.int32)
    y = np.zeros(128, np.int32)
    mod["return_after_barrier"](x, y, grid=2, block=64)
    g = x.reshape(2, 64)
    want = g[:, ::-1].copy()
    want[:, 0::2] += 1000 * -g[:, 0::2]
    np.testing.assert_array_equal(y, want.reshape(-1))


@pytest.mark.parametrize("rounds", [0, 1, 5])
def test_barrier_loop_with_break_and_continue(mod, rounds):
    x = RNG.integers(-1000, 1000, 96, dtype=np.int32)
    y = np.zeros(96, np.int32)
    mod["loop_controls"](rounds, x, y, grid=3, block=32)
    np.testing.assert_array_equal(y, loop_controls_reference(rounds, x))


@pytest.mark.parametrize("flag", [1, 0])
def test_barrier_in_uniform_if_else(mod, flag):
    x = RNG.standard_normal(48).astype(np.float32)
    y = np.zeros(48, np.float32)
    mod["uniform_if"](flag, x, y, grid=3, block=16)
    g = x.reshape(3, 16)
    want = g[:, ::-1] + 2 * g if flag else 2 * g[:, ::-1] - g
    np.testing.assert_allclose(y, want.reshape(-1), rtol=1e-6)


@pytest.mark.parametrize("steps", [1, 2, 5])
def test_value_carried_across_barrier_loop_iterations(mod, steps):
    y = np.zeros(32, np.int32)
    mod["carried"](steps, y, grid=2, block=16)
    prev = np.arange(16)
    for _ in range(steps):
        prev = np.roll(prev, -1) + 1
    np.testing.assert_array_equal(y, np.tile(prev, 2))


def test_nested_barrier_loops(mod):
    steps = 3
    x = RNG.standard_normal(128).astype(np.float32)
    y = np.zeros(128, np.float32)
    mod["stencil_steps"](steps, x, y, grid=2, block=64)
    want = []
    for g in x.reshape(2, 64):
        a = np.pad(g.astype(np.float64), 1)
        for _ in range(2 * steps):
            a[1:-1] = 0.25 * a[:-2] + 0.5 * a[1:-1] + 0.25 * a[2:]
        want.append(a[1:-1])
    np.testing.assert_allclose(y, np.concatenate(want), rtol=1e-5, atol=1e-6)


def test_three_dimensional_blocks(mod):
    out = np.zeros(6, np.int32)
    mod["cube_sum"](out, grid=6, block=(4, 4, 4))
    assert (out == 64 * 65 // 2).all()


def test_divergent_barriers_are_defined_on_the_cpu(mod):
    y = np.full(64, 99, np.int32)
    mod["divergent"](y, grid=2, block=32)
    lid = np.arange(32)
    want = np.where(lid < 16, 16 - lid, np.where(lid - 15 <= 3, -(lid - 15), 99))
    np.testing.assert_array_equal(y, np.tile(want, 2))


def test_plan_keeps_only_needed_values_per_work_item():
    """Values live across a barrier are per work-item; temporaries of one region stay scalars
    (LLVM keeps them in registers)."""
    fn = run_default_passes(unchecked_ir(return_before_barrier))
    plan = plan_fission(fn)
    assert [type(n) for n in plan.nodes] == [Region, Region]
    assert "mine" in plan.per_item_vars
    assert "other" not in plan.per_item_vars and "partner" not in plan.per_item_vars
    fn = run_default_passes(verify(carried.ir))
    plan = plan_fission(fn)
    assert any(isinstance(n, GLoop) for n in plan.nodes)
    assert "prev" in plan.per_item_vars
    fn = run_default_passes(verify(uniform_if.ir))
    plan = plan_fission(fn)
    assert any(isinstance(n, GIf) for n in plan.nodes)
    assert "tmp" in plan.per_item_arrays
