"""Conformance kernels, part 4: matrix fragments (docs/language.md section 5.2) against NumPy.

Each group is one subgroup (the block is the device's subgroup size, read from the device) and
computes one tile of D = C + sum over k-steps of A @ B (an accumulate chain), with padded leading
dimensions, a column-major B and a column-major store; f32 inputs are tf32 by definition. The CPU backends (llvm, hexagon) must match
``ir.matrix.reference_mma`` bit for bit; a matrix engine must stay within
``numerics.mma_error_bound``; integer results are exact everywhere. The shapes are ones every
backend with fragments lists (NVIDIA's Vulkan driver: 16x16x16 f16, 16x16x32 i8).
"""
import numpy as np

import polykern as pk
from polykern import Buffer, f16, f32, i8, i32
from polykern.ir.matrix import reference_mma
from polykern.numerics import mma_error_bound

from .case import Case

MATRIX = frozenset(["matrix"])
EXACT_KINDS = ("llvm", "hexagon")


@pk.kernel
def mx_chain(a: Buffer["TA"], b: Buffer["TA"], c: Buffer["TC"], d: Buffer["TC"], steps: i32, lda: i32, ldb: i32,
             ldc: i32, TA: pk.dtype, TC: pk.dtype, M: pk.constexpr, N: pk.constexpr, K: pk.constexpr):
    """Tile t = group_id(0): rows t*M.. of A and C/D; B column-major (B[k, n] at b[n * ldb + k]);
    D stored column-major (D[m, n] at d[n * ldc + m]) from a row-major C."""
    t = pk.group_id(0)
    fa = pk.frag_a(TA, M, N, K)
    fb = pk.frag_b(TA, M, N, K)
    acc = pk.frag_acc(TC, M, N, K)
    pk.frag_load(acc, c, t * M * ldc, ldc)
    for s in range(steps):
        pk.frag_load(fa, a, t * M * lda + s * K, lda)
        pk.frag_load(fb, b, s * K, ldb, "col")
        acc = pk.mma(fa, fb, acc)
    pk.frag_store(d, t * M, ldc, acc, "col")


@pk.kernel
def mx_width(out: Buffer[i32]):
    out[0] = pk.subgroup_size()


def _values(dtype, shape, rng):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-128, 128, shape).astype(dtype)


def _run(TA, TC, M, N, K, steps=3, tiles=2, pad=3):
    kern = mx_chain.specialize(TA=TA, TC=TC, M=M, N=N, K=K)

    def run(mod, rng):
        w = np.zeros(1, np.int32)
        mod["mx_width"](w, grid=1, block=1)
        kt = K * steps
        lda, ldb, ldc = kt + pad, kt + pad, max(N, tiles * M) + pad
        A = _values(TA.numpy, (tiles * M, lda), rng)
        Bm = _values(TA.numpy, (kt, N), rng)
        B = np.zeros((N, ldb), TA.numpy)
        B[:, :kt] = Bm.T
        C = _values(TC.numpy, (tiles * M, ldc), rng)
        D = np.zeros((ldc, ldc), TC.numpy)  # column-major: D[m, n] at n * ldc + m
        mod[kern.name](A.ravel(), B.ravel(), C.ravel(), D.ravel(), np.int32(steps), np.int32(lda), np.int32(ldb),
                       np.int32(ldc), grid=tiles, block=int(w[0]))
        for t in range(tiles):
            rows = slice(t * M, (t + 1) * M)
            want = C[rows, :N]
            for s in range(steps):
                want = reference_mma(A[rows, s * K:(s + 1) * K], Bm[s * K:(s + 1) * K], want, TC, TA)
            got = D[:N, rows].T
            if mod.kind in EXACT_KINDS or TC.is_int:
                np.testing.assert_array_equal(got, want)
            else:
                bound = mma_error_bound(TC.name, A[rows, :kt], Bm, C[rows, :N])
                assert (np.abs(got.astype(np.float64) - want) <= bound).all(), f"tile {t}: beyond the bound"
        assert (D[N:, :] == 0).all() or tiles * M > N  # nothing written past the tiles' columns

    return Case(f"matrix_{TA}_{TC}_{M}x{N}x{K}", [kern, mx_width], run, MATRIX)


# f32 inputs are rounded to tf32 (standard-normal values: the rounding shows); NVIDIA's Vulkan driver lists
# no f32 combination (refused at load, the device's declared refusal)
CASES = [_run(f16, f32, 16, 16, 16), _run(f16, f16, 16, 16, 16, steps=2), _run(i8, i32, 16, 16, 32, steps=2),
         _run(f32, f32, 16, 16, 16), _run(f32, f32, 32, 16, 8, steps=4)]
