"""The benchmark kernels in Triton, compiled ahead of time for ``GPUTarget("cuda", 90, 32)``
(Hopper, as polykern's ``cuda -arch=sm_90``/``nvptx -arch=sm_90``). This needs no GPU: Triton's
NVIDIA backend ships ptxas, so a CPU-only host produces the cubin; only launching needs the
driver (that part is in gpu.py). Uncached: ``TRITON_ALWAYS_COMPILE=1`` must be set before import
by the caller for warm figures."""
from __future__ import annotations

BLOCK = 256
TILE = 32


def _defs():
    import triton
    import triton.language as tl

    @triton.jit
    def saxpy(x_ptr, y_ptr, a, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        y = tl.load(y_ptr + offs, mask=m)
        tl.store(y_ptr + offs, a * x + y, mask=m)

    @triton.jit
    def reduction(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.atomic_add(out_ptr, tl.sum(x, axis=0))

    @triton.jit
    def matmul(a_ptr, b_ptr, c_ptr, m, n, k, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(1) * BM + tl.arange(0, BM)
        rn = tl.program_id(0) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, k, BK):
            a = tl.load(a_ptr + rm[:, None] * k + (k0 + rk)[None, :],
                        mask=(rm[:, None] < m) & ((k0 + rk)[None, :] < k), other=0.0)
            b = tl.load(b_ptr + (k0 + rk)[:, None] * n + rn[None, :],
                        mask=((k0 + rk)[:, None] < k) & (rn[None, :] < n), other=0.0)
            acc += tl.dot(a, b, input_precision="ieee")
        tl.store(c_ptr + rm[:, None] * n + rn[None, :], acc, mask=(rm[:, None] < m) & (rn[None, :] < n))

    @triton.jit
    def stencil(src_ptr, dst_ptr, h, w, BLOCK: tl.constexpr):
        y = tl.program_id(1)
        x = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        inside = x < w
        i = y * w + x
        c = tl.load(src_ptr + i, mask=inside, other=0.0)
        edge = (x == 0) | (y == 0) | (x == w - 1) | (y == h - 1)
        core = inside & (edge == 0)
        l = tl.load(src_ptr + i - 1, mask=core, other=0.0)
        r = tl.load(src_ptr + i + 1, mask=core, other=0.0)
        u = tl.load(src_ptr + i - w, mask=core, other=0.0)
        d = tl.load(src_ptr + i + w, mask=core, other=0.0)
        tl.store(dst_ptr + i, tl.where(edge, c, 0.2 * (c + l + r + u + d)), mask=inside)

    return {"saxpy": saxpy, "reduction": reduction, "matmul": matmul, "stencil": stencil}


SIGNATURES = {
    "saxpy": ({"x_ptr": "*fp32", "y_ptr": "*fp32", "a": "fp32", "n": "i32", "BLOCK": "constexpr"},
              {"BLOCK": BLOCK}),
    "reduction": ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": BLOCK}),
    "matmul": ({"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "m": "i32", "n": "i32", "k": "i32",
                "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}, {"BM": TILE, "BN": TILE, "BK": TILE}),
    "stencil": ({"src_ptr": "*fp32", "dst_ptr": "*fp32", "h": "i32", "w": "i32", "BLOCK": "constexpr"},
                {"BLOCK": BLOCK}),
}


def kernels():
    return _defs()


def compile_kernel(name: str, arch: int = 90):
    """Ahead-of-time compile to a cubin (no GPU needed); returns Triton's CompiledKernel."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig, consts = SIGNATURES[name]
    src = ASTSource(fn=_defs()[name], signature=sig, constexprs=consts)
    return triton.compile(src, target=GPUTarget("cuda", arch, 32))


def version():
    import triton

    return triton.__version__
