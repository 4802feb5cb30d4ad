"""C = A @ B with f16 inputs and f32 accumulation on the matrix engine (docs/language.md "Matrix
fragments"): tensor cores on cuda/nvptx (mma.sync), cooperative matrices on Vulkan (NVIDIA), the
reference arithmetic on the CPU (llvm).

A group computes a BM x BN tile of C. Each k-step all work-items stage a BM x BK tile of A and a
BK x BN tile of B in shared memory (barrier), then every subgroup multiplies its 32 x 64 part of the
tile: 2 x 4 accumulators of 16 x 16, each fed by one of 2 A and one of 4 B fragments per 16-wide
k-slice (8 mma per 6 fragment loads); with ``WM = 64`` its 64 x 64 part: 4 x 4 accumulators, 16 mma per
8 fragment loads, half the subgroups. The subgroup count, (BM // WM) * (BN // 64), does not depend
on the device: the block is that many subgroups of the device's size (``subgroup_width``).
m, n and k must be multiples of BM, BN and BK (``launch`` checks).

With ``STAGES`` >= 2 (the variant ``"async"``) the staging is asynchronous (docs/language.md
"Asynchronous copies"): a ring of STAGES shared tiles, filled by ``pk.copy_async`` of 16 bytes
(8 elements) per copy, STAGES - 1 k-tiles ahead, so the loads of the next tiles run while this tile's
mma run (cp.async on sm_80+; a plain copy where a backend has no asynchronous copies). One barrier
per k-step: wait for this tile's group, barrier (everyone's copies of this tile are visible and
everyone is done with the stage the next copy overwrites), issue the copy STAGES - 1 tiles ahead,
compute. ``STAGES == 1`` (the variant ``"sync"``, the measured baseline) stages through registers
between two barriers; the constexpr removes the other scheme's code.

Two kernels share that body (``_multiply``, a device function): ``gemm_f16`` keeps the ring in two
static ``pk.shared`` arrays, which CUDA caps at 48 KiB, and ``gemm_f16_dyn`` (the variants ``"dyn*"``)
in one ``pk.shared_dynamic`` array of ``ring_elements`` f16, A's STAGES tiles and then B's, sized at
launch (``shared_size``; CUDA opts in past 48 KiB, up to 227 KiB on an H100): 3 or 4 stages at BK = 32.
"""
from typing import NamedTuple

import numpy as np

import polykern as pk
from polykern import Buffer, f16, f32, i32

WARP_M, WARP_N = 32, 64  # a subgroup's tile
#: Padding of each shared row, in elements: rows of BK + 8 (BN + 8) f16 start 16 bytes apart modulo
#: 128, so the 8 rows one ldmatrix phase reads fall in distinct banks (cuda: mma_sync.py), and stay
#: 16-byte aligned.
PAD = 8


@pk.func
def _issue_tile(a: Buffer[f16, "readonly"], b: Buffer[f16, "readonly"], sa: pk.Shared[f16], sb: pk.Shared[f16],
                n: i32, k: i32, row0: i32, col0: i32, k0: i32, stage: i32,
                BM: pk.constexpr, BN: pk.constexpr, BK: pk.constexpr, SB0: pk.constexpr):
    """Start copying A's BM x BK tile at (row0, k0) and B's BK x BN tile at (k0, col0) into ring stage
    ``stage`` (padded rows), 8 elements per copy, spread over the group's work-items."""
    tid = pk.local_id(0)
    nt = pk.local_size(0)
    e = tid * 8
    while e < BM * BK:
        pk.copy_async(sa, (stage * (BM * (BK + PAD)) + e // BK * (BK + PAD) + e % BK) // 8,
                      a, ((row0 + e // BK) * k + k0 + e % BK) // 8, 8)
        e += nt * 8
    e = tid * 8
    while e < BK * BN:
        pk.copy_async(sb, (SB0 + stage * (BK * (BN + PAD)) + e // BN * (BN + PAD) + e % BN) // 8,
                      b, ((k0 + e // BN) * n + col0 + e % BN) // 8, 8)
        e += nt * 8


@pk.func
def _multiply(a: Buffer[f16, "readonly"], b: Buffer[f16, "readonly"], c: Buffer[f32], n: i32, k: i32,
              sa: pk.Shared[f16], sb: pk.Shared[f16], BM: pk.constexpr, BN: pk.constexpr, BK: pk.constexpr,
              STAGES: pk.constexpr, WM: pk.constexpr, SB0: pk.constexpr):
    """The group's BM x BN tile of C, staged through ``sa`` (A's STAGES tiles from 0) and ``sb`` (B's
    from ``SB0``): two pk.shared arrays (``gemm_f16``, SB0 = 0) or one pk.shared_dynamic array, A's
    stages then B's (``gemm_f16_dyn``, ``sa`` and ``sb`` the same array)."""
    tid = pk.local_id(0)
    nt = pk.local_size(0)
    sg = pk.subgroup_id()
    wr = (sg // (BN // 64)) * WM
    wc = (sg % (BN // 64)) * 64
    row0 = pk.group_id(1) * BM
    col0 = pk.group_id(0) * BN
    fa0 = pk.frag_a(f16, 16, 16, 16)
    fa1 = pk.frag_a(f16, 16, 16, 16)
    fa2 = pk.frag_a(f16, 16, 16, 16)  # fa2, fa3, c2x, c3x: the lower half of a 64 x 64 tile (WM == 64)
    fa3 = pk.frag_a(f16, 16, 16, 16)
    fb0 = pk.frag_b(f16, 16, 16, 16)
    fb1 = pk.frag_b(f16, 16, 16, 16)
    fb2 = pk.frag_b(f16, 16, 16, 16)
    fb3 = pk.frag_b(f16, 16, 16, 16)
    c00 = pk.frag_acc(f32, 16, 16, 16)
    c01 = pk.frag_acc(f32, 16, 16, 16)
    c02 = pk.frag_acc(f32, 16, 16, 16)
    c03 = pk.frag_acc(f32, 16, 16, 16)
    c10 = pk.frag_acc(f32, 16, 16, 16)
    c11 = pk.frag_acc(f32, 16, 16, 16)
    c12 = pk.frag_acc(f32, 16, 16, 16)
    c13 = pk.frag_acc(f32, 16, 16, 16)
    c20 = pk.frag_acc(f32, 16, 16, 16)
    c21 = pk.frag_acc(f32, 16, 16, 16)
    c22 = pk.frag_acc(f32, 16, 16, 16)
    c23 = pk.frag_acc(f32, 16, 16, 16)
    c30 = pk.frag_acc(f32, 16, 16, 16)
    c31 = pk.frag_acc(f32, 16, 16, 16)
    c32 = pk.frag_acc(f32, 16, 16, 16)
    c33 = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_fill(c00, 0.0)
    pk.frag_fill(c01, 0.0)
    pk.frag_fill(c02, 0.0)
    pk.frag_fill(c03, 0.0)
    pk.frag_fill(c10, 0.0)
    pk.frag_fill(c11, 0.0)
    pk.frag_fill(c12, 0.0)
    pk.frag_fill(c13, 0.0)
    if WM == 64:
        pk.frag_fill(c20, 0.0)
        pk.frag_fill(c21, 0.0)
        pk.frag_fill(c22, 0.0)
        pk.frag_fill(c23, 0.0)
        pk.frag_fill(c30, 0.0)
        pk.frag_fill(c31, 0.0)
        pk.frag_fill(c32, 0.0)
        pk.frag_fill(c33, 0.0)
    for p in range(STAGES - 1):  # the ring's first STAGES - 1 tiles, one group each (empty past k)
        if p * BK < k:
            _issue_tile(a, b, sa, sb, n, k, row0, col0, p * BK, p, BM, BN, BK, SB0)
        pk.copy_commit()
    for k0 in range(0, k, BK):
        oa = 0
        ob = SB0
        if STAGES == 1:
            # A's and B's tiles (the same size: BM == BN) together, 4 groups of 4 elements of each per
            # work-item and round, every load before the stores: 32 loads in flight (on a GPU the
            # step's staging is bound by the global loads' latency, not their bandwidth)
            e = tid * 4
            while e < BM * BK:
                e1 = e + nt * 4
                e2 = e + nt * 8
                e3 = e + nt * 12
                a0, a1, a2, a3 = pk.vload(a, ((row0 + e // BK) * k + k0 + e % BK) // 4, 4)
                a4, a5, a6, a7 = pk.vload(a, ((row0 + e1 // BK) * k + k0 + e1 % BK) // 4, 4)
                a8, a9, a10, a11 = pk.vload(a, ((row0 + e2 // BK) * k + k0 + e2 % BK) // 4, 4)
                a12, a13, a14, a15 = pk.vload(a, ((row0 + e3 // BK) * k + k0 + e3 % BK) // 4, 4)
                b0, b1, b2, b3 = pk.vload(b, ((k0 + e // BN) * n + col0 + e % BN) // 4, 4)
                b4, b5, b6, b7 = pk.vload(b, ((k0 + e1 // BN) * n + col0 + e1 % BN) // 4, 4)
                b8, b9, b10, b11 = pk.vload(b, ((k0 + e2 // BN) * n + col0 + e2 % BN) // 4, 4)
                b12, b13, b14, b15 = pk.vload(b, ((k0 + e3 // BN) * n + col0 + e3 % BN) // 4, 4)
                pk.vstore(sa, (e // BK * (BK + PAD) + e % BK) // 4, (a0, a1, a2, a3))
                pk.vstore(sa, (e1 // BK * (BK + PAD) + e1 % BK) // 4, (a4, a5, a6, a7))
                pk.vstore(sa, (e2 // BK * (BK + PAD) + e2 % BK) // 4, (a8, a9, a10, a11))
                pk.vstore(sa, (e3 // BK * (BK + PAD) + e3 % BK) // 4, (a12, a13, a14, a15))
                pk.vstore(sb, (SB0 + e // BN * (BN + PAD) + e % BN) // 4, (b0, b1, b2, b3))
                pk.vstore(sb, (SB0 + e1 // BN * (BN + PAD) + e1 % BN) // 4, (b4, b5, b6, b7))
                pk.vstore(sb, (SB0 + e2 // BN * (BN + PAD) + e2 % BN) // 4, (b8, b9, b10, b11))
                pk.vstore(sb, (SB0 + e3 // BN * (BN + PAD) + e3 % BN) // 4, (b12, b13, b14, b15))
                e += nt * 16
            pk.barrier()
        else:
            t = k0 // BK
            pk.copy_wait((STAGES - 2) % STAGES)  # STAGES - 2 (the % keeps it >= 0 where STAGES == 1)
            pk.barrier()  # everyone's copies of tile t are visible, everyone is done with tile t - 1's stage
            if k0 + (STAGES - 1) * BK < k:
                _issue_tile(a, b, sa, sb, n, k, row0, col0, k0 + (STAGES - 1) * BK, (t + STAGES - 1) % STAGES,
                            BM, BN, BK, SB0)
            pk.copy_commit()
            oa = t % STAGES * (BM * (BK + PAD))
            ob = SB0 + t % STAGES * (BK * (BN + PAD))
        for kk in range(0, BK, 16):
            pk.frag_load(fa0, sa, oa + wr * (BK + PAD) + kk, BK + PAD)
            pk.frag_load(fa1, sa, oa + (wr + 16) * (BK + PAD) + kk, BK + PAD)
            pk.frag_load(fb0, sb, ob + kk * (BN + PAD) + wc, BN + PAD)
            pk.frag_load(fb1, sb, ob + kk * (BN + PAD) + wc + 16, BN + PAD)
            pk.frag_load(fb2, sb, ob + kk * (BN + PAD) + wc + 32, BN + PAD)
            pk.frag_load(fb3, sb, ob + kk * (BN + PAD) + wc + 48, BN + PAD)
            c00 = pk.mma(fa0, fb0, c00)
            c01 = pk.mma(fa0, fb1, c01)
            c02 = pk.mma(fa0, fb2, c02)
            c03 = pk.mma(fa0, fb3, c03)
            c10 = pk.mma(fa1, fb0, c10)
            c11 = pk.mma(fa1, fb1, c11)
            c12 = pk.mma(fa1, fb2, c12)
            c13 = pk.mma(fa1, fb3, c13)
            if WM == 64:
                pk.frag_load(fa2, sa, oa + (wr + 32) * (BK + PAD) + kk, BK + PAD)
                pk.frag_load(fa3, sa, oa + (wr + 48) * (BK + PAD) + kk, BK + PAD)
                c20 = pk.mma(fa2, fb0, c20)
                c21 = pk.mma(fa2, fb1, c21)
                c22 = pk.mma(fa2, fb2, c22)
                c23 = pk.mma(fa2, fb3, c23)
                c30 = pk.mma(fa3, fb0, c30)
                c31 = pk.mma(fa3, fb1, c31)
                c32 = pk.mma(fa3, fb2, c32)
                c33 = pk.mma(fa3, fb3, c33)
        if STAGES == 1:
            pk.barrier()
    top = (row0 + wr) * n + col0 + wc
    bottom = top + 16 * n
    pk.frag_store(c, top, n, c00)
    pk.frag_store(c, top + 16, n, c01)
    pk.frag_store(c, top + 32, n, c02)
    pk.frag_store(c, top + 48, n, c03)
    pk.frag_store(c, bottom, n, c10)
    pk.frag_store(c, bottom + 16, n, c11)
    pk.frag_store(c, bottom + 32, n, c12)
    pk.frag_store(c, bottom + 48, n, c13)
    if WM == 64:
        pk.frag_store(c, bottom + 16 * n, n, c20)
        pk.frag_store(c, bottom + 16 * n + 16, n, c21)
        pk.frag_store(c, bottom + 16 * n + 32, n, c22)
        pk.frag_store(c, bottom + 16 * n + 48, n, c23)
        pk.frag_store(c, bottom + 32 * n, n, c30)
        pk.frag_store(c, bottom + 32 * n + 16, n, c31)
        pk.frag_store(c, bottom + 32 * n + 32, n, c32)
        pk.frag_store(c, bottom + 32 * n + 48, n, c33)

@pk.kernel
def gemm_f16(a: Buffer[f16, "readonly"], b: Buffer[f16, "readonly"], c: Buffer[f32], m: i32, n: i32, k: i32,
             BM: pk.constexpr, BN: pk.constexpr, BK: pk.constexpr, STAGES: pk.constexpr, WM: pk.constexpr):
    """The ring (or the staging tile) in two static pk.shared arrays: at most 48 KiB on CUDA."""
    sa = pk.shared(f16, STAGES * BM * (BK + PAD))
    sb = pk.shared(f16, STAGES * BK * (BN + PAD))
    _multiply(a, b, c, n, k, sa, sb, BM, BN, BK, STAGES, WM, 0)


@pk.kernel
def gemm_f16_dyn(a: Buffer[f16, "readonly"], b: Buffer[f16, "readonly"], c: Buffer[f32], m: i32, n: i32, k: i32,
                 BM: pk.constexpr, BN: pk.constexpr, BK: pk.constexpr, STAGES: pk.constexpr, WM: pk.constexpr):
    """The ring in one pk.shared_dynamic array of ``ring_elements`` f16 (launch's ``shared_size``): A's
    STAGES tiles, then B's; over 48 KiB (CUDA opts in, up to 227 KiB on an H100)."""
    s = pk.shared_dynamic(f16)
    _multiply(a, b, c, n, k, s, s, BM, BN, BK, STAGES, WM, STAGES * BM * (BK + PAD))


@pk.kernel
def subgroup_width(out: Buffer[i32]):
    out[0] = pk.subgroup_size()


#: (BM, BN, BK) of the GPU configuration and of the small one the CPU check uses.
GPU_TILES = (128, 128, 32)
SMALL_TILES = (64, 64, 16)
class Variant(NamedTuple):
    """How a variant differs from the tiles it is given (``GPU_TILES`` or ``SMALL_TILES``)."""

    bk: int = 0  #: its BK; 0: the tiles'
    stages: int = 1  #: STAGES: 1 stages through registers, >= 2 is a pk.copy_async ring of that depth
    wm: int = WARP_M  #: WM, a subgroup's rows (32 or 64)
    dynamic: bool = False  #: the ring in one pk.shared_dynamic array (gemm_f16_dyn), not two pk.shared ones
    wide: bool = False  #: BN twice the tiles' (twice the subgroups, the same subgroup tiles)


#: The variants. "sync": staging through registers (STAGES = 1), the measured baseline; "async": a
#: 2-stage pk.copy_async ring (2 x 18.5 KiB at the GPU tiles); "async4": 4 stages of BK = 16 (4 x 10 KiB),
#: three tiles in flight; "async64": the 2-stage ring with 64 x 64 subgroup tiles (half the subgroups,
#: 16 mma per 8 fragment loads instead of 8 per 6). These keep static shared memory under CUDA's 48 KiB.
#: Rings in dynamic shared memory (over 48 KiB; sizes at the GPU tiles; 16 subgroups per H100 SM, as
#: above, registers being the limit): "dyn3" / "dyn4": 3 / 4 stages of BK = 32 (55.5 / 74 KiB: two or
#: three tiles in flight, each twice async4's); "dyn3bk64": 3 stages of BK = 64 (105 KiB: half the
#: barriers per flop); "dyn4wide": 4 stages at 128 x 256 group tiles (16 subgroups, one group per SM,
#: 106 KiB: a quarter fewer global bytes per flop).
VARIANTS = {"sync": Variant(), "async": Variant(stages=2), "async4": Variant(bk=16, stages=4),
            "async64": Variant(stages=2, wm=64),
            "dyn3": Variant(bk=32, stages=3, dynamic=True), "dyn4": Variant(bk=32, stages=4, dynamic=True),
            "dyn3bk64": Variant(bk=64, stages=3, dynamic=True),
            "dyn4wide": Variant(bk=32, stages=4, dynamic=True, wide=True)}


def config(tiles, variant="sync", stages=None):
    """(tiles, STAGES, WM) that ``variant`` runs for ``tiles``; ``stages`` overrides a ring's depth."""
    if variant not in VARIANTS:
        raise ValueError(f"gemm_f16 variants are {', '.join(VARIANTS)}; got {variant!r}")
    v = VARIANTS[variant]
    ring = stages if stages and v.stages > 1 else v.stages
    return (tiles[0], tiles[1] * (1 + v.wide), v.bk or tiles[2]), ring, v.wm


def ring_elements(tiles, ring) -> int:
    """The f16 elements of a ring of ``ring`` stages of padded A and B tiles (``tiles`` = BM, BN, BK)."""
    bm, bn, bk = tiles
    return ring * (bm * (bk + PAD) + bk * (bn + PAD))


def specialized(tiles, variant="sync", stages=None):
    """gemm_f16 (gemm_f16_dyn for a dynamic variant) specialized for ``variant`` at ``tiles``."""
    (bm, bn, bk), ring, wm = config(tiles, variant, stages)
    kernel = gemm_f16_dyn if VARIANTS[variant].dynamic else gemm_f16
    return kernel.specialize(BM=bm, BN=bn, BK=bk, STAGES=ring, WM=wm)


def kernels(tiles=SMALL_TILES, variants=tuple(VARIANTS), stages=None):
    """The kernels to build for ``tiles`` (the default is the configuration ``run`` launches)."""
    return [specialized(tiles, v, stages) for v in variants] + [subgroup_width]


def warps(tiles, wm=WARP_M) -> int:
    return (tiles[0] // wm) * (tiles[1] // WARP_N)


def device_subgroup_size(mod) -> int:
    out = np.zeros(1, np.int32)
    mod["subgroup_width"](out, grid=1, block=1)
    return int(out[0])


def launch(mod, a, b, c, m, n, k, tiles, sg_size, variant="sync", stages=None):
    kernel = specialized(tiles, variant, stages)
    tiles, ring, wm = config(tiles, variant, stages)
    bm, bn, bk = tiles
    if ring == 1 and bm != bn:
        raise ValueError(f"gemm_f16 stages A's and B's tiles in one loop: BM must equal BN, got {bm}, {bn}")
    if ring == 1 and (bm * bk) % (warps(tiles, wm) * sg_size * 16):
        raise ValueError(f"gemm_f16's staging moves 16 elements of A and B per work-item and round: a "
                         f"{bm}x{bk} tile is not a whole number of rounds of {warps(tiles, wm) * sg_size} "
                         "work-items")
    if ring > 1 and (bk % 16 or ring < 2):
        raise ValueError(f"gemm_f16's ring copies rows of 8 elements and takes 16-wide k slices, with "
                         f"2 or more stages: BK must be a multiple of 16, got {bk}, stages {ring}")
    if m % bm or n % bn or k % bk:
        raise ValueError(f"gemm_f16 needs m, n, k multiples of {bm}, {bn}, {bk}; got {m}, {n}, {k}")
    dyn = {"shared_size": ring_elements(tiles, ring)} if VARIANTS[variant].dynamic else {}
    mod[kernel.name](a, b, c, np.int32(m), np.int32(n), np.int32(k), grid=(n // bn, m // bm),
                     block=warps(tiles, wm) * sg_size, **dyn)


def check(c, a, b, rows=None) -> float:
    """The largest |C - A @ B| (float64 reference) over ``rows`` (all by default), in units of the
    bound polykern.numerics promises for an f32 accumulation of that length (must be <= 1)."""
    from polykern.numerics import mma_error_bound

    rows = np.arange(a.shape[0]) if rows is None else rows
    a64 = a[rows].astype(np.float64)
    ref = a64 @ b.astype(np.float64)
    bound = mma_error_bound("f32", a[rows], b, np.zeros_like(ref)) + 1e-30
    return float((np.abs(c[rows].astype(np.float64) - ref) / bound).max())


def run(mod, rng, m=128, n=128, k=64, tiles=SMALL_TILES, variants=tuple(VARIANTS)):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    sg = device_subgroup_size(mod)
    worst = {}
    for v in variants:
        c = np.zeros((m, n), np.float32)
        launch(mod, a.ravel(), b.ravel(), c.ravel(), m, n, k, tiles, sg, v)
        worst[v] = check(c, a, b)
        assert worst[v] <= 1.0, f"gemm_f16 ({v}) off by {worst[v]:.2f} x the promised bound"
    errors = ", ".join(f"{v} {e:.3f}" for v, e in worst.items())
    return f"gemm_f16: {m}x{k} @ {k}x{n} (f16 in, f32 accumulate) OK, error of the bound: {errors}"


if __name__ == "__main__":
    from _run import main

    raise SystemExit(main(kernels(), run))
