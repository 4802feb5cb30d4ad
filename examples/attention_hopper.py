"""Attention forward on Hopper's matrix path (docs/language.md "Hopper: warpgroup MMA, tensor copies,
transaction barriers"): O = softmax(Q K^T * scale) V per head, f16 (or bf16) inputs, f32 accumulation,
O f16; Q, K, V and O are (heads * seq) x D row-major (one head's seq rows after the other's), D 64 or 128,
optionally causal (row r of a head attends to columns 0 .. r).

One block computes 128 rows of one head with three warpgroups: warpgroup 0 is the producer (one work-item
copies the block's Q once and the K and V tiles of each BN-column step into a ring of STAGES shared
stages, guarded by "full" and "empty" transaction barriers), warpgroups 1 and 2 are consumers, 64 rows
each. A consumer step: S = Q K^T by wgmma from shared memory, the online softmax on S's registers
(``pk.wg_row_max``, per-row rescale in ``pk.wg_rows``, ``exp2`` in ``pk.wg_elements``, ``pk.wg_row_sum``),
O rescaled, then O += P V by ``pk.wgmma_kn`` with P taken from S's registers (rounded to 16 bits) and V
read as a K x N tile. The producer gives registers back so the consumers can hold S and O.

    python examples/attention_hopper.py      # on the CPU (the IR interpreter): small sizes, against float64
    polykern compile examples/attention_hopper.py --target "cuda -arch=sm_90a" -o a.kbin
"""
import math

import numpy as np

import polykern as pk
from polykern import Buffer, f16, f32, i32

BM = 128
NEG_INF = float("-inf")
#: Why tests/test_native.py's loop over the examples skips this one, as for examples/gemm_hopper.py.
NOT_NATIVE = "Hopper kernels build for cuda/nvptx -arch=sm_90a only (libpolykern runs them on an H100/H200)"


def make_attention(D: int = 128, CAUSAL: bool = False, BN: int = 128, STAGES: int = 2, dtype=f16):
    """The kernel for head dimension D (64 or 128), BN key columns a step, STAGES K/V stages."""
    P = D // 64                 # 64-column panels of a Q, K or V tile (a 128-byte swizzled box row is 64 columns)
    Q_ELEMS = P * BM * 64
    KV_ELEMS = P * BN * 64      # one K (or V) tile

    @pk.kernel
    def attention_hopper(seq: i32, rows: i32, scale_log2: f32, Q: Buffer[dtype, "readonly"],
                         K: Buffer[dtype, "readonly"], V: Buffer[dtype, "readonly"], O: Buffer[f16]):
        pk.warpgroups(3)
        tq = pk.tensor_map(Q, (rows, D), (BM, 64), "128B")
        tk = pk.tensor_map(K, (rows, D), (BN, 64), "128B")
        tv = pk.tensor_map(V, (rows, D), (BN, 64), "128B")
        tiles = pk.shared_dynamic(dtype)        # Q, then STAGES x (K tile, V tile)
        qbar = pk.mbarriers(1)
        full = pk.mbarriers(STAGES)
        empty = pk.mbarriers(STAGES)
        S = pk.wg_acc(f32, 64, BN)
        Oacc = pk.wg_acc(f32, 64, D)
        m = pk.wg_vec(f32)
        l = pk.wg_vec(f32)
        alpha = pk.wg_vec(f32)
        red = pk.wg_vec(f32)
        wg = pk.warpgroup_id()
        t = pk.local_id(0) % 128
        q0 = pk.group_id(0) * BM                # the block's first row within its head
        head0 = pk.group_id(1) * seq            # the head's first row of Q, K, V, O
        steps = seq // BN
        if CAUSAL:
            steps = (q0 + BM) // BN
        if pk.local_id(0) == 0:
            pk.mbarrier_init(qbar, 0, 1)
            for s in range(STAGES):
                pk.mbarrier_init(full, s, 1)
                pk.mbarrier_init(empty, s, 2)
        pk.barrier()
        if wg == 0:
            pk.setmaxnreg(24, "dec")
            if t == 0:
                pk.mbarrier_arrive_tx(qbar, 0, Q_ELEMS * 2)
                for p in range(P):
                    pk.tma_load(tiles, p * BM * 64, tq, head0 + q0, p * 64, qbar, 0)
                for it in range(steps):
                    s = it % STAGES
                    if it >= STAGES:
                        pk.mbarrier_wait(empty, s, (it // STAGES - 1) % 2)
                    pk.mbarrier_arrive_tx(full, s, 2 * KV_ELEMS * 2)
                    base = Q_ELEMS + s * 2 * KV_ELEMS
                    for p in range(P):
                        pk.tma_load(tiles, base + p * BN * 64, tk, head0 + it * BN, p * 64, full, s)
                        pk.tma_load(tiles, base + KV_ELEMS + p * BN * 64, tv, head0 + it * BN, p * 64, full, s)
        else:
            pk.setmaxnreg(240, "inc")
            c = wg - 1
            r0 = q0 + c * 64                    # this consumer's first row within the head
            for i in pk.wg_rows():
                m[i] = NEG_INF
                l[i] = 0.0
            pk.wg_fill(Oacc, 0.0)
            pk.mbarrier_wait(qbar, 0, 0)
            for it in range(steps):
                s = it % STAGES
                pk.mbarrier_wait(full, s, (it // STAGES) % 2)
                base = Q_ELEMS + s * 2 * KV_ELEMS
                pk.wg_fill(S, 0.0)
                for kk in range(D // 16):
                    qa = (kk // 4) * BM * 64 + c * 64 * 64 + (kk % 4) * 16
                    pk.wgmma(S, tiles, qa, tiles, base + (kk // 4) * BN * 64 + (kk % 4) * 16)
                pk.wgmma_commit()
                pk.wgmma_wait(0)
                if CAUSAL and (it + 1) * BN > r0:   # a step that reaches past the diagonal of these rows
                    for i, j in pk.wg_elements(S):
                        if it * BN + j > r0 + i:
                            S[i, j] = NEG_INF
                pk.wg_row_max(red, S)
                for i in pk.wg_rows():
                    mn = pk.max(m[i], red[i] * scale_log2)
                    alpha[i] = pk.exp2(m[i] - mn)
                    m[i] = mn
                for i, j in pk.wg_elements(S):
                    S[i, j] = pk.exp2(S[i, j] * scale_log2 - m[i])
                pk.wg_row_sum(red, S)
                for i in pk.wg_rows():
                    l[i] = l[i] * alpha[i] + red[i]
                for i, j in pk.wg_elements(Oacc):
                    Oacc[i, j] = Oacc[i, j] * alpha[i]
                for kk in range(BN // 16):
                    pk.wgmma_kn(Oacc, S, kk * 16, tiles, base + KV_ELEMS + kk * 16 * 64, BN * 64)
                pk.wgmma_commit()
                pk.wgmma_wait(0)
                if t == 0:
                    pk.mbarrier_arrive(empty, s)
            for i, j in pk.wg_elements(Oacc):
                Oacc[i, j] = Oacc[i, j] / l[i]
            pk.wg_store(O, (head0 + r0) * D, D, Oacc)

    return attention_hopper


def shared_elems(D: int = 128, BN: int = 128, STAGES: int = 2) -> int:
    """Elements of the dynamic shared array: the Q tile and STAGES stages of one K and one V tile."""
    return (D // 64) * 64 * (BM + 2 * STAGES * BN)


def launch_args(q, k, v, o, heads: int, seq: int, D: int):
    """The kernel's arguments after (grid, block): (seq, rows, scale * log2(e), Q, K, V, O)."""
    return [seq, heads * seq, np.float32(math.log2(math.e) / math.sqrt(D)), q, k, v, o]


#: The default kernels (D 128, BN 128, 2 stages, f16), so that `polykern compile examples/attention_hopper.py
#: --target "cuda -arch=sm_90a" -o a.kbin` finds them.
attention_hopper = make_attention()
attention_hopper_causal = make_attention(CAUSAL=True)


def reference(q, k, v, heads: int, seq: int, D: int, causal: bool) -> np.ndarray:
    """float64 attention of (heads * seq) x D inputs."""
    q64, k64, v64 = (np.asarray(x, np.float64).reshape(heads, seq, D) for x in (q, k, v))
    s = q64 @ k64.transpose(0, 2, 1) / math.sqrt(D)
    if causal:
        s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ v64).reshape(heads * seq, D)


def run_on_cpu(heads: int = 1, seq: int = 256, D: int = 64, causal: bool = False, BN: int = 64, STAGES: int = 2,
               seed: int = 0):
    """The kernel on the IR interpreter (every rule of docs/language.md 5.3 checked): (q, k, v, O)."""
    from polykern.testing.interp import interpret

    rng = np.random.default_rng(seed)
    q, k, v = (rng.uniform(-1, 1, (heads * seq, D)).astype(np.float16) for _ in range(3))
    o = np.zeros(heads * seq * D, np.float16)
    kern = make_attention(D, causal, BN, STAGES)
    args = launch_args(q.reshape(-1), k.reshape(-1), v.reshape(-1), o, heads, seq, D)
    out = interpret(kern, args + [shared_elems(D, BN, STAGES)], (seq // BM, heads), 3 * 128)
    return q, k, v, out.buffers["O"].reshape(heads * seq, D)


if __name__ == "__main__":
    import os
    import tempfile

    ok = True
    for causal in (False, True):
        heads, seq, D = 1, 256, 64
        q, k, v, o = run_on_cpu(heads, seq, D, causal)
        ref = reference(q, k, v, heads, seq, D, causal)
        err = np.abs(o.astype(np.float64) - ref).max()
        good = err <= 2e-3   # f16 P and O roundings on values of magnitude <= 1
        ok &= bool(good)
        print(f"IR interpreter, {heads} head, seq {seq}, D {D}, {'causal' if causal else 'full'}: max |O - float64| = "
              f"{err:.3g} -> {'ok' if good else 'FAILED'}")
    src = pk.build(make_attention(), targets="cuda -arch=sm_90a -fmt=cuda").on("cuda").inspect_source("cuda")
    path = os.path.join(tempfile.gettempdir(), "attention_hopper.cu")
    with open(path, "w") as f:
        f.write(src)
    print(f"CUDA C for cuda -arch=sm_90a (D 128, BN 128, 2 stages): {path} ({len(src.splitlines())} lines)")
    if not ok:
        raise SystemExit(1)
