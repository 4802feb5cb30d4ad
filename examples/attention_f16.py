"""Fused attention forward, flash-attention style: O = softmax(Q K^T / sqrt(d)) V for Q, K, V of shape
(batch * heads, seq, d), f16 in, f16 out, with the matrix fragments of docs/language.md 5.2 (tensor
cores on cuda/nvptx, cooperative matrices on Vulkan, the reference arithmetic on the CPU).

One group owns BM query rows of one (batch, head): BM // 16 subgroups, 16 rows each. Q's tile and
then, one block of BN keys at a time, K's and V's rows reach shared memory by ``pk.copy_async``
(cp.async on cuda/nvptx; rows past ``seq`` are zeros). For every key block (one pass over the keys,
nothing of size seq x seq is stored):

1. each subgroup computes its 16 x BN scores S = Q K^T with ``pk.mma`` (A = Q from shared, B = K^T:
   K's rows loaded ``"col"``), f32 accumulate, and stores them (``frag_store``) to shared; then the
   copy of the next block's K into the freed tile starts;
2. each subgroup does the online softmax of its own rows (``LPR`` lanes per row, combined with
   ``pk.subgroup_shuffle_xor``, each every LPR-th column, or ``RPL`` rows per lane): running max m
   and sum l per row (base 2: the scores are scaled by log2(e) / sqrt(d)), P = 2^(s - m_new) rounded
   to f16 into shared (masked keys: 0; the masks are applied in the last block and the diagonal's
   only), alpha = 2^(m_old - m_new), l = alpha l + sum(P) (of P in f32, before rounding);
3. each subgroup computes its 16 x d block product P V (``pk.mma``, fresh accumulators) and stores it
   to shared (f32); then the copy of the next block's V starts;
4. every work-item updates the part of O it keeps in registers (``pk.local``: columns lane, lane + SG,
   ... of its subgroup's 16 rows): O = alpha[row] O + (P V)[row].

At the end O / l is written as f16. The fragment API has no per-row access to an accumulator, so the
scores and the block product go through shared memory: the price of portability here. Four barriers
per key block. ``CAUSAL`` (a constexpr) masks key > query and stops at the diagonal. ``ASYNC`` False
(``staging="sync"``) stages with ``pk.vload``/``pk.vstore`` instead of asynchronous copies.

Tiles (``CONFIGS``): d = 64: BM = 64, BN = 32 (41 KiB of shared memory); d = 128: BM = BN = 32
(45 KiB): Q, K, V, P (f16) and the f32 staging of S and P V (BM x (d + 4), BN <= d) must fit the
48 KiB a CUDA kernel gets without opting in (d = 64 with BN = 64 needs 54 KiB). ``SG`` is the
subgroup size the kernel is built for (its block is (BM // 16) * SG work-items; the registers
holding O are sized from it): 32 on NVIDIA (cuda, nvptx, Vulkan), 8 on the CPU; ``launch`` refuses a
device whose subgroup size differs.
"""
import math

import numpy as np

import polykern as pk
from polykern import Buffer, f16, f32, i32

PAD = 8  # f16 shared rows padded by 8 elements (16 bytes): conflict-free ldmatrix, as in gemm_f16
SPAD = 4  # f32 staging rows padded by 4 elements
LOG2E = 1.4426950408889634
NEG = -1.0e30  # the running max before any key (finite: 2^(NEG - m) is 0, never inf - inf)


@pk.func
def _stage_rows(dst: pk.Shared[f16], src: Buffer[f16, "readonly"], base: i32, row0: i32, seq: i32,
                ROWS: pk.constexpr, D: pk.constexpr, ASYNC: pk.constexpr):
    """Rows row0 .. row0 + ROWS - 1 of a (seq, D) matrix at ``src[base]`` into ``dst`` (rows of D + PAD),
    8 elements per work-item and step, spread over the group; rows past seq are zeros. ``ASYNC``:
    started as 16-byte ``pk.copy_async`` (the caller commits and waits), else loaded and stored."""
    e = pk.local_id(0) * 8
    while e < ROWS * D:
        r = e // D
        if row0 + r < seq:
            if ASYNC:
                pk.copy_async(dst, (r * (D + PAD) + e % D) // 8, src, (base + (row0 + r) * D + e % D) // 8, 8)
            else:
                x0, x1, x2, x3 = pk.vload(src, (base + (row0 + r) * D + e % D) // 4, 4)
                x4, x5, x6, x7 = pk.vload(src, (base + (row0 + r) * D + e % D) // 4 + 1, 4)
                pk.vstore(dst, (r * (D + PAD) + e % D) // 4, (x0, x1, x2, x3))
                pk.vstore(dst, (r * (D + PAD) + e % D) // 4 + 1, (x4, x5, x6, x7))
        else:
            for j in range(8):
                dst[r * (D + PAD) + e % D + j] = f16(0.0)
        e += pk.local_size(0) * 8


@pk.kernel
def attention_f16(q: Buffer[f16, "readonly"], k: Buffer[f16, "readonly"], v: Buffer[f16, "readonly"],
                  o: Buffer[f16], seq: i32, qk_scale: f32, D: pk.constexpr, BM: pk.constexpr, BN: pk.constexpr,
                  SG: pk.constexpr, LPR: pk.constexpr, RPL: pk.constexpr, CAUSAL: pk.constexpr,
                  ASYNC: pk.constexpr):
    sq = pk.shared(f16, BM * (D + PAD))
    sk = pk.shared(f16, BN * (D + PAD))
    sv = pk.shared(f16, BN * (D + PAD))
    ss = pk.shared(f32, BM * (D + SPAD))  # S (BN <= D columns), then the block product P V
    sp = pk.shared(f16, BM * (BN + PAD))
    sm = pk.shared(f32, BM)  # running max per row (base-2 scaled scores)
    sl = pk.shared(f32, BM)  # running sum
    sa = pk.shared(f32, BM)  # this block's alpha
    acc = pk.local(f32, 16 * D // SG)  # this work-item's part of O
    row_s = pk.local(f32, BN // LPR)
    fa = pk.frag_a(f16, 16, 16, 16)
    fb0 = pk.frag_b(f16, 16, 16, 16)
    fb1 = pk.frag_b(f16, 16, 16, 16)
    c0 = pk.frag_acc(f32, 16, 16, 16)
    c1 = pk.frag_acc(f32, 16, 16, 16)
    lane = pk.subgroup_local_id()
    wr = pk.subgroup_id() * 16  # this subgroup's first row in the tile
    bh = pk.group_id(1)
    q0 = pk.group_id(0) * BM
    base = bh * seq * D  # (batch * head)'s first element
    kend = seq
    if CAUSAL:
        kend = pk.min(seq, q0 + BM)
    # copies in flight, oldest first: Q + K_0, V_0; then per block K_j+1 (issued once S_j is done
    # with sk), V_j+1 (once P_j V_j is done with sv): each step waits for all but its newest group
    _stage_rows(sq, q, base, q0, seq, BM, D, ASYNC)
    _stage_rows(sk, k, base, 0, seq, BN, D, ASYNC)
    pk.copy_commit()
    _stage_rows(sv, v, base, 0, seq, BN, D, ASYNC)
    pk.copy_commit()
    if lane < 16 // RPL:
        for j in range(RPL):
            sm[wr + lane * RPL + j] = NEG
            sl[wr + lane * RPL + j] = 0.0
    for k0 in range(0, kend, BN):
        pk.copy_wait(1)  # this work-item's copies of K_j (and Q) are done; V_j may still be pending
        pk.barrier()
        # S = Q K^T for this subgroup's 16 rows, two 16-key column blocks at a time
        for n0 in range(0, BN, 32):
            pk.frag_fill(c0, 0.0)
            pk.frag_fill(c1, 0.0)
            for kk in range(0, D, 16):
                pk.frag_load(fa, sq, wr * (D + PAD) + kk, D + PAD)
                pk.frag_load(fb0, sk, n0 * (D + PAD) + kk, D + PAD, "col")
                pk.frag_load(fb1, sk, (n0 + 16) * (D + PAD) + kk, D + PAD, "col")
                c0 = pk.mma(fa, fb0, c0)
                c1 = pk.mma(fa, fb1, c1)
            pk.frag_store(ss, wr * (D + SPAD) + n0, D + SPAD, c0)
            pk.frag_store(ss, wr * (D + SPAD) + n0 + 16, D + SPAD, c1)
        pk.barrier()
        if k0 + BN < kend:
            _stage_rows(sk, k, base, k0 + BN, seq, BN, D, ASYNC)
        pk.copy_commit()
        # online softmax: each subgroup its own 16 rows, LPR lanes per row (combined by shuffles;
        # a lane takes every LPR-th column: the lanes' loads fall in distinct banks), RPL rows per lane
        for j in range(RPL):
            r = wr + lane // LPR * RPL + j
            part = lane % LPR
            for c in range(BN // LPR):
                row_s[c] = ss[r * (D + SPAD) + c * LPR + part]
            if k0 + BN > seq or (CAUSAL and k0 + BN > q0):  # the last block or the diagonal's: masks
                for c in range(BN // LPR):
                    ok = k0 + c * LPR + part < seq
                    if CAUSAL:
                        ok = ok and k0 + c * LPR + part <= q0 + r
                    row_s[c] = row_s[c] if ok else NEG
            m_blk = NEG
            for c in range(BN // LPR):
                m_blk = pk.max(m_blk, row_s[c])
            m_old = NEG  # the row's state is read and written by its first lane only
            if part == 0:
                m_old = sm[r]
            m_new = pk.max(m_old, m_blk * qk_scale)  # qk_scale > 0: the max of the scaled scores
            if LPR == 2:
                m_new = pk.max(m_new, pk.subgroup_shuffle_xor(m_new, 1))
            total = 0.0
            for c in range(BN // LPR):
                p = pk.exp2(pk.fma(row_s[c], qk_scale, -m_new))  # masked: 2^(-1e30 scale - m) = 0
                sp[r * (BN + PAD) + c * LPR + part] = f16(p)
                total += p
            if LPR == 2:
                total += pk.subgroup_shuffle_xor(total, 1)
            if part == 0:
                alpha = pk.exp2(m_old - m_new)
                sl[r] = sl[r] * alpha + total
                sm[r] = m_new
                sa[r] = alpha
        pk.copy_wait(1)  # V_j is done; K_j+1 may be pending
        pk.barrier()
        # the block product P V for this subgroup's rows, two 16-column blocks of d at a time
        for n0 in range(0, D, 32):
            pk.frag_fill(c0, 0.0)
            pk.frag_fill(c1, 0.0)
            for kk in range(0, BN, 16):
                pk.frag_load(fa, sp, wr * (BN + PAD) + kk, BN + PAD)
                pk.frag_load(fb0, sv, kk * (D + PAD) + n0, D + PAD)
                pk.frag_load(fb1, sv, kk * (D + PAD) + n0 + 16, D + PAD)
                c0 = pk.mma(fa, fb0, c0)
                c1 = pk.mma(fa, fb1, c1)
            pk.frag_store(ss, wr * (D + SPAD) + n0, D + SPAD, c0)
            pk.frag_store(ss, wr * (D + SPAD) + n0 + 16, D + SPAD, c1)
        pk.barrier()
        if k0 + BN < kend:
            _stage_rows(sv, v, base, k0 + BN, seq, BN, D, ASYNC)
        pk.copy_commit()
        # O = alpha O + P V on this subgroup's rows: a lane holds columns lane, lane + SG, ... of each
        for t in range(16 * D // SG):
            r = wr + t // (D // SG)
            acc[t] = acc[t] * sa[r] + ss[r * (D + SPAD) + lane + t % (D // SG) * SG]
    # O / l, rows past seq not written
    for t in range(16 * D // SG):
        r = wr + t // (D // SG)
        if q0 + r < seq:
            o[base + (q0 + r) * D + lane + t % (D // SG) * SG] = f16(acc[t] / sl[r])


@pk.kernel
def subgroup_width(out: Buffer[i32]):
    out[0] = pk.subgroup_size()


#: head dim -> (BM, BN): the tiles the GPU runs (see the module's docstring for why they differ)
CONFIGS = {64: (64, 32), 128: (32, 32)}
#: the subgroup sizes kernels() specializes for by default: NVIDIA's 32, the CPU's 8
SUBGROUPS = (32, 8)
#: how K and V reach shared memory: pk.copy_async (the default) or loads and stores
STAGINGS = ("async", "sync")


def kernel_for(d, sg, causal=False, tiles=None, staging="async"):
    """The specialization for head dim ``d``, subgroups of ``sg``; ``tiles`` (BM, BN): CONFIGS[d] by
    default; ``staging``: "async" (pk.copy_async: cp.async on cuda/nvptx) or "sync" (loads and stores)."""
    if staging not in STAGINGS:
        raise ValueError(f"attention_f16's staging is one of {STAGINGS}, not {staging!r}")
    bm, bn = tiles or CONFIGS[d]
    if bn > d or bm % 16 or bn % 32:
        raise ValueError(f"attention_f16 needs BN <= d (the f32 staging is d wide), BM a multiple of 16 and BN of 32; "
                         f"got BM={bm}, BN={bn}, d={d}")
    if sg not in (8, 16, 32):
        raise ValueError(f"attention_f16 is written for subgroups of 8, 16 or 32 work-items, not {sg}")
    lpr, rpl = max(1, sg // 16), max(1, 16 // sg)  # lanes per row, rows per lane in the softmax
    return attention_f16.specialize(D=d, BM=bm, BN=bn, SG=sg, LPR=lpr, RPL=rpl, CAUSAL=bool(causal),
                                    ASYNC=staging == "async")


def kernels(dims=(64, 128), subgroups=SUBGROUPS, causal=(False,), stagings=("async",), tiles=None):
    """The kernels to build: every head dim x subgroup size x causal x staging, and ``subgroup_width``
    (the default: what ``run`` launches on NVIDIA and on the CPU); ``tiles``: {d: (BM, BN)} other than
    CONFIGS'."""
    out = [kernel_for(d, sg, c, (tiles or {}).get(d), st) for d in dims for sg in subgroups for c in causal
           for st in stagings]
    return out + [subgroup_width]


def device_subgroup_size(mod) -> int:
    out = np.zeros(1, np.int32)
    mod["subgroup_width"](out, grid=1, block=1)
    return int(out[0])


def launch(mod, q, k, v, o, bh, seq, d, sg, causal=False, staging="async", tiles=None):
    """Run on ``mod`` for (bh, seq, d) arrays q, k, v -> o (flat f16, device or host arrays);
    ``tiles`` (BM, BN): a specialization other than CONFIGS[d] that ``mod`` holds."""
    if d not in CONFIGS:
        raise ValueError(f"attention_f16 is specialized for head dims {sorted(CONFIGS)}, got {d}")
    if sg not in SUBGROUPS:
        raise ValueError(f"attention_f16 is built for subgroups of {SUBGROUPS}; this device's are {sg} wide")
    bm, _ = tiles or CONFIGS[d]
    kern = kernel_for(d, sg, causal, tiles, staging)
    mod[kern.name](q, k, v, o, np.int32(seq), np.float32(LOG2E / math.sqrt(d)),
                   grid=((seq + bm - 1) // bm, bh), block=(bm // 16) * sg)


def reference(q, k, v, causal=False, rows=None):
    """softmax(q k^T / sqrt(d)) v in float64 and P, for q, k, v of shape (bh, seq, d); ``rows``: the
    query positions q's rows are (a sample; all by default), which the causal mask needs."""
    q64, k64, v64 = (np.asarray(x, np.float64) for x in (q, k, v))
    s = q64 @ k64.transpose(0, 2, 1) / math.sqrt(q64.shape[-1])
    if causal:
        rows = np.arange(q64.shape[1]) if rows is None else np.asarray(rows)
        s = np.where(np.arange(k64.shape[1])[None, :] <= rows[:, None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p @ v64, p


def error_bound(q, k, v, causal=False, rows=None):
    """(reference, how far a correct result may be from it elementwise): f16 rounding of P in P V
    (relative 2^-11 per element) normalized by the sum of the unrounded P (up to 2^-10 of P |V|),
    of the output (2^-11 |O|), the scores' mma error (numerics.mma_error_bound, which moves each p by
    up to 2 max|dS| / sqrt(d) relative) and the f32 block products and exp2 (2^-18 of P |V|)."""
    from polykern.numerics import mma_error_bound

    ref, p = reference(q, k, v, causal, rows)
    d = q.shape[-1]
    ds = np.stack([mma_error_bound("f32", q[i], k[i].T, np.zeros((q.shape[1], k.shape[1]))).max(-1)
                   for i in range(q.shape[0])]) / math.sqrt(d)  # (bh, rows): the worst score error of a row
    pv = p @ np.abs(np.asarray(v, np.float64))
    return ref, 2.0 ** -11 * np.abs(ref) + (2.0 ** -10 + 2.0 ** -18 + 2.0 * ds[..., None]) * pv + 1e-30


def check(out, q, k, v, causal=False) -> float:
    """The largest error of ``out`` (bh, seq, d) in units of ``error_bound`` (<= 1 passes)."""
    ref, bound = error_bound(q, k, v, causal)
    return float((np.abs(np.asarray(out, np.float64) - ref) / bound).max())


def run(mod, rng, bh=2, seq=80, causal=False):
    sg = device_subgroup_size(mod)
    lines = []
    for d in CONFIGS:
        q, k, v = (rng.standard_normal((bh, seq, d)).astype(np.float16) for _ in range(3))
        o = np.zeros((bh, seq, d), np.float16)
        launch(mod, q.ravel(), k.ravel(), v.ravel(), o.ravel(), bh, seq, d, sg, causal)
        worst = check(o, q, k, v, causal)
        assert worst <= 1.0, f"attention_f16 (d={d}) off by {worst:.2f} x the bound"
        lines.append(f"d={d}: {worst:.3f}")
    return (f"attention_f16: ({bh}, {seq}, d) f16{' causal' if causal else ''} OK, error of the bound "
            + ", ".join(lines))


if __name__ == "__main__":
    from _run import main

    raise SystemExit(main(kernels(), run))
