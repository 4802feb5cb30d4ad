"""The CPU work-item loops' optimizations keep SIMT semantics: guard range splitting (rows split
where bounds checks change value, fast guard-free copies, skipped idle work-items), uniform
values and constructs in barrier kernels, rematerialized ids, parallel access groups, and the
zero start of every local in every work-item. Each kernel runs for many launch shapes, including
partial rows and groups, against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32, u32
from polykern.passes.barrier_fission import GLoop, Uniform, plan_fission, plan_row_guards
from polykern.ir.verifier import verify
from polykern.passes import run_default_passes

RNG = np.random.default_rng(21)


@pk.kernel
def guarded_axpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@pk.kernel
def early_return_2d(h: i32, w: i32, src: Buffer[f32, "readonly"], dst: Buffer[f32]):
    x = pk.global_id(0)
    y = pk.global_id(1)
    if x >= w or y >= h:
        return
    i = y * w + x
    if x == 0 or y == 0 or x == w - 1 or y == h - 1:
        dst[i] = -1.0
        return
    dst[i] = src[i - 1] + src[i + 1] + src[i - w] + src[i + w]


@pk.kernel
def offset_window(n: i32, off: i32, lo: i32, y: Buffer[i32]):
    # integer sums in the guards (checked not to wrap), a decreasing form (u > m) and an else branch
    i = pk.global_id(0)
    if i + off < n and lo < i:
        y[i] = i + off
    else:
        y[i] = -7


@pk.kernel
def float_guard(n: i32, t: f32, y: Buffer[f32]):
    i = pk.global_id(0)
    xf = f32(i) - 0.5
    if i < n and not (xf >= t):
        y[i] = xf


@pk.kernel
def local_ids_3d(y: Buffer[i32]):
    t = pk.local_id(0) + pk.local_size(0) * (pk.local_id(1) + pk.local_size(1) * pk.local_id(2))
    g = pk.group_id(0) + pk.num_groups(0) * (pk.group_id(1) + pk.num_groups(1) * pk.group_id(2))
    n = pk.local_size(0) * pk.local_size(1) * pk.local_size(2)
    if pk.local_id(0) != 1:
        y[g * n + t] = 1000 * pk.local_id(2) + 100 * pk.local_id(1) + pk.local_id(0)


@pk.kernel
def zero_start(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    tmp = pk.local(f32, 4)
    if i % 3 == 0:
        v = 5.0
        tmp[1] = 2.0
    if i < n:
        y[i] = v + tmp[1]  # reads zero in the work-items that did not assign


@pk.kernel
def zero_start_barrier(y: Buffer[f32]):
    s = pk.shared(f32, 64)
    lid = pk.local_id(0)
    tmp = pk.local(f32, 2)
    if lid % 2 == 0:
        v = 3.0
        tmp[0] = 1.0
    s[lid] = v + tmp[0]
    pk.barrier()
    y[pk.global_id(0)] = s[(lid + 1) % pk.local_size(0)] + v


@pk.kernel
def uniform_order(steps: i32, y: Buffer[i32]):
    # a work-item statement that reads a uniform value before it is updated in the same region
    s = pk.shared(i32, 64)
    lid = pk.local_id(0)
    step = 1
    acc = 0
    for k in range(steps):
        s[lid] = lid * step
        pk.barrier()
        acc += s[(lid + step) % pk.local_size(0)] + step
        step = step * 2 + k
        pk.barrier()
    y[pk.global_id(0)] = acc


def uniform_order_reference(steps, groups, block):
    lid = np.arange(block)
    acc = np.zeros(block, np.int64)
    step = 1
    for k in range(steps):
        s = lid * step
        acc += s[(lid + step) % block] + step
        step = step * 2 + k
    return np.tile(acc, groups)


@pk.kernel
def divergent_assign(y: Buffer[i32]):
    # 'k' is assigned in per-work-item control flow: not uniform, even though its value is
    s = pk.shared(i32, 32)
    lid = pk.local_id(0)
    k = 0
    if lid < 8:
        k = 3
    s[lid] = k
    pk.barrier()
    y[pk.global_id(0)] = s[31 - lid] + k


@pk.kernel
def tree(n: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    s = pk.shared(f32, 256)
    lid = pk.local_id(0)
    i = pk.global_id(0)
    s[lid] = x[i] if i < n else 0.0
    pk.barrier()
    step = pk.local_size(0) // 2
    while step > 0:
        if lid < step:
            s[lid] += s[lid + step]
        pk.barrier()
        step //= 2
    if lid == 0:
        out[pk.group_id(0)] = s[0]


@pk.kernel
def histo(n: i32, x: Buffer[i32, "readonly"], hist: Buffer[u32]):
    i = pk.global_id(0)
    if i < n:
        pk.atomic_add(hist, x[i] % 8, u32(1))


KERNELS = [guarded_axpy, early_return_2d, offset_window, float_guard, local_ids_3d, zero_start,
           zero_start_barrier, uniform_order, divergent_assign, tree, histo]


@pytest.fixture(scope="module", params=["llvm", "llvm -mcpu=native"])
def mod(request):
    return pk.build(KERNELS, targets=[request.param])


@pytest.mark.parametrize("n,block", [(1, 1), (5, 4), (255, 256), (256, 256), (1000, 64), (4099, 128), (70, 7)])
def test_guarded_axpy_partial_groups(mod, n, block):
    grid = (n + block - 1) // block + 1  # one extra, fully out-of-range group
    x = RNG.standard_normal(grid * block).astype(np.float32)
    y = RNG.standard_normal(grid * block).astype(np.float32)
    want = y.copy()
    want[:n] = np.float32(1.5) * x[:n] + y[:n]
    mod["guarded_axpy"](n, 1.5, x, y, grid=grid, block=block)
    np.testing.assert_allclose(y, want, rtol=1e-6)


@pytest.mark.parametrize("h,w,block", [(7, 9, (4, 4)), (33, 17, (16, 16)), (16, 16, (16, 16)), (5, 40, (8, 2)),
                                       (3, 3, (1, 1)), (20, 70, (32, 3))])
def test_early_return_and_edges_2d(mod, h, w, block):
    src = RNG.random((h, w), dtype=np.float32)
    gx, gy = (w + block[0] - 1) // block[0], (h + block[1] - 1) // block[1]
    dst = np.full(h * w + 8, 9.0, np.float32)
    mod["early_return_2d"](h, w, src, dst, grid=(gx, gy), block=block)
    want = np.full((h, w), -1.0, np.float32)
    if h > 2 and w > 2:
        want[1:-1, 1:-1] = src[1:-1, :-2] + src[1:-1, 2:] + src[:-2, 1:-1] + src[2:, 1:-1]
    np.testing.assert_allclose(dst[:h * w].reshape(h, w), want, rtol=1e-6)
    assert (dst[h * w:] == 9.0).all()


@pytest.mark.parametrize("n,off,lo", [(1000, 3, 10), (1000, -20, -5), (500, 0, 499), (300, 2 ** 31 - 200, 0),
                                      (300, -2 ** 31 + 5, 0), (64, 0, -1)])
def test_integer_sum_guards_even_where_they_wrap(mod, n, off, lo):
    block, grid = 64, 6
    y = np.zeros(grid * block, np.int32)
    mod["offset_window"](n, off, lo, y, grid=grid, block=block)
    i = np.arange(grid * block, dtype=np.int64)
    s = ((i + off + 2 ** 31) % 2 ** 32 - 2 ** 31)  # i32 wrap-around, as the kernel computes it
    want = np.where((s < n) & (lo < i), s, -7)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("n,t", [(300, 100.0), (300, -1.0), (300, float("nan")), (50, 1e9)])
def test_float_monotone_guard(mod, n, t):
    block, grid = 32, 10
    y = np.full(grid * block, 3.0, np.float32)
    mod["float_guard"](n, t, y, grid=grid, block=block)
    i = np.arange(grid * block)
    xf = i.astype(np.float32) - np.float32(0.5)
    want = np.where((i < n) & ~(xf >= np.float32(t)), xf, np.float32(3.0))
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("block", [(4, 3, 2), (1, 5, 3), (7, 1, 1), (3, 3, 3)])
def test_rows_of_three_dimensional_blocks(mod, block):
    grid = (2, 3, 1)
    n = int(np.prod(block))
    y = np.full(6 * n, -1, np.int32)
    mod["local_ids_3d"](y, grid=grid, block=block)
    lz, ly, lx = np.meshgrid(*(np.arange(b) for b in reversed(block)), indexing="ij")
    want = np.where(lx != 1, 1000 * lz + 100 * ly + lx, -1).reshape(-1)
    np.testing.assert_array_equal(y, np.tile(want, 6))


def test_locals_start_at_zero_in_every_work_item(mod):
    n = 100
    y = np.full(128, 9.0, np.float32)
    mod["zero_start"](n, y, grid=2, block=64)
    i = np.arange(n)
    np.testing.assert_array_equal(y[:n], np.where(i % 3 == 0, 7.0, 0.0))
    y = np.zeros(128, np.float32)
    mod["zero_start_barrier"](y, grid=2, block=64)
    lid = np.arange(64)
    s = np.where(lid % 2 == 0, 4.0, 0.0)
    np.testing.assert_array_equal(y, np.tile(s[(lid + 1) % 64] + np.where(lid % 2 == 0, 3.0, 0.0), 2))


@pytest.mark.parametrize("steps", [0, 1, 4])
def test_uniform_update_after_a_read_in_the_same_region(mod, steps):
    y = np.zeros(128, np.int32)
    mod["uniform_order"](steps, y, grid=2, block=64)
    np.testing.assert_array_equal(y, uniform_order_reference(steps, 2, 64))


def test_value_assigned_in_divergent_code_is_per_work_item(mod):
    y = np.zeros(64, np.int32)
    mod["divergent_assign"](y, grid=2, block=32)
    lid = np.arange(32)
    k = np.where(lid < 8, 3, 0)
    np.testing.assert_array_equal(y, np.tile(k[31 - lid] + k, 2))


@pytest.mark.parametrize("n,block", [(256 * 33, 256), (1000, 128), (3, 4), (4096 + 7, 64)])
def test_tree_reduction_skips_idle_work_items_correctly(mod, n, block):
    x = RNG.integers(-8, 8, n).astype(np.float32)
    groups = (n + block - 1) // block
    out = np.zeros(groups, np.float32)
    mod["tree"](n, x, out, grid=groups, block=block)
    np.testing.assert_array_equal(out, np.pad(x, (0, groups * block - n)).reshape(groups, block).sum(1))


def test_atomics_in_a_parallel_loop(mod):
    n = 100_003
    x = RNG.integers(0, 1000, n, dtype=np.int32)
    hist = np.zeros(8, np.uint32)
    mod["histo"](n, x, hist, grid=(n + 255) // 256, block=256)
    np.testing.assert_array_equal(hist, np.bincount(x % 8, minlength=8))


def _fn(k):
    return run_default_passes(verify(k.ir))


def test_plans():
    p = plan_fission(_fn(tree))
    assert not p.needs_state  # no return, no divergent barrier construct: no state words
    assert "step" in p.uniform_vars and "lid" in p.remat and not p.per_item_vars
    assert any(isinstance(n, GLoop) and n.uniform for n in p.nodes)
    assert any(isinstance(n, Uniform) for n in p.nodes)
    p = plan_fission(_fn(divergent_assign))
    assert "k" not in p.uniform_vars and "k" in p.per_item_vars
    fn = _fn(guarded_axpy)
    rg = plan_row_guards(fn, fn.body)
    assert rg is not None and rg.skip and len(rg.guards) == 1 and not rg.wraps
    fn = _fn(offset_window)
    rg = plan_row_guards(fn, fn.body)
    assert rg is not None and rg.wraps and not rg.skip
    fn = _fn(early_return_2d)
    rg = plan_row_guards(fn, fn.body)
    assert rg is not None and rg.skip and len(rg.guards) == 2 and not rg.row_dependent


def test_fast_rows_are_vectorized_and_parallel():
    ll = pk.build([guarded_axpy], targets=["llvm"]).on("llvm").inspect_source("ll")
    assert "<4 x float>" in ll  # SSE2 (-mcpu=generic) vectors in the guard-free copy
    assert "llvm.loop.parallel_accesses" in ll and "llvm.access.group" in ll
    assert "@__extendhfsf2" not in ll  # f16 helpers only in modules that use f16


def test_lazy_assembly_matches_an_eager_compile():
    from polykern.codegen.llvm_target import compile_ir, data_layout, target_machine
    from polykern_llvm.codegen import CPUEmitter, resolve
    from polykern.target import Target

    m = pk.build([tree], targets=["llvm"]).on("llvm")
    triple, cpu, feats, opt = resolve(Target("llvm"))
    tm = target_machine(triple, cpu, feats, opt)
    em = CPUEmitter(triple, data_layout(tm)).emit([_fn(tree)])
    eager = compile_ir(em.render(), triple, cpu, feats, opt, tm=tm, disable_lsr=triple.startswith("x86_64"))
    assert eager.obj == m.payload
    assert m.inspect_source("asm") == eager.asm and m.inspect_source("ll") == eager.ll
