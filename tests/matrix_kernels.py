"""Matrix-fragment kernels shared by tests/test_matrix.py and the backends' matrix tests (cuda, metal, rocm,
vulkan): a helper module, not a test file, so that each backend's tests find it under Bazel too
(//tests:support)."""
from __future__ import annotations

import polykern as pk
from polykern import Buffer, bf16, f16, f32, i32


@pk.kernel
def tile_gemm(a: Buffer["TA"], b: Buffer["TA"], c: Buffer["TC"], d: Buffer["TC"], ksteps: i32, lda: i32,
              ldb: i32, ldc: i32, tiles_n: i32, TA: pk.dtype, TC: pk.dtype, M: pk.constexpr, N: pk.constexpr,
              K: pk.constexpr, BCOL: pk.constexpr):
    """d = c + sum over k-steps of A[tile row, step] @ B[step, tile col]: one accumulate chain per tile."""
    tm = pk.group_id(0) // tiles_n
    tn = pk.group_id(0) % tiles_n
    fa = pk.frag_a(TA, M, N, K)
    fb = pk.frag_b(TA, M, N, K)
    acc = pk.frag_acc(TC, M, N, K)
    pk.frag_load(acc, c, tm * M * ldc + tn * N, ldc)
    for s in range(ksteps):
        pk.frag_load(fa, a, tm * M * lda + s * K, lda)
        if BCOL == 1:  # B[k, n] at b[n * ldb + k]
            pk.frag_load(fb, b, tn * N * ldb + s * K, ldb, "col")
        else:
            pk.frag_load(fb, b, s * K * ldb + tn * N, ldb)
        acc = pk.mma(fa, fb, acc)
    pk.frag_store(d, tm * M * ldc + tn * N, ldc, acc)


@pk.kernel
def fill_scale_store(a: Buffer[f16], b: Buffer[f16], d: Buffer[f32], v: f32):
    """(A @ B + v) * 0.5 stored column-major (ld 20) into d."""
    fa = pk.frag_a(f16, 16, 16, 16)
    fb = pk.frag_b(f16, 16, 16, 16)
    acc = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_fill(acc, v)
    pk.frag_load(fa, a, 0, 16)
    pk.frag_load(fb, b, 0, 16)
    acc = pk.mma(fa, fb, acc)
    pk.frag_scale(acc, 0.5)
    pk.frag_store(d, 0, 20, acc, "col")


@pk.kernel
def staged(a: Buffer[f16], b: Buffer[f16], d: Buffer[f32]):
    """A and B staged through shared memory by all work-items (a barrier between), then one mma per
    subgroup, stored at the subgroup's own offset (an operand the same within a subgroup only)."""
    sa = pk.shared(f16, 256)
    sb = pk.shared(f16, 256)
    i = pk.local_id(0)
    n = pk.local_size(0)
    e = i
    while e < 256:
        sa[e] = a[e]
        sb[e] = b[e]
        e += n
    pk.barrier()
    fa = pk.frag_a(f16, 16, 16, 16)
    fb = pk.frag_b(f16, 16, 16, 16)
    acc = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_fill(acc, 0.0)
    pk.frag_load(fa, sa, 0, 16)
    pk.frag_load(fb, sb, 0, 16)
    acc = pk.mma(fa, fb, acc)
    pk.frag_store(d, pk.subgroup_id() * 256, 16, acc)


@pk.kernel
def staged_layouts(a: Buffer[f16], b: Buffer[f16], d: Buffer[f32], COL: pk.constexpr, OFF: pk.constexpr):
    """32 x 32 A and B tiles staged into padded shared rows (ld 40) at element offset OFF, loaded row-
    or column-major (cuda: ldmatrix, its .trans form, or element-wise where OFF is not a multiple of 8)."""
    sa = pk.shared(f16, 32 * 40 + 8)
    sb = pk.shared(f16, 32 * 40 + 8)
    e = pk.local_id(0)
    while e < 32 * 32:
        sa[OFF + e // 32 * 40 + e % 32] = a[e]
        sb[OFF + e // 32 * 40 + e % 32] = b[e]
        e += pk.local_size(0)
    pk.barrier()
    fa = pk.frag_a(f16, 32, 32, 32)
    fb = pk.frag_b(f16, 32, 32, 32)
    acc = pk.frag_acc(f32, 32, 32, 32)
    pk.frag_fill(acc, 0.0)
    if COL == 1:
        pk.frag_load(fa, sa, OFF, 40, "col")
        pk.frag_load(fb, sb, OFF, 40, "col")
    else:
        pk.frag_load(fa, sa, OFF, 40)
        pk.frag_load(fb, sb, OFF, 40)
    acc = pk.mma(fa, fb, acc)
    pk.frag_store(d, 0, 32, acc)


@pk.kernel
def staged_x2(a: Buffer[f16], b: Buffer[f16], d: Buffer[f32]):
    """A 16 x 16 A and a 16 x 8 B from shared memory: B's fragment is 2 registers per lane (cuda,
    nvptx: one ldmatrix .x2.trans; A: one .x4)."""
    sa = pk.shared(f16, 16 * 16)
    sb = pk.shared(f16, 16 * 8)
    e = pk.local_id(0)
    while e < 256:
        sa[e] = a[e]
        if e < 128:
            sb[e] = b[e]
        e += pk.local_size(0)
    pk.barrier()
    fa = pk.frag_a(f16, 16, 8, 16)
    fb = pk.frag_b(f16, 16, 8, 16)
    acc = pk.frag_acc(f32, 16, 8, 16)
    pk.frag_fill(acc, 0.0)
    pk.frag_load(fa, sa, 0, 16)
    pk.frag_load(fb, sb, 0, 8)
    acc = pk.mma(fa, fb, acc)
    pk.frag_store(d, 0, 8, acc)


@pk.kernel
def staged_bf16(a: Buffer[bf16], b: Buffer[bf16], d: Buffer[f32], COL: pk.constexpr):
    """bf16 inputs: 32 x 32 A and B staged into padded shared rows (ld 40, offset 8: cuda and nvptx use
    ldmatrix, the 16-bit instruction f16 uses) loaded row- or column-major, then d = A @ B + A @ H with H
    a B fragment filled with bf16(0.5) (a bf16 fill: its bits in every element)."""
    sa = pk.shared(bf16, 32 * 40 + 8)
    sb = pk.shared(bf16, 32 * 40 + 8)
    e = pk.local_id(0)
    while e < 32 * 32:
        sa[8 + e // 32 * 40 + e % 32] = a[e]
        sb[8 + e // 32 * 40 + e % 32] = b[e]
        e += pk.local_size(0)
    pk.barrier()
    fa = pk.frag_a(bf16, 32, 32, 32)
    fb = pk.frag_b(bf16, 32, 32, 32)
    fh = pk.frag_b(bf16, 32, 32, 32)
    acc = pk.frag_acc(f32, 32, 32, 32)
    pk.frag_fill(acc, 0.0)
    pk.frag_fill(fh, bf16(0.5))
    if COL == 1:
        pk.frag_load(fa, sa, 8, 40, "col")
        pk.frag_load(fb, sb, 8, 40, "col")
    else:
        pk.frag_load(fa, sa, 8, 40)
        pk.frag_load(fb, sb, 8, 40)
    acc = pk.mma(fa, fb, acc)
    acc = pk.mma(fa, fh, acc)
    pk.frag_store(d, 0, 32, acc)


@pk.kernel
def tf32_inputs(a: Buffer[f32], s: Buffer[f32], d: Buffer[f32], v: f32, COL: pk.constexpr):
    """f32 (tf32) inputs, 16 x 8 x 8: d[0:128] = A @ I with I an 8 x 8 identity staged in shared memory
    (so d is A rounded to tf32, exactly, on every engine), A loaded row- or column-major; d[128:256] =
    S @ H with S one-hot rows and H a B fragment filled with ``v`` (so every element is v rounded to tf32)."""
    si = pk.shared(f32, 64)
    e = pk.local_id(0)
    while e < 64:
        si[e] = f32(e // 8 == e % 8)
        e += pk.local_size(0)
    pk.barrier()
    fa = pk.frag_a(f32, 16, 8, 8)
    fs = pk.frag_a(f32, 16, 8, 8)
    fi = pk.frag_b(f32, 16, 8, 8)
    fh = pk.frag_b(f32, 16, 8, 8)
    acc = pk.frag_acc(f32, 16, 8, 8)
    acc2 = pk.frag_acc(f32, 16, 8, 8)
    pk.frag_fill(acc, 0.0)
    pk.frag_fill(acc2, 0.0)
    pk.frag_fill(fh, v)
    if COL == 1:
        pk.frag_load(fa, a, 0, 16, "col")
    else:
        pk.frag_load(fa, a, 0, 8)
    pk.frag_load(fi, si, 0, 8)
    pk.frag_load(fs, s, 0, 8)
    acc = pk.mma(fa, fi, acc)
    acc2 = pk.mma(fs, fh, acc2)
    pk.frag_store(d, 0, 8, acc)
    pk.frag_store(d, 128, 8, acc2)
