"""Hopper's matrix path on the IR interpreter (docs/language.md 5.3; polykern/interpreter/hopper.py):
the warp-specialized GEMM of examples/gemm_hopper.py exactly as ir.hopper.reference_wgmma defines it, and
every rule of the section refused with its OracleError."""
import os
import sys

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, bf16, f16, f32, i32
from polykern.ir.bfloat16 import bits_to_f32
from polykern.ir.hopper import reference_wgmma
from polykern.testing.interp import OracleError, interpret

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import gemm_hopper as G  # noqa: E402


def _gemm_reference(a, b, BN):
    """C as the language defines it: per 64-row half and BN columns, wgmma of 16-wide K slices in k order."""
    M, K = a.shape
    N = b.shape[0]
    c = np.zeros((M, N), np.float16)
    for m in range(0, M, 64):
        for n in range(0, N, BN):
            acc = np.zeros((64, BN), np.float32)
            for k in range(0, K, 16):
                acc = reference_wgmma(acc, a[m:m + 64, k:k + 16], b[n:n + BN, k:k + 16])
            c[m:m + 64, n:n + BN] = acc.astype(np.float16)
    return c


@pytest.mark.parametrize("dtype", [f16, bf16])
def test_gemm_example_is_exactly_the_reference(dtype):
    a, b, c = G.run_on_cpu(M=128, N=128, K=256, BN=64, STAGES=2, dtype=dtype)
    if dtype == bf16:
        a, b = bits_to_f32(a), bits_to_f32(b)
    want = _gemm_reference(a.astype(np.float64), b.astype(np.float64), 64)
    assert c.shape == want.shape and np.array_equal(c, want)
    assert np.abs(want).max() > 1  # not a trivially zero product


@pytest.mark.parametrize("inflight", [0, 1])
def test_persistent_gemm_is_exactly_the_reference(inflight):
    """Three blocks over four tiles: one block walks two, its ring's barrier phases running on across them."""
    rng = np.random.default_rng(3)
    M, N, K, BN = 256, 128, 192, 64
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (N, K)).astype(np.float16)
    out = interpret(G.make_gemm_persistent(BN, 2, INFLIGHT=inflight),
                    [M, N, K, a.reshape(-1), b.reshape(-1), np.zeros(M * N, np.float16), G.shared_elems(BN, 2)],
                    (3, 1), 384)
    want = _gemm_reference(a.astype(np.float64), b.astype(np.float64), BN)
    assert np.array_equal(out.buffers["C"].reshape(M, N), want)


def test_gemm_results_carry_the_mma_tag():
    """A device may sum a wgmma in another order: stored results are marked inexact like an mma's."""
    a = np.ones((128, 64), np.float16).reshape(-1)
    b = np.ones((64, 64), np.float16).reshape(-1)
    out = interpret(G.make_gemm(64, 2), [128, 64, 64, a, b, np.zeros(128 * 64, np.float16), G.shared_elems(64, 2)],
                    (1, 1), 384)
    assert (out.buffers["C"] == 64).all()
    assert all(t is not None and ("mma", "f32") in t[1] for t in out.taint["C"])


# ------------------------------------------------------------------ one warpgroup, one wgmma
@pk.kernel
def one_mma(M: i32, K: i32, a_off: i32, b_off: i32, mode: i32, A: Buffer[f16, "readonly"], C: Buffer[f32]):
    """mode 0: correct; 1: no mbarrier_wait; 2: no wgmma_wait; 3: no commit; 4: operands differ between
    work-items; 5: a copy overwrites the operands while the wgmma is pending; 6: the accumulator is
    refilled while the wgmma is pending."""
    pk.warpgroups(1)
    ta = pk.tensor_map(A, (M, K), (128, 64), "128B")
    tiles = pk.shared(f16, 12288)
    bars = pk.mbarriers(1)
    acc = pk.wg_acc(f32, 64, 64)
    lid = pk.local_id(0)
    if lid == 0:
        pk.mbarrier_init(bars, 0, 1)
    pk.barrier()
    if lid == 0:
        pk.mbarrier_arrive_tx(bars, 0, 128 * 64 * 2)
        pk.tma_load(tiles, 0, ta, 0, 0, bars, 0)
    if mode != 1:
        pk.mbarrier_wait(bars, 0, 0)
    pk.wg_fill(acc, 0.0)
    if mode == 4:
        pk.wgmma(acc, tiles, a_off + (lid // 64) * 16, tiles, b_off)
    else:
        pk.wgmma(acc, tiles, a_off, tiles, b_off)
    if mode != 3:
        pk.wgmma_commit()
    if mode == 5 and lid == 0:
        pk.tma_load(tiles, 0, ta, 0, 0, bars, 0)
    if mode == 6:
        pk.wg_fill(acc, 1.0)
    if mode != 2:
        pk.wgmma_wait(0)
    pk.wg_store(C, 0, 64, acc)


def _one(mode=0, a_off=0, b_off=0, block=128, M=128, K=64, n=8192, c_len=4096):
    a = (np.arange(n) % 7 - 3).astype(np.float16)
    return a, interpret(one_mma, [M, K, a_off, b_off, mode, a, np.zeros(c_len, np.float32)], 1, block)


def test_one_wgmma_is_the_reference():
    a, out = _one(a_off=16, b_off=512 + 32)
    tile = a.astype(np.float64).reshape(128, 64)
    want = reference_wgmma(np.zeros((64, 64), np.float32), tile[:64, 16:32], tile[8:72, 32:48])
    assert np.array_equal(out.buffers["C"].reshape(64, 64), want) and np.abs(want).max() > 1


@pytest.mark.parametrize("kw, msg", [
    (dict(a_off=8), r"the A operand starts at element 8: a wgmma operand starts at row r"),  # checked at run time
    (dict(b_off=64), r"the B operand starts at element 64: "),
    (dict(b_off=8192), r"reads tiles\[8192\], which nothing has written"),  # past the copied 128 x 64 tile
    (dict(b_off=11776), r"the wgmma B operand at tiles\[11776\] reads up to element 15823, out of bounds \(12288 "
                        r"elements\)"),
    (dict(mode=1), r"tiles\[0\] read by wgmma \(A operand\) of warpgroup 0 before the tensor copy into it "
                   r"\(pk.tma_load at .*\) is known to have landed: the copy completes phase 0 of barrier bars\[0\]"),
    (dict(mode=2), r"pk.wg_store reads accumulator 'acc' of warpgroup 0 while a wgmma into it is pending"),
    (dict(mode=3), r"pk.wg_store reads accumulator 'acc' of warpgroup 0 while a wgmma into it is pending"),  # no commit
    (dict(mode=6), r"pk.wg_fill overwrites accumulator 'acc' of warpgroup 0 while a wgmma into it is pending"),
    (dict(mode=4), r"the operands of pk.wgmma differ within warpgroup 0 \(\(0, 0\) in work-item 0, \(16, 0\) in "
                   r"work-item 64\)"),
    (dict(mode=5), r"a tensor copy overwrites tiles\[0\] while a wgmma that reads it is pending"),
    (dict(block=64), r"declares pk.warpgroups\(1\): its blocks have exactly 128 work-items, got 64"),
    (dict(M=129), r"tensor map 'ta' views 'A' \(8192 elements\) as 129 x 64"),
    (dict(c_len=4095), r"pk.wg_store writes C\[4095\], out of bounds \(4095 elements; offset 0, ld 64, 64 x 64\)"),
], ids=["a_offset", "b_offset", "unwritten", "out_of_bounds", "not_landed", "no_wait", "no_commit", "refill",
        "non_uniform", "copy_over_pending", "block", "map_too_big", "store_out_of_bounds"])
def test_warpgroup_mma_rules(kw, msg):
    with pytest.raises(OracleError, match=msg):
        _one(**kw)


@pk.kernel
def divergent_wg(C: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 8)
    if pk.local_id(0) < 100:
        pk.wg_fill(acc, 1.0)
        pk.wg_store(C, 0, 8, acc)


def test_warpgroup_op_in_divergent_control_flow_is_refused():
    with pytest.raises(OracleError, match=r"work-items 0\.\.99 of warpgroup 0 reached a warpgroup operation that "
                                          r"work-items 100\.\.127 finished without"):
        interpret(divergent_wg, [np.zeros(512, np.float32)], 1, 128)


# ------------------------------------------------------------------ transaction barriers
@pk.kernel
def bar_rules(mode: i32, out: Buffer[i32]):
    """mode 0: the phase semantics below; 1: two work-items init; 2: a wait before any init; 3: used
    in the interval of the init; 4: an arrival more than the count; 5: a wait that never completes;
    6: work-item 0 waits forever while the others are at a pk.barrier(); 7: the same at a subgroup collective."""
    bars = pk.mbarriers(2)
    lid = pk.local_id(0)
    if mode == 2:
        pk.mbarrier_wait(bars, 1, 0)
    if lid == 0 or (mode == 1 and lid == 1):
        pk.mbarrier_init(bars, 0, 1)
    if mode == 3 and lid == 1:
        pk.mbarrier_arrive(bars, 0)
    pk.barrier()
    pk.mbarrier_wait(bars, 0, 1)  # a fresh barrier's parity-1 phase counts as complete
    out[lid] = 1
    pk.barrier()  # else work-item 0 could complete phase 0 first: the others' parity-1 waits would hang
    if mode == 4 and lid == 0:
        pk.mbarrier_arrive_tx(bars, 0, 100)  # the one arrival; 100 bytes still pending
        pk.mbarrier_arrive(bars, 0)
    if mode == 5:
        pk.mbarrier_wait(bars, 0, 0)
    if mode == 6:
        if lid == 0:
            pk.mbarrier_wait(bars, 0, 0)
        pk.barrier()
    if mode == 7:
        if lid == 0:
            pk.mbarrier_wait(bars, 0, 0)
        v = pk.subgroup_add(lid)  # the arrival that would release work-item 0 comes after it
        if lid == 1:
            pk.mbarrier_arrive(bars, 0)
        out[lid] = v
    if lid == 0:
        pk.mbarrier_arrive(bars, 0)  # completes phase 0: the phase bit is 1
    pk.mbarrier_wait(bars, 0, 0)
    out[64 + lid] = 2


def _bars(mode):
    return interpret(bar_rules, [mode, np.zeros(128, np.int32)], 1, 64).buffers["out"]


def test_phase_parity():
    assert (_bars(0) == np.repeat([1, 2], 64)).all()


@pytest.mark.parametrize("mode, msg", [
    (1, r"barrier bars\[0\] initialized again by work-item 1 \(work-item 0 initialized it at .*\): one work-item "
        "initializes it, once"),
    (2, r"barrier bars\[1\] used by work-item 0 before pk.mbarrier_init"),
    (3, r"barrier bars\[0\] used by work-item 1 in the barrier interval in which work-item 0 initialized it"),
    (4, r"work-item 0 arrives on barrier bars\[0\] when no arrival is pending \(phase bit 0, 0 of 1 arrivals and "
        "100 transaction bytes pending\\)"),
    (5, r"deadlock: no work-item of the group can proceed \(the kernel hangs on a GPU\): work-items 0\.\.63 wait at "
        r"pk.mbarrier_wait\(bars, 0, 0\) at .*\(bars\[0\]: phase bit 0, 1 of 1 arrivals and 0 transaction bytes "
        r"pending\)"),
    (6, r"deadlock: .*work-item 0 waits at pk.mbarrier_wait\(bars, 0, 0\) .*; work-items 1\.\.63 wait at "
        r"pk.barrier\(\) at "),
    (7, r"deadlock: .*work-item 0 waits at pk.mbarrier_wait\(bars, 0, 0\) .*; work-items 1\.\.63 wait at the "
        r"subgroup operation at .*test_hopper_interp"),
])
def test_barrier_rules(mode, msg):
    with pytest.raises(OracleError, match=msg):
        _bars(mode)


# ------------------------------------------------------------------ tensor copies: zero fill, early bytes
@pk.kernel
def box_copy(M: i32, K: i32, row: i32, col: i32, off: i32, wait: i32, X: Buffer[f32, "readonly"], out: Buffer[f32]):
    tx = pk.tensor_map(X, (M, K), (4, 8), "none")
    tile = pk.shared(f32, 64)
    bars = pk.mbarriers(1)
    lid = pk.local_id(0)
    if lid == 0:
        pk.mbarrier_init(bars, 0, 1)
    pk.barrier()
    if lid == 0:
        pk.tma_load(tile, off, tx, row, col, bars, 0)  # lands before the arrival that expects it
        pk.mbarrier_arrive_tx(bars, 0, 4 * 8 * 4)
    if wait != 0:
        pk.mbarrier_wait(bars, 0, 0)
    out[lid] = tile[off + lid]


def _box(row, col, off=0, wait=1, M=6, K=12):
    x = np.arange(1, 73, dtype=np.float32)
    return interpret(box_copy, [M, K, row, col, off, wait, x, np.zeros(32, np.float32)], 1, 32).buffers["out"]


@pytest.mark.parametrize("row, col", [(0, 0), (4, 8), (-2, -4), (5, 11), (6, 0), (-4, 0)])
def test_tensor_copy_fills_zero_outside_the_matrix(row, col):
    x = np.arange(1, 73, dtype=np.float64).reshape(6, 12)
    want = np.zeros((4, 8))
    for r in range(4):
        for c in range(8):
            if 0 <= row + r < 6 and 0 <= col + c < 12:
                want[r, c] = x[row + r, col + c]
    assert np.array_equal(_box(row, col), want.reshape(-1))


def test_plain_read_of_a_copy_needs_its_phase():
    """A plain load of a tensor copy's element (exempt from the race checks: the copy engine wrote it) is
    refused until the reader waited for the phase the copy completed."""
    with pytest.raises(OracleError, match=r"tile\[0\] read by work-item 0 before the tensor copy into it"):
        _box(0, 0, wait=0)


def test_tensor_copy_destination_rules():
    with pytest.raises(OracleError, match=r"a tensor copy lands at element 8 \(32 bytes\): it must start at a "
                                          "multiple of 128 bytes"):
        _box(0, 0, off=8)
    with pytest.raises(OracleError, match=r"the 4 x 8 box lands at tile\[64\] \.\. \[95\], out of bounds"):
        _box(0, 0, off=64)


@pk.kernel
def ring_reuse(X: Buffer[f32, "readonly"], out: Buffer[f32]):
    """A one-stage ring read with plain loads: the second copy reuses the tile once every reader released it
    (no pk.barrier() orders the copies and the reads: the transaction barriers do)."""
    tx = pk.tensor_map(X, (8, 8), (4, 8), "none")
    tile = pk.shared(f32, 32)
    full = pk.mbarriers(1)
    empty = pk.mbarriers(1)
    lid = pk.local_id(0)
    if lid == 0:
        pk.mbarrier_init(full, 0, 1)
        pk.mbarrier_init(empty, 0, 32)
    pk.barrier()
    if lid == 0:
        pk.mbarrier_arrive_tx(full, 0, 128)
        pk.tma_load(tile, 0, tx, 0, 0, full, 0)
    pk.mbarrier_wait(full, 0, 0)
    out[lid] = tile[(lid + 1) % 32]  # another work-item's element
    pk.mbarrier_arrive(empty, 0)
    if lid == 0:
        pk.mbarrier_wait(empty, 0, 0)
        pk.mbarrier_arrive_tx(full, 0, 128)
        pk.tma_load(tile, 0, tx, 4, 0, full, 0)
    pk.mbarrier_wait(full, 0, 1)
    tile[lid] = tile[lid] * 2.0  # a plain write after the second copy: the first copy's readers do not race
    out[32 + lid] = tile[lid]


def test_ring_reuse_with_plain_reads():
    x = np.arange(64, dtype=np.float32)
    out = interpret(ring_reuse, [x, np.zeros(64, np.float32)], 1, 32).buffers["out"]
    assert np.array_equal(out, np.concatenate([np.roll(x[:32], -1), 2 * x[32:]]))



def test_example_runs_on_the_cpu_and_writes_its_cuda_c(tmp_path):
    import subprocess

    env = dict(os.environ, TMPDIR=str(tmp_path))
    run = subprocess.run([sys.executable, os.path.join(os.path.dirname(G.__file__), "gemm_hopper.py")], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "-> ok" in run.stdout
    src = (tmp_path / "gemm_hopper.cu").read_text()
    assert "wgmma.mma_async" in src and str(tmp_path / "gemm_hopper.cu") in run.stdout
