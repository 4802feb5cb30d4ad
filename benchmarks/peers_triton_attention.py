"""A Triton attention forward for benchmarks/gpu_attention.py, written for this benchmark (not the
tutorial's): one program per BM query rows of one (batch, head), a loop over blocks of BN keys with
the online softmax (base 2) and f32 accumulators, ``tl.dot`` for Q K^T and P V, P cast to f16 before
the second product, O / l stored as f16. Same layout as examples/attention_f16.py: (bh, seq, d)
contiguous. Triton is imported only when the kernel is asked for."""
from __future__ import annotations

#: head dim -> (BM, BN, num_warps, num_stages): fixed, no autotuning (the GPU budget is minutes)
CONFIGS = {64: (128, 64, 4, 3), 128: (128, 64, 8, 2)}


def _defs():
    import triton
    import triton.language as tl

    @triton.jit
    def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq, qk_scale, D: tl.constexpr, BM: tl.constexpr,
                      BN: tl.constexpr, CAUSAL: tl.constexpr):
        bh = tl.program_id(1)
        q0 = tl.program_id(0) * BM
        base = bh.to(tl.int64) * seq * D
        rows = q0 + tl.arange(0, BM)
        cols = tl.arange(0, D)
        q = tl.load(q_ptr + base + rows[:, None] * D + cols[None, :], mask=rows[:, None] < seq, other=0.0)
        m = tl.full((BM,), -1.0e30, tl.float32)
        l = tl.zeros((BM,), tl.float32)
        acc = tl.zeros((BM, D), tl.float32)
        end = seq
        if CAUSAL:
            end = tl.minimum(seq, q0 + BM)
        for k0 in range(0, end, BN):
            keys = k0 + tl.arange(0, BN)
            kt = tl.load(k_ptr + base + keys[None, :] * D + cols[:, None], mask=keys[None, :] < seq, other=0.0)
            s = tl.dot(q, kt) * qk_scale
            ok = keys[None, :] < seq
            if CAUSAL:
                ok = ok & (keys[None, :] <= rows[:, None])
            s = tl.where(ok, s, -1.0e30)
            m_new = tl.maximum(m, tl.max(s, 1))
            alpha = tl.exp2(m - m_new)
            p = tl.where(ok, tl.exp2(s - m_new[:, None]), 0.0)
            l = l * alpha + tl.sum(p, 1)
            vb = tl.load(v_ptr + base + keys[:, None] * D + cols[None, :], mask=keys[:, None] < seq, other=0.0)
            acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), vb)
            m = m_new
        out = acc / l[:, None]
        tl.store(o_ptr + base + rows[:, None] * D + cols[None, :], out.to(tl.float16), mask=rows[:, None] < seq)

    return attention_fwd


_KERNEL = []


def kernel():
    if not _KERNEL:
        _KERNEL.append(_defs())
    return _KERNEL[0]


def launch(q, k, v, o, bh: int, seq: int, d: int, qk_scale: float, causal: bool = False):
    """q, k, v, o: torch f16 tensors on the GPU, (bh, seq, d) contiguous; ``qk_scale`` = log2(e) / sqrt(d)."""
    bm, bn, warps, stages = CONFIGS[d]
    kernel()[((seq + bm - 1) // bm, bh)](q, k, v, o, seq, qk_scale, D=d, BM=bm, BN=bn, CAUSAL=causal,
                                         num_warps=warps, num_stages=stages)


def compile_for(d: int, arch: int = 90, causal: bool = False):
    """Ahead-of-time compile for sm_<arch> (no GPU needed: a check that the kernel is valid Triton)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    bm, bn, warps, stages = CONFIGS[d]
    sig = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "seq": "i32", "qk_scale": "fp32",
           "D": "constexpr", "BM": "constexpr", "BN": "constexpr", "CAUSAL": "constexpr"}
    src = ASTSource(fn=kernel(), signature=sig, constexprs={"D": d, "BM": bm, "BN": bn, "CAUSAL": causal})
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": warps,
                                                                            "num_stages": stages})
