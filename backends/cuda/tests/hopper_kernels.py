"""A small Hopper kernel for the cuda backend tests (test_hopper_nvptx.py, test_hopper_runtime.py): one
warpgroup copies a 128 x 64 tile of A by tensor copy, runs one wgmma on two slices of it and stores the
accumulator (f32 or f16) with any leading dimension, the operations examples/gemm_hopper.py does not use
(an f32 store, a barrier every work-item arrives on). No ``from __future__ import annotations``: the kernels'
annotations name the factory's arguments, which the frontend reads from the closure."""

import numpy as np

import polykern as pk
from polykern import Buffer, bf16, f16, f32, i32
from polykern.ir.bfloat16 import BF16_DTYPE, f32_to_bits
from polykern.ir.hopper import reference_wgmma

TILE_ROWS, TILE_COLS = 128, 64
SHARED_ELEMS = TILE_ROWS * TILE_COLS


def make_one_wgmma(dtype=f16, out=f32, n: int = 64):
    @pk.kernel
    def one_wgmma(M: i32, K: i32, a_off: i32, b_off: i32, ldc: i32, A: Buffer[dtype, "readonly"], C: Buffer[out]):
        pk.warpgroups(1)
        ta = pk.tensor_map(A, (M, K), (TILE_ROWS, TILE_COLS), "128B")
        tiles = pk.shared_dynamic(dtype)
        bars = pk.mbarriers(2)
        acc = pk.wg_acc(f32, 64, n)
        lid = pk.local_id(0)
        if lid == 0:
            pk.mbarrier_init(bars, 0, 1)
            pk.mbarrier_init(bars, 1, 128)
        pk.barrier()
        if lid == 0:
            pk.mbarrier_arrive_tx(bars, 0, TILE_ROWS * TILE_COLS * 2)
            pk.tma_load(tiles, 0, ta, 0, 0, bars, 0)
        pk.mbarrier_wait(bars, 0, 0)
        pk.wg_fill(acc, 0.5)
        pk.wgmma(acc, tiles, a_off, tiles, b_off)
        pk.wgmma_commit()
        pk.wgmma_wait(0)
        pk.mbarrier_arrive(bars, 1)
        pk.mbarrier_wait(bars, 1, 0)
        pk.wg_store(C, 0, ldc, acc)

    return one_wgmma


#: (input type, output type, N, ldc, a_off, b_off): f32 and f16 stores, with even (paired stores) and odd ldc; the
#: B operand's N rows of 64 elements from b_off stay within the copied tile.
CASES = [(f16, f32, 64, 64, 16, 544), (f16, f32, 64, 67, 16, 544), (bf16, f16, 8, 8, 0, 0),
         (bf16, f16, 128, 129, 16, 32)]
CASE_IDS = ["f16_f32_n64", "f16_f32_n64_odd_ldc", "bf16_f16_n8", "bf16_f16_n128_odd_ldc"]


def launch_args(case, seed: int = 0):
    """(the kernel's arguments without the shared size, A as float64 128 x 64, C): A holds small integers, so
    every product and sum is exact in f32 and the device's result equals ``expected``."""
    dtype, out, n, ldc, a_off, b_off = case
    a = np.random.default_rng(seed).integers(-3, 4, (TILE_ROWS, TILE_COLS)).astype(np.float64)
    dev_a = a.astype(np.float16) if dtype == f16 else f32_to_bits(a.astype(np.float32)).view(BF16_DTYPE)
    c = np.zeros(64 * ldc, np.float32 if out == f32 else np.float16)
    return [TILE_ROWS, TILE_COLS, a_off, b_off, ldc, dev_a.reshape(-1), c], a, c


def expected(a: np.ndarray, case) -> np.ndarray:
    """The 64 x n accumulator the kernel stores: 0.5 + A @ B^T of the K-major operands at a_off and b_off."""
    _, _, n, _, a_off, b_off = case
    flat = a.reshape(-1)
    a_op = np.stack([flat[a_off + 64 * i:a_off + 64 * i + 16] for i in range(64)])
    b_op = np.stack([flat[b_off + 64 * j:b_off + 64 * j + 16] for j in range(n)])
    return reference_wgmma(np.full((64, n), 0.5, np.float32), a_op, b_op).astype(np.float64)


def stored(c: np.ndarray, case) -> np.ndarray:
    """The 64 x n matrix the kernel stored into ``c`` (float64)."""
    _, _, n, ldc, _, _ = case
    return c.reshape(64, ldc)[:, :n].astype(np.float64)
