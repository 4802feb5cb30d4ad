"""f16 / bf16 GEMM on Hopper's matrix path (docs/language.md "Hopper: warpgroup MMA, tensor copies,
transaction barriers"): C = A @ B^T with A (M x K) and B (N x K) row-major, f32 accumulation, C f16.

One block computes a 128 x BN tile of C with three warpgroups: warpgroup 0 is the producer (one
work-item issues the tensor copies of A's and B's K-slices into a ring of STAGES shared stages, each
stage guarded by a "full" and an "empty" transaction barrier), warpgroups 1 and 2 are consumers (each
multiplies its 64 rows of the A tile with the B tile by wgmma and releases the stage). The producer
gives registers back (setmaxnreg "dec") so the consumers can hold their 64 x BN accumulators.

    python examples/gemm_hopper.py            # on the CPU (the IR interpreter): small sizes, against float64
    polykern compile examples/gemm_hopper.py --target "cuda -arch=sm_90a" -o g.kbin
    polykern compile examples/gemm_hopper.py --target "nvptx -arch=sm_90a" -o g.kbin   # LLVM NVPTX, no CUDA toolkit
"""
import numpy as np

import polykern as pk
from polykern import Buffer, f16, f32, i32

BM, BK = 128, 64
#: Why tests/test_native.py's loop over the examples (built for plain llvm / cuda, run by run(mod, rng)) skips
#: this one: its kernels compile for cuda/nvptx -arch=sm_90a only. libpolykern runs them on an H100/H200
#: (tests/test_native_hopper.py); on a CPU-only host the IR interpreter does (python examples/gemm_hopper.py).
NOT_NATIVE = ("Hopper kernels build for cuda/nvptx -arch=sm_90a only: tests/test_native_hopper.py runs them through "
              "libpolykern")


def make_gemm(BN: int = 256, STAGES: int = 4, dtype=f16, INFLIGHT: int = 1):
    """The kernel for one tile shape: BN columns of C per block, STAGES shared stages, f16 or bf16 inputs;
    INFLIGHT wgmma groups a consumer leaves running while it waits for the next stage (0 or 1: with 1 the
    stage of step kt is released after step kt + 1's wgmmas are issued)."""

    @pk.kernel
    def gemm_hopper(M: i32, N: i32, K: i32, A: Buffer[dtype, "readonly"], B: Buffer[dtype, "readonly"],
                    C: Buffer[f16]):
        pk.warpgroups(3)
        ta = pk.tensor_map(A, (M, K), (BM, BK), "128B")
        tb = pk.tensor_map(B, (N, K), (BN, BK), "128B")
        tiles = pk.shared_dynamic(dtype)          # STAGES x (A tile, B tile), 1024-byte aligned stages
        full = pk.mbarriers(STAGES)
        empty = pk.mbarriers(STAGES)
        acc = pk.wg_acc(f32, 64, BN)
        wg = pk.warpgroup_id()
        t = pk.local_id(0) % 128
        m0 = pk.group_id(0) * BM
        n0 = pk.group_id(1) * BN
        kt_count = K // BK
        if pk.local_id(0) == 0:
            for s in range(STAGES):
                pk.mbarrier_init(full, s, 1)
                pk.mbarrier_init(empty, s, 2)
        pk.barrier()
        if wg == 0:
            pk.setmaxnreg(40, "dec")
            if t == 0:
                for kt in range(kt_count):
                    s = kt % STAGES
                    if kt >= STAGES:
                        pk.mbarrier_wait(empty, s, (kt // STAGES - 1) % 2)
                    pk.mbarrier_arrive_tx(full, s, (BM + BN) * BK * 2)
                    base = s * (BM + BN) * BK
                    pk.tma_load(tiles, base, ta, m0, kt * BK, full, s)
                    pk.tma_load(tiles, base + BM * BK, tb, n0, kt * BK, full, s)
        else:
            pk.setmaxnreg(232, "inc")
            c = wg - 1
            pk.wg_fill(acc, 0.0)
            for kt in range(kt_count):
                s = kt % STAGES
                pk.mbarrier_wait(full, s, (kt // STAGES) % 2)
                base = s * (BM + BN) * BK
                for kk in range(BK // 16):
                    pk.wgmma(acc, tiles, base + c * 64 * BK + kk * 16, tiles, base + BM * BK + kk * 16)
                pk.wgmma_commit()
                pk.wgmma_wait(INFLIGHT)
                if t == 0 and kt >= INFLIGHT:  # the stage whose wgmmas are now complete
                    pk.mbarrier_arrive(empty, (kt - INFLIGHT) % STAGES)
            pk.wgmma_wait(0)
            pk.wg_store(C, (m0 + c * 64) * N + n0, N, acc)

    return gemm_hopper


def make_gemm_persistent(BN: int = 256, STAGES: int = 4, dtype=f16, INFLIGHT: int = 1):
    """The same tile as make_gemm in a persistent grid: launch one block per multiprocessor (or fewer); each
    walks the tiles blockIdx, blockIdx + gridDim, ... (M fastest, so neighbouring blocks share B's tile).
    The producer runs on into the next tile's stages while the consumers store this tile's C, so the
    epilogue overlaps the next loads. Steps count on across tiles: the ring's barriers keep their phases."""

    @pk.kernel
    def gemm_hopper_persistent(M: i32, N: i32, K: i32, A: Buffer[dtype, "readonly"], B: Buffer[dtype, "readonly"],
                               C: Buffer[f16]):
        pk.warpgroups(3)
        ta = pk.tensor_map(A, (M, K), (BM, BK), "128B")
        tb = pk.tensor_map(B, (N, K), (BN, BK), "128B")
        tiles = pk.shared_dynamic(dtype)
        full = pk.mbarriers(STAGES)
        empty = pk.mbarriers(STAGES)
        acc = pk.wg_acc(f32, 64, BN)
        wg = pk.warpgroup_id()
        t = pk.local_id(0) % 128
        tiles_m = M // BM
        num_tiles = tiles_m * (N // BN)
        kt_count = K // BK
        if pk.local_id(0) == 0:
            for s in range(STAGES):
                pk.mbarrier_init(full, s, 1)
                pk.mbarrier_init(empty, s, 2)
        pk.barrier()
        it = 0
        tile = pk.group_id(0)
        if wg == 0:
            pk.setmaxnreg(40, "dec")
            if t == 0:
                while tile < num_tiles:
                    m0 = (tile % tiles_m) * BM
                    n0 = (tile // tiles_m) * BN
                    for kt in range(kt_count):
                        s = it % STAGES
                        if it >= STAGES:
                            pk.mbarrier_wait(empty, s, (it // STAGES - 1) % 2)
                        pk.mbarrier_arrive_tx(full, s, (BM + BN) * BK * 2)
                        base = s * (BM + BN) * BK
                        pk.tma_load(tiles, base, ta, m0, kt * BK, full, s)
                        pk.tma_load(tiles, base + BM * BK, tb, n0, kt * BK, full, s)
                        it += 1
                    tile += pk.num_groups(0)
        else:
            pk.setmaxnreg(232, "inc")
            c = wg - 1
            while tile < num_tiles:
                m0 = (tile % tiles_m) * BM
                n0 = (tile // tiles_m) * BN
                pk.wg_fill(acc, 0.0)
                for kt in range(kt_count):
                    s = it % STAGES
                    pk.mbarrier_wait(full, s, (it // STAGES) % 2)
                    base = s * (BM + BN) * BK
                    for kk in range(BK // 16):
                        pk.wgmma(acc, tiles, base + c * 64 * BK + kk * 16, tiles, base + BM * BK + kk * 16)
                    pk.wgmma_commit()
                    pk.wgmma_wait(INFLIGHT)
                    if t == 0 and kt >= INFLIGHT:
                        pk.mbarrier_arrive(empty, (it - INFLIGHT) % STAGES)
                    it += 1
                pk.wgmma_wait(0)
                if t == 0 and INFLIGHT > 0 and kt_count > 0:  # the tile's last stage, still held
                    pk.mbarrier_arrive(empty, (it - 1) % STAGES)
                pk.wg_store(C, (m0 + c * 64) * N + n0, N, acc)
                tile += pk.num_groups(0)

    return gemm_hopper_persistent


def shared_elems(BN: int = 256, STAGES: int = 4) -> int:
    """Elements of the dynamic shared array: STAGES stages of one A and one B tile."""
    return STAGES * (BM + BN) * BK


#: The default tiles (BN 256, 4 stages, f16), so that `polykern compile examples/gemm_hopper.py --target
#: "cuda -arch=sm_90a" -o g.kbin` finds them (the CLI builds a file's module-level kernels).
gemm_hopper = make_gemm()
gemm_hopper_persistent = make_gemm_persistent()


def run_on_cpu(M: int = 128, N: int = 128, K: int = 256, BN: int = 64, STAGES: int = 2, dtype=f16, seed: int = 0):
    """The GEMM on the IR interpreter (every rule of docs/language.md 5.3 checked): (A, B, C)."""
    from polykern.ir.bfloat16 import BF16_DTYPE, f32_to_bits
    from polykern.testing.interp import interpret

    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (N, K)).astype(np.float32)
    if dtype == f16:
        a, b = a.astype(np.float16), b.astype(np.float16)
    else:
        a, b = f32_to_bits(a).view(BF16_DTYPE), f32_to_bits(b).view(BF16_DTYPE)
    c = np.zeros(M * N, np.float16)
    out = interpret(make_gemm(BN, STAGES, dtype), [M, N, K, a.reshape(-1), b.reshape(-1), c,
                                                   shared_elems(BN, STAGES)],
                    (M // BM, N // BN), 3 * 128)
    return a, b, out.buffers["C"].reshape(M, N)


if __name__ == "__main__":
    import os
    import tempfile

    from polykern import numerics

    M, N, K = 128, 128, 256
    a, b, c = run_on_cpu(M, N, K, BN=64, STAGES=2)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64.T
    bound = numerics.mma_error_bound("f32", a64, b64.T, np.zeros((M, N))) + np.abs(ref) * 2.0 ** -11  # + f16 output
    err = np.abs(c.astype(np.float64) - ref)
    print(f"IR interpreter, {M}x{N}x{K} (BN 64, 2 stages): max |C - float64| = {err.max():.3g} "
          f"(bound {bound.max():.3g}) -> {'ok' if (err <= bound).all() else 'FAILED'}")
    src = pk.build(make_gemm(), targets="cuda -arch=sm_90a -fmt=cuda").on("cuda").inspect_source("cuda")
    path = os.path.join(tempfile.gettempdir(), "gemm_hopper.cu")
    with open(path, "w") as f:
        f.write(src)
    print(f"CUDA C for cuda -arch=sm_90a (BN 256, 4 stages): {path} ({len(src.splitlines())} lines)")
    if not (err <= bound).all():
        raise SystemExit(1)
