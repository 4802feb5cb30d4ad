"""polykern kernels written the way the language lets a user write them (docs/language.md): grid-stride loops over wide
(``pk.vload``/``pk.vstore``, 4 x f32) accesses, subgroup reductions (``pk.subgroup_add``/``_max``)
combined across a work-group in shared memory by a ``@pk.func``, a second pass instead of atomics
(deterministic, like CUB), constexpr block/tile sizes (``kernel.specialize``) and register tiles
in ``pk.local`` arrays indexed by unrolled constexpr loops.

The same source builds for every target; benchmarks/gpu_peers.py times it on CUDA (cuda, nvptx)
and Vulkan, benchmarks/cpu_peers.py on the CPU (llvm). Layout rules the launchers check: the
row kernels and the stencil need a multiple of 4 columns, the matmul multiples of its tiles.

The lanes of a subgroup are ``pk.subgroup_size()`` (an llvm internal error with it in kernels with
barriers, worked around here with ``pk.subgroup_add(1)`` until 22:30 UTC, is fixed).
"""
# No ``from __future__ import annotations``: polykern evaluates kernel annotations as objects.
import polykern as pk
from polykern import Buffer, f32, i32

LOWEST = -3.4028234663852886e38  # -FLT_MAX: the identity of max over finite f32 data
LOG2E = 1.4426950408889634


# ------------------------------------------------------------------ work-group reductions

@pk.func
def group_max_once(v: f32, sh: pk.Shared[f32]) -> f32:
    """The maximum of ``v`` over the work-group, in every work-item: ``pk.subgroup_max``, one partial per
    subgroup in ``sh``, one barrier, the partials reduced again by every subgroup. No trailing barrier:
    ``sh`` must not be written again in this launch (each reduction of a kernel gets its own array)."""
    s = pk.subgroup_max(v)
    sgs = pk.subgroup_size()
    if pk.subgroup_local_id() == 0:
        sh[pk.subgroup_id()] = s
    pk.barrier()
    nsg = (pk.local_size(0) * pk.local_size(1) + sgs - 1) // sgs
    t = LOWEST
    j = pk.subgroup_local_id()
    while j < nsg:
        t = pk.max(t, sh[j])
        j += sgs
    return pk.subgroup_max(t)


@pk.func
def group_add_once(v: f32, sh: pk.Shared[f32]) -> f32:
    """The sum of ``v`` over the work-group, in every work-item (as :func:`group_max_once`: one barrier,
    ``sh`` used once)."""
    s = pk.subgroup_add(v)
    sgs = pk.subgroup_size()
    if pk.subgroup_local_id() == 0:
        sh[pk.subgroup_id()] = s
    pk.barrier()
    nsg = (pk.local_size(0) * pk.local_size(1) + sgs - 1) // sgs
    t = 0.0
    j = pk.subgroup_local_id()
    while j < nsg:
        t += sh[j]
        j += sgs
    return pk.subgroup_add(t)


# ------------------------------------------------------------------ whole-array reductions (2 passes)

@pk.kernel
def sum_pass(BLOCK: pk.constexpr, U: pk.constexpr, n: i32, x: Buffer[f32, "readonly"], xt: Buffer[f32, "readonly"],
             part: Buffer[f32]):
    """part[group] = sum of this group's grid-stride share of x: U float4 loads in flight per work-item
    per step (each into its own accumulator, so the loads do not wait for each other's adds). ``xt`` is
    the same array, for the n % 4 elements past the last float4: x itself is touched only by float4
    groups, so Vulkan and WebGPU declare it an array of vec4 (16-byte loads; a scalar access anywhere
    would make every access scalar there, ir/vector.py)."""
    sh = pk.shared(f32, BLOCK)
    acc = pk.local(f32, U)
    for u in range(U):
        acc[u] = 0.0
    stride = pk.num_groups(0) * BLOCK
    n4 = n // 4
    k = pk.global_id(0)
    while k + (U - 1) * stride < n4:
        for u in range(U):
            a0, a1, a2, a3 = pk.vload(x, k + u * stride, 4)
            acc[u] += (a0 + a1) + (a2 + a3)
        k += U * stride
    while k < n4:
        a0, a1, a2, a3 = pk.vload(x, k, 4)
        acc[0] += (a0 + a1) + (a2 + a3)
        k += stride
    t = n4 * 4 + pk.global_id(0)
    if t < n:
        acc[0] += xt[t]
    s = 0.0
    for u in range(U):
        s += acc[u]
    total = group_add_once(s, sh)
    if pk.local_id(0) == 0:
        part[pk.group_id(0)] = total


@pk.kernel
def max_pass(BLOCK: pk.constexpr, n: i32, x: Buffer[f32, "readonly"], xt: Buffer[f32, "readonly"],
             part: Buffer[f32]):
    """part[group] = max of this group's grid-stride share of x (``xt``: x again, for the tail; see sum_pass)."""
    sh = pk.shared(f32, BLOCK)
    stride = pk.num_groups(0) * BLOCK
    n4 = n // 4
    k = pk.global_id(0)
    m0 = LOWEST
    m1 = LOWEST
    while k + stride < n4:
        a0, a1, a2, a3 = pk.vload(x, k, 4)
        b0, b1, b2, b3 = pk.vload(x, k + stride, 4)
        m0 = pk.max(m0, pk.max(pk.max(a0, a1), pk.max(a2, a3)))
        m1 = pk.max(m1, pk.max(pk.max(b0, b1), pk.max(b2, b3)))
        k += 2 * stride
    if k < n4:
        a0, a1, a2, a3 = pk.vload(x, k, 4)
        m0 = pk.max(m0, pk.max(pk.max(a0, a1), pk.max(a2, a3)))
    t = n4 * 4 + pk.global_id(0)
    if t < n:
        m1 = pk.max(m1, xt[t])
    total = group_max_once(pk.max(m0, m1), sh)
    if pk.local_id(0) == 0:
        part[pk.group_id(0)] = total


@pk.func
def sqdev4(a0: f32, a1: f32, a2: f32, a3: f32, mean: f32) -> f32:
    """Sum of the squared deviations of four values from ``mean``."""
    d0 = a0 - mean
    d1 = a1 - mean
    d2 = a2 - mean
    d3 = a3 - mean
    return (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)


@pk.kernel
def sqdev_pass(BLOCK: pk.constexpr, n: i32, x: Buffer[f32, "readonly"], xt: Buffer[f32, "readonly"],
               stats: Buffer[f32, "readonly"], part: Buffer[f32]):
    """part[group] = sum of (x - stats[0])^2 over this group's share (the variance's second pass; ``xt``:
    x again, for the tail; see sum_pass)."""
    sh = pk.shared(f32, BLOCK)
    mean = stats[0]
    stride = pk.num_groups(0) * BLOCK
    n4 = n // 4
    k = pk.global_id(0)
    acc0 = 0.0
    acc1 = 0.0
    while k + stride < n4:
        a0, a1, a2, a3 = pk.vload(x, k, 4)
        b0, b1, b2, b3 = pk.vload(x, k + stride, 4)
        acc0 += sqdev4(a0, a1, a2, a3, mean)
        acc1 += sqdev4(b0, b1, b2, b3, mean)
        k += 2 * stride
    if k < n4:
        a0, a1, a2, a3 = pk.vload(x, k, 4)
        acc0 += sqdev4(a0, a1, a2, a3, mean)
    t = n4 * 4 + pk.global_id(0)
    if t < n:
        d = xt[t] - mean
        acc1 += d * d
    total = group_add_once(acc0 + acc1, sh)
    if pk.local_id(0) == 0:
        part[pk.group_id(0)] = total


@pk.func
def dev4(a0: f32, a1: f32, a2: f32, a3: f32, shift: f32) -> f32:
    """Sum of the deviations of four values from ``shift`` (with :func:`sqdev4`'s, the subtractions are shared
    once both are inlined)."""
    return ((a0 - shift) + (a1 - shift)) + ((a2 - shift) + (a3 - shift))


@pk.kernel
def shifted_sums_pass(BLOCK: pk.constexpr, n: i32, x: Buffer[f32, "readonly"], xt: Buffer[f32, "readonly"],
                      part: Buffer[f32]):
    """Mean and variance in one pass over x: part[g] = the sum of d = x - K and part[num_groups + g] = the sum of
    d * d over group g's grid-stride share, K = x[0] (shifted data: no cancellation when the mean is far from 0,
    as layernorm_rows does per row); ``meanvar_finish`` combines them. ``xt``: x again, for K and the tail
    (see sum_pass)."""
    sh = pk.shared(f32, BLOCK)
    sh2 = pk.shared(f32, BLOCK)
    shift = xt[0]
    stride = pk.num_groups(0) * BLOCK
    n4 = n // 4
    k = pk.global_id(0)
    s0 = 0.0
    q0 = 0.0
    s1 = 0.0
    q1 = 0.0
    while k + stride < n4:
        a0, a1, a2, a3 = pk.vload(x, k, 4)
        b0, b1, b2, b3 = pk.vload(x, k + stride, 4)
        s0 += dev4(a0, a1, a2, a3, shift)
        q0 += sqdev4(a0, a1, a2, a3, shift)
        s1 += dev4(b0, b1, b2, b3, shift)
        q1 += sqdev4(b0, b1, b2, b3, shift)
        k += 2 * stride
    if k < n4:
        a0, a1, a2, a3 = pk.vload(x, k, 4)
        s0 += dev4(a0, a1, a2, a3, shift)
        q0 += sqdev4(a0, a1, a2, a3, shift)
    t = n4 * 4 + pk.global_id(0)
    if t < n:
        d = xt[t] - shift
        s1 += d
        q1 += d * d
    ts = group_add_once(s0 + s1, sh)
    tq = group_add_once(q0 + q1, sh2)
    if pk.local_id(0) == 0:
        part[pk.group_id(0)] = ts
        part[pk.num_groups(0) + pk.group_id(0)] = tq


@pk.kernel
def meanvar_finish(BLOCK: pk.constexpr, nparts: i32, part: Buffer[f32, "readonly"], xt: Buffer[f32, "readonly"],
                   out: Buffer[f32], inv_n: f32):
    """out[0] = the mean, out[1] = the variance (ddof 0) from shifted_sums_pass's partial sums (one work-group):
    with s and q the sums of d = x - x[0] and d * d, mean = x[0] + s / n, variance = q / n - (s / n)^2."""
    sh = pk.shared(f32, BLOCK)
    sh2 = pk.shared(f32, BLOCK)
    s = 0.0
    q = 0.0
    j = pk.local_id(0)
    while j < nparts:
        s += part[j]
        q += part[nparts + j]
        j += BLOCK
    ts = group_add_once(s, sh)
    tq = group_add_once(q, sh2)
    if pk.local_id(0) == 0:
        md = ts * inv_n
        out[0] = xt[0] + md
        out[1] = pk.max(tq * inv_n - md * md, 0.0)


@pk.kernel
def sum_chunks(BLOCK: pk.constexpr, n: i32, x: Buffer[f32, "readonly"], part: Buffer[f32]):
    """The CPU's shape of sum_pass: each work-item sums one contiguous chunk of float4 groups into four
    per-lane accumulators (a prefetch-friendly stream per core; the lanes vectorize), then the group
    reduces as sum_pass does. On a GPU the same layout would not coalesce."""
    sh = pk.shared(f32, BLOCK)
    items = pk.num_groups(0) * BLOCK
    n4 = n // 4
    per = (n4 + items - 1) // items
    k = pk.global_id(0) * per
    end = pk.min(k + per, n4)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    while k < end:
        a0, a1, a2, a3 = pk.vload(x, k, 4)
        s0 += a0
        s1 += a1
        s2 += a2
        s3 += a3
        k += 1
    t = n4 * 4 + pk.global_id(0)
    if t < n:
        s0 += x[t]
    total = group_add_once((s0 + s1) + (s2 + s3), sh)
    if pk.local_id(0) == 0:
        part[pk.group_id(0)] = total


@pk.kernel
def sum_finish(BLOCK: pk.constexpr, nparts: i32, part: Buffer[f32, "readonly"], out: Buffer[f32], slot: i32,
               scale: f32):
    """out[slot] = scale * sum(part[:nparts]) (one work-group)."""
    sh = pk.shared(f32, BLOCK)
    acc = 0.0
    j = pk.local_id(0)
    while j < nparts:
        acc += part[j]
        j += BLOCK
    total = group_add_once(acc, sh)
    if pk.local_id(0) == 0:
        out[slot] = total * scale


@pk.kernel
def max_finish(BLOCK: pk.constexpr, nparts: i32, part: Buffer[f32, "readonly"], out: Buffer[f32]):
    """out[0] = max(part[:nparts]) (one work-group)."""
    sh = pk.shared(f32, BLOCK)
    m = LOWEST
    j = pk.local_id(0)
    while j < nparts:
        m = pk.max(m, part[j])
        j += BLOCK
    total = group_max_once(m, sh)
    if pk.local_id(0) == 0:
        out[0] = total


# ------------------------------------------------------------------ elementwise and stencil

@pk.kernel
def saxpy_wide(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    """y = a * x + y on the first n // 4 * 4 elements, 4 per work-item per step of a grid-stride loop
    (float4 loads/stores only: an array of vec4 on Vulkan/WebGPU); :func:`saxpy_tail` does the rest."""
    stride = pk.num_groups(0) * pk.local_size(0)
    n4 = n // 4
    k = pk.global_id(0)
    while k < n4:
        x0, x1, x2, x3 = pk.vload(x, k, 4)
        y0, y1, y2, y3 = pk.vload(y, k, 4)
        pk.vstore(y, k, (a * x0 + y0, a * x1 + y1, a * x2 + y2, a * x3 + y3))
        k += stride


@pk.kernel
def saxpy_tail(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    """y = a * x + y on the n % 4 elements past saxpy_wide's last float4 (launched only when there are any)."""
    t = n // 4 * 4 + pk.global_id(0)
    if t < n:
        y[t] = a * x[t] + y[t]


@pk.kernel
def jacobi_wide(h: i32, w: i32, src: Buffer[f32, "readonly"], srcs: Buffer[f32, "readonly"], dst: Buffer[f32]):
    """5-point Jacobi step (edges copied), 4 consecutive points of a row per work-item: float4 loads of
    the row and of the rows above and below, two scalar loads for the outer neighbours through ``srcs``
    (the same array: src is touched only by float4 groups, an array of vec4 on Vulkan/WebGPU, see
    sum_pass); w % 4 == 0."""
    q = pk.global_id(0)
    y = pk.global_id(1)
    w4 = w // 4
    if q < w4 and y < h:
        v = y * w4 + q
        c0, c1, c2, c3 = pk.vload(src, v, 4)
        if y == 0 or y == h - 1:
            pk.vstore(dst, v, (c0, c1, c2, c3))
        else:
            u0, u1, u2, u3 = pk.vload(src, v - w4, 4)
            d0, d1, d2, d3 = pk.vload(src, v + w4, 4)
            x0 = q * 4
            i = y * w + x0
            left = srcs[i - 1] if x0 > 0 else c0
            right = srcs[i + 4] if x0 + 4 < w else c3
            o0 = 0.2 * (c0 + left + c1 + u0 + d0)
            o1 = 0.2 * (c1 + c0 + c2 + u1 + d1)
            o2 = 0.2 * (c2 + c1 + c3 + u2 + d2)
            o3 = 0.2 * (c3 + c2 + right + u3 + d3)
            pk.vstore(dst, v, (c0 if x0 == 0 else o0, o1, o2, c3 if x0 + 4 == w else o3))


# ------------------------------------------------------------------ rows: softmax, layer norm

@pk.kernel
def softmax_rows(BLOCK: pk.constexpr, VPT: pk.constexpr, ncols: i32, x: Buffer[f32, "readonly"],
                 out: Buffer[f32]):
    """out[r] = softmax(x[r]), the way Triton's fused softmax runs: one work-group per row, the row in
    registers (VPT float4 per work-item, VPT * 4 * BLOCK >= ncols; 512 x 2 for 4096 columns). Every
    work-item issues all its float4 loads before using any (a column past the row reloads the row's
    last float4 and counts as -FLT_MAX: no branch between the loads), then a subgroup max + one
    shared-memory combine, exp as ``pk.exp2`` of a log2(e)-scaled argument, a subgroup sum + one
    combine, and float4 stores. Two barriers in all (each reduction has its own shared array)."""
    shm = pk.shared(f32, BLOCK)
    shs = pk.shared(f32, BLOCK)
    vals = pk.local(f32, VPT * 4)
    c4 = ncols // 4
    base = pk.group_id(0) * c4
    lid = pk.local_id(0)
    for j in range(VPT):
        a0, a1, a2, a3 = pk.vload(x, base + pk.min(lid + j * BLOCK, c4 - 1), 4)
        vals[j * 4] = a0
        vals[j * 4 + 1] = a1
        vals[j * 4 + 2] = a2
        vals[j * 4 + 3] = a3
    m = LOWEST
    for j in range(VPT):
        if lid + j * BLOCK < c4:
            m = pk.max(m, pk.max(pk.max(vals[j * 4], vals[j * 4 + 1]), pk.max(vals[j * 4 + 2], vals[j * 4 + 3])))
    m = group_max_once(m, shm)
    ms = m * LOG2E
    s = 0.0
    for j in range(VPT):
        live = lid + j * BLOCK < c4
        for e in range(4):
            ev = pk.exp2(vals[j * 4 + e] * LOG2E - ms)
            vals[j * 4 + e] = ev
            s += ev if live else 0.0
    inv = 1.0 / group_add_once(s, shs)
    for j in range(VPT):
        k = lid + j * BLOCK
        if k < c4:
            pk.vstore(out, base + k, (vals[j * 4] * inv, vals[j * 4 + 1] * inv, vals[j * 4 + 2] * inv,
                                      vals[j * 4 + 3] * inv))


@pk.kernel
def softmax_row_loops(nrows: i32, ncols: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    """The CPU's shape of softmax_rows: one work-item per row, three loops along it (max; exp and sum;
    scale), contiguous like a NumPy/Numba row loop. On a GPU it would leave the threads' loads uncoalesced."""
    r = pk.global_id(0)
    if r < nrows:
        base = r * ncols
        m = x[base]
        for j in range(1, ncols):
            m = pk.max(m, x[base + j])
        s = 0.0
        for j in range(ncols):
            e = pk.exp2((x[base + j] - m) * LOG2E)
            out[base + j] = e
            s += e
        inv = 1.0 / s
        for j in range(ncols):
            out[base + j] = out[base + j] * inv


@pk.kernel
def layernorm_rows(BLOCK: pk.constexpr, VPT: pk.constexpr, ncols: i32, eps: f32, x: Buffer[f32, "readonly"],
                   wt: Buffer[f32, "readonly"], bias: Buffer[f32, "readonly"], y: Buffer[f32],
                   mean_out: Buffer[f32], rstd_out: Buffer[f32]):
    """Layer norm forward as Triton's tutorial defines it: y = (x - mean) * rstd * w + b per row, with the
    row's mean and rstd = 1 / sqrt(var + eps) written out. One work-group per row, the row in registers
    (all float4 loads issued first, as in :func:`softmax_rows`), mean and variance in one pass over the
    registers: the sums of d = x - K and d * d with K the row's first element (shifted data: no
    cancellation when the mean is far from 0), both combined across subgroups with one barrier."""
    sh1 = pk.shared(f32, BLOCK)
    sh2 = pk.shared(f32, BLOCK)
    vals = pk.local(f32, VPT * 4)
    c4 = ncols // 4
    row = pk.group_id(0)
    base = row * c4
    lid = pk.local_id(0)
    for j in range(VPT):
        a0, a1, a2, a3 = pk.vload(x, base + pk.min(lid + j * BLOCK, c4 - 1), 4)
        vals[j * 4] = a0
        vals[j * 4 + 1] = a1
        vals[j * 4 + 2] = a2
        vals[j * 4 + 3] = a3
    shift, k1, k2, k3 = pk.vload(x, base, 4)  # the row's first element (a float4: x stays vector-only)
    s = 0.0
    q = 0.0
    for j in range(VPT):  # selects, not branches: no load is sunk past a branch
        live = lid + j * BLOCK < c4
        for e in range(4):
            d = vals[j * 4 + e] - shift if live else 0.0
            s += d
            q += d * d
    s = pk.subgroup_add(s)
    q = pk.subgroup_add(q)
    sgs = pk.subgroup_size()
    if pk.subgroup_local_id() == 0:
        sh1[pk.subgroup_id()] = s
        sh2[pk.subgroup_id()] = q
    pk.barrier()
    nsg = (BLOCK + sgs - 1) // sgs
    s = 0.0
    q = 0.0
    i = pk.subgroup_local_id()
    while i < nsg:
        s += sh1[i]
        q += sh2[i]
        i += sgs
    inv_n = 1.0 / f32(ncols)
    ds = pk.subgroup_add(s) * inv_n  # mean of d
    mean = shift + ds
    rstd = pk.rsqrt(pk.max(pk.subgroup_add(q) * inv_n - ds * ds, 0.0) + eps)
    for j in range(VPT):
        k = lid + j * BLOCK
        if k < c4:
            w0, w1, w2, w3 = pk.vload(wt, k, 4)
            b0, b1, b2, b3 = pk.vload(bias, k, 4)
            pk.vstore(y, base + k, ((vals[j * 4] - mean) * rstd * w0 + b0, (vals[j * 4 + 1] - mean) * rstd * w1 + b1,
                                    (vals[j * 4 + 2] - mean) * rstd * w2 + b2,
                                    (vals[j * 4 + 3] - mean) * rstd * w3 + b3))
    if lid == 0:
        mean_out[row] = mean
        rstd_out[row] = rstd


# ------------------------------------------------------------------ matmul (f32, CUDA cores)

@pk.kernel
def sgemm_db(BM: pk.constexpr, BN: pk.constexpr, BK: pk.constexpr, TM: pk.constexpr, FUSED: pk.constexpr, m: i32,
             n: i32, k: i32, a: Buffer[f32, "readonly"], b: Buffer[f32, "readonly"], c: Buffer[f32]):
    """C = A @ B (row-major), a BM x BN tile per work-group, TM x 8 results per work-item in registers
    (``pk.local``; TM 8 or 16): rows ``4*ty + {0..3}`` in TM/4 groups spaced BM/(TM/4) apart, columns
    ``4*tx + {0..3}`` and ``4*tx + BN/2 + {0..3}``, so a work-item's shared-memory reads are 4 consecutive
    floats, conflict-free across a warp. ``pk.fma`` is explicit: polykern never contracts ``a * b + c``
    itself (docs/correctness.md); FUSED=0 accumulates with ``a * b + c`` (two roundings). Both tiles live in
    the one ``pk.shared_dynamic`` array: CUDA C declares it 16-byte aligned, so nvcc reads 4 floats per
    ``ld.shared.v4``. A (transposed) and B tiles of depth BK are loaded with float4 global loads and
    double-buffered: the next tile is loaded into registers while this
    one is multiplied, then stored into the other buffer, so one barrier per tile instead of two. Each
    work-item loads ``BM * BK / (4 * T)`` float4 of A (2 * TM * BK / BN) and ``BN * BK / (4 * T)`` of B (2 * TM * BK / BM) per tile (T = (BM/TM) *
    (BN/8) work-items); both must be whole numbers. ``shared_size=2 * BK * (BM + BN)``. The configurations
    ``pk.autotune`` chooses among are ``MM_CONFIGS`` in benchmarks/tuned_problems.py."""
    T = (BM // TM) * (BN // 8)
    TILE = BK * (BM + BN)
    tiles = pk.shared_dynamic(f32)  # two buffers of TILE floats: A tile (transposed), then B tile
    acc = pk.local(f32, TM * 8)
    ra = pk.local(f32, TM)
    rb = pk.local(f32, 8)
    pa = pk.local(f32, 8 * TM * BK // BN)
    pb = pk.local(f32, 8 * TM * BK // BM)
    tid = pk.local_id(0)
    tx = tid % (BN // 8)
    ty = tid // (BN // 8)
    row0 = pk.group_id(1) * BM
    col0 = pk.group_id(0) * BN
    k4 = k // 4
    n4 = n // 4
    for i in range(TM * 8):
        acc[i] = 0.0
    for l in range(2 * TM * BK // BN):
        f = tid + l * T
        v0, v1, v2, v3 = pk.vload(
            a, (row0 + f // (BK // 4)) * k4 + f % (BK // 4), 4)
        pa[l * 4] = v0
        pa[l * 4 + 1] = v1
        pa[l * 4 + 2] = v2
        pa[l * 4 + 3] = v3
    for l in range(2 * TM * BK // BM):
        f = tid + l * T
        v0, v1, v2, v3 = pk.vload(
            b, (f // (BN // 4)) * n4 + col0 // 4 + f % (BN // 4), 4)
        pb[l * 4] = v0
        pb[l * 4 + 1] = v1
        pb[l * 4 + 2] = v2
        pb[l * 4 + 3] = v3
    for l in range(2 * TM * BK // BN):
        f = tid + l * T
        for e in range(4):
            tiles[((f % (BK // 4)) * 4 + e) * BM + f // (BK // 4)] = pa[l * 4 + e]
    for l in range(2 * TM * BK // BM):
        f = tid + l * T
        for e in range(4):
            tiles[BK * BM + (f // (BN // 4)) * BN + (f % (BN // 4)) * 4 + e] = pb[l * 4 + e]
    pk.barrier()
    t = 0
    cur = 0
    while t < k:
        more = t + BK < k
        if more:  # the next tile's loads are in flight while this one is multiplied
            for l in range(2 * TM * BK // BN):
                f = tid + l * T
                v0, v1, v2, v3 = pk.vload(
                    a, (row0 + f // (BK // 4)) * k4 + (t + BK) // 4 + f % (BK // 4), 4)
                pa[l * 4] = v0
                pa[l * 4 + 1] = v1
                pa[l * 4 + 2] = v2
                pa[l * 4 + 3] = v3
            for l in range(2 * TM * BK // BM):
                f = tid + l * T
                v0, v1, v2, v3 = pk.vload(
                    b, (t + BK + f // (BN // 4)) * n4 + col0 // 4 + f % (BN // 4), 4)
                pb[l * 4] = v0
                pb[l * 4 + 1] = v1
                pb[l * 4 + 2] = v2
                pb[l * 4 + 3] = v3
        base = cur * TILE
        for kk in range(BK):
            for h in range(TM // 4):
                for e in range(4):
                    ra[h * 4 + e] = tiles[base + kk * BM + h * (BM // (TM // 4)) + ty * 4 + e]
            for h in range(2):
                for e in range(4):
                    rb[h * 4 + e] = tiles[base + BK * BM + kk * BN + h * (BN // 2) + tx * 4 + e]
            for i in range(TM):
                for j in range(8):
                    if FUSED:
                        acc[i * 8 + j] = pk.fma(ra[i], rb[j], acc[i * 8 + j])
                    else:
                        acc[i * 8 + j] = ra[i] * rb[j] + acc[i * 8 + j]
        if more:  # into the other buffer, last read before the previous barrier
            nb = (1 - cur) * TILE
            for l in range(2 * TM * BK // BN):
                f = tid + l * T
                for e in range(4):
                    tiles[nb + ((f % (BK // 4)) * 4 + e) * BM + f // (BK // 4)] = pa[l * 4 + e]
            for l in range(2 * TM * BK // BM):
                f = tid + l * T
                for e in range(4):
                    tiles[nb + BK * BM + (f // (BN // 4)) * BN + (f % (BN // 4)) * 4 + e] = pb[l * 4 + e]
        pk.barrier()
        cur = 1 - cur
        t += BK
    for i in range(TM):
        r = row0 + (i // 4) * (BM // (TM // 4)) + ty * 4 + i % 4
        for h in range(2):
            pk.vstore(c, (r * n + col0 + h * (BN // 2) + tx * 4) // 4,
                      (acc[i * 8 + h * 4], acc[i * 8 + h * 4 + 1], acc[i * 8 + h * 4 + 2], acc[i * 8 + h * 4 + 3]))
