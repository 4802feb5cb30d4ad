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


# ---------------------------------------------------------------------------------------------------
# Tutorial-style kernels for benchmarks/gpu_peers.py: written as Triton's tutorials write them
# (vector add -> saxpy with BLOCK_SIZE 1024; fused softmax, one row per program, BLOCK_SIZE the next power
# of two of the row, 8/16 warps; layer-norm forward, _layer_norm_fwd_fused; matmul with grouped
# ordering, autotuned over block configurations, f32 in IEEE precision: no TF32).

MATMUL_CONFIGS = [  # (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps): the tutorial's CUDA set
    # without (128, 256, 64, 8, 3, 8), whose f32 tiles need more shared memory than an SM has
    (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4),
    (64, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4), (64, 32, 32, 8, 5, 2), (32, 64, 32, 8, 5, 2),
]


def tutorial_defs(matmul_configs=None):
    """{name: JITFunction or Autotuner}: the tutorial-style kernels (Triton imported here)."""
    import triton
    import triton.language as tl

    @triton.jit
    def saxpy_tutorial(x_ptr, y_ptr, a, n, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(y_ptr + offsets, a * x + y, mask=mask)

    @triton.jit
    def softmax_tutorial(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                         BLOCK_SIZE: tl.constexpr):
        row_idx = tl.program_id(0)
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets, softmax_output, mask=mask)

    @triton.jit
    def layernorm_tutorial(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        Y += row * stride
        X += row * stride
        mean = 0
        _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _mean += a
        mean = tl.sum(_mean, axis=0) / N
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            b = tl.load(B + cols, mask=mask)
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            x_hat = (x - mean) * rstd
            y = x_hat * w + b
            tl.store(Y + cols, y, mask=mask)

    configs = [triton.Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g},
                             num_stages=s, num_warps=w)
               for bm, bn, bk, g, s, w in (matmul_configs or MATMUL_CONFIGS)]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_tutorial(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                        stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                        BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator, input_precision="ieee")
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, accumulator, mask=c_mask)

    return {"saxpy": saxpy_tutorial, "softmax": softmax_tutorial, "layernorm": layernorm_tutorial,
            "matmul": matmul_tutorial}


def softmax_launch_shape(n_cols: int):
    """(BLOCK_SIZE, num_warps) as the fused-softmax tutorial picks them."""
    import triton

    block = triton.next_power_of_2(n_cols)
    return block, (16 if block >= 4096 else 8 if block >= 2048 else 4)


def layernorm_launch_shape(n_cols: int):
    """(BLOCK_SIZE, num_warps) as the layer-norm tutorial picks them (f32: 64 KB per feature block)."""
    import triton

    block = min(65536 // 4, triton.next_power_of_2(n_cols))
    if n_cols > block:
        raise ValueError("the layer-norm tutorial supports feature dimensions below 64 KB only")
    return block, min(max(block // 256, 1), 8)


TUTORIAL_SIGNATURES = {  # for compiling them ahead of time without a GPU (benchmarks/gpu_peers.py --dry-run)
    "saxpy": ({"x_ptr": "*fp32", "y_ptr": "*fp32", "a": "fp32", "n": "i32", "BLOCK_SIZE": "constexpr"},
              {"BLOCK_SIZE": 1024}, 4),
    "softmax": ({"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                 "output_row_stride": "i32", "n_cols": "i32", "BLOCK_SIZE": "constexpr"}, {"BLOCK_SIZE": 4096}, 16),
    "layernorm": ({"X": "*fp32", "Y": "*fp32", "W": "*fp32", "B": "*fp32", "Mean": "*fp32", "Rstd": "*fp32",
                   "stride": "i32", "N": "i32", "eps": "fp32", "BLOCK_SIZE": "constexpr"}, {"BLOCK_SIZE": 4096}, 8),
    "matmul": ({"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
                "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32",
                "stride_cn": "i32", "BLOCK_SIZE_M": "constexpr", "BLOCK_SIZE_N": "constexpr",
                "BLOCK_SIZE_K": "constexpr", "GROUP_SIZE_M": "constexpr"},
               {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, 4),
}


def compile_tutorial(name: str, arch: int = 90):
    """Ahead-of-time compile of a tutorial kernel for sm_<arch> (no GPU needed): a typo check."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = tutorial_defs()[name]
    fn = fn.fn if hasattr(fn, "configs") else fn  # the JITFunction under an Autotuner
    sig, consts, warps = TUTORIAL_SIGNATURES[name]
    src = ASTSource(fn=fn, signature=sig, constexprs=consts)
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": warps})
