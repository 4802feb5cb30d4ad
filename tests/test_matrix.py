"""Matrix fragments (docs/language.md "Matrix fragments"): conformance against NumPy on every runtime
here that compiles them (shapes, element types, leading dimensions, layouts, accumulate chains), the
oracle, and the located refusals of the language and of backends without a matrix engine.

CPU backends (llvm, hexagon) compute ``ir.matrix.reference_mma`` bit for bit; a GPU's matrix engine
is held to ``numerics.mma_error_bound``. Each test group is one subgroup (the block is the device's
subgroup size, read from the device), so the tile index is the group id: uniform, as the language
requires of the control flow around fragment operations."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, bf16, f16, f32, i8, i32, u8
from polykern.ir.bfloat16 import bits_to_f32, f32_to_bits
from polykern.errors import DeviceError, KernelSyntaxError, KernelTypeError
from polykern import capabilities
from polykern.ir.matrix import reference_mma, round_tf32
from polykern.numerics import mma_error_bound
from polykern.testing.interp import OracleError, interpret

from runtimes import all_target_kinds, runnable_targets

EXACT_KINDS = ("llvm", "hexagon")  # reference_mma bit for bit


from matrix_kernels import (fill_scale_store, staged, staged_bf16, staged_layouts, staged_x2, tf32_inputs,  # noqa: E402,F401
                            tile_gemm)


@pk.kernel
def sg_size(out: Buffer[i32]):
    out[pk.global_id(0)] = pk.subgroup_size()


def _targets():
    out = []
    for target, kind, skips in runnable_targets():
        out.append(pytest.param(target, id=target))
    return out


TARGETS = _targets()
_SIZES = {}


def _subgroup_size(target: str) -> int:
    if target not in _SIZES:
        o = np.zeros(1, np.int32)
        pk.build([sg_size], targets=[target])["sg_size"](o, grid=1, block=1)
        _SIZES[target] = int(o[0])
    return _SIZES[target]


def _build_or_refusal(kernel, target):
    """The module, or None when the target kind refuses the kernel's fragments with a located
    KernelTypeError: a kind that declares matrix fragments (Capabilities.matrix) may refuse only a
    shape or type it lacks, never fragments as such."""
    kind = target.split()[0]
    try:
        return pk.build([kernel], targets=[target])
    except KernelTypeError as e:
        assert kind not in EXACT_KINDS, e
        if capabilities.of(kind).matrix is not None:
            assert f"{kind} does not support" in str(e), e
        else:
            assert f"{kind} has no matrix fragments" in str(e), e
        assert e.loc is not None and e.loc.line > 0
        return None


def _launch(mod, name, target, *args, **launch):
    """Launch, or skip where the device refuses the fragments at load (Vulkan: no
    VK_KHR_cooperative_matrix, or a shape/type its VkCooperativeMatrixPropertiesKHR does not list)."""
    try:
        mod[name](*args, **launch)
    except DeviceError as e:
        if "SPV_KHR_cooperative_matrix" in str(e) or "VkCooperativeMatrixPropertiesKHR" in str(e):
            pytest.skip(f"{target}: {e}")
        raise


def _rand(dtype, shape, rng):
    if np.dtype(dtype).kind == "f":
        return rng.integers(-8, 9, shape).astype(dtype) / np.asarray(4, dtype)  # exact in f16
    lo, hi = (-128, 128) if np.dtype(dtype).kind == "i" else (0, 256)
    return rng.integers(lo, hi, shape).astype(dtype)


def _rand_wide(dtype, shape, rng):
    """Values with many significant bits (sums that round in f32)."""
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return _rand(dtype, shape, rng)


CASES = [
    # (TA, TC, M, N, K, k-steps, tiles m x n, B column-major, padding of the leading dimensions)
    pytest.param(f16, f32, 16, 16, 16, 3, (2, 2), False, 0, id="f16-f32-16x16x16-chain3"),
    pytest.param(f16, f32, 16, 16, 16, 2, (1, 3), True, 5, id="f16-f32-16x16x16-bcol-ld+5"),
    pytest.param(f16, f16, 16, 16, 16, 2, (2, 1), False, 3, id="f16-f16-16x16x16"),
    pytest.param(i8, i32, 16, 16, 16, 2, (2, 2), False, 0, id="i8-i32-16x16x16"),
    pytest.param(u8, i32, 16, 16, 32, 1, (1, 2), True, 4, id="u8-i32-16x16x32"),
    pytest.param(i8, i32, 16, 16, 32, 2, (1, 1), False, 0, id="i8-i32-16x16x32"),
    pytest.param(f16, f32, 32, 8, 16, 2, (1, 2), False, 2, id="f16-f32-32x8x16"),
    pytest.param(f16, f32, 8, 32, 16, 2, (2, 1), True, 0, id="f16-f32-8x32x16"),
    pytest.param(f16, f32, 8, 8, 8, 4, (2, 2), False, 1, id="f16-f32-8x8x8"),
    pytest.param(bf16, f32, 16, 16, 16, 3, (2, 2), False, 0, id="bf16-f32-16x16x16-chain3"),
    pytest.param(bf16, f32, 16, 16, 16, 2, (1, 3), True, 5, id="bf16-f32-16x16x16-bcol-ld+5"),
    pytest.param(bf16, f32, 32, 8, 32, 2, (1, 2), False, 2, id="bf16-f32-32x8x32"),
    pytest.param(f32, f32, 16, 8, 8, 3, (2, 2), False, 0, id="f32-f32-16x8x8-chain3"),
    pytest.param(f32, f32, 16, 16, 16, 2, (1, 3), True, 5, id="f32-f32-16x16x16-bcol-ld+5"),
    pytest.param(f32, f32, 32, 32, 32, 2, (1, 1), True, 3, id="f32-f32-32x32x32-bcol-ld+3"),
    pytest.param(f32, f32, 32, 16, 8, 2, (2, 1), False, 1, id="f32-f32-32x16x8"),
]


def _held(T):
    """The NumPy type of a matrix of ``T``'s values on the host (bf16: its f32 values)."""
    return np.float32 if T == bf16 else T.numpy


def _arg(T, x):
    """An array of ``T``'s values as a launch argument (bf16: rounded to its bits, exact here)."""
    return pk.bf16_array(x.ravel()) if T == bf16 else x.ravel()


def _bf16_values(x):
    """``x`` (f32) rounded to bf16 values: wide random values get 8 significant bits."""
    return bits_to_f32(f32_to_bits(x))


def _problem(TA, TC, M, N, K, steps, tiles, bcol, pad, rng, wide=False):
    gen = _rand_wide if wide else _rand
    tm, tn = tiles
    kt = K * steps
    lda, ldb, ldc = kt + pad, (kt if bcol else tn * N) + pad, tn * N + pad
    A = _bf16_values(gen(_held(TA), (tm * M, lda), rng)) if TA == bf16 else gen(TA.numpy, (tm * M, lda), rng)
    Bm = _bf16_values(gen(_held(TA), (kt, tn * N), rng)) if TA == bf16 else gen(TA.numpy, (kt, tn * N), rng)
    B = np.zeros((tn * N, ldb) if bcol else (kt, ldb), _held(TA))
    if bcol:
        B[:, :kt] = Bm.T
    else:
        B[:, :tn * N] = Bm
    C = gen(TC.numpy, (tm * M, ldc), rng)
    want = C.copy()
    for i in range(tm):
        for j in range(tn):
            acc = C[i * M:(i + 1) * M, j * N:(j + 1) * N]
            for s in range(steps):
                acc = reference_mma(A[i * M:(i + 1) * M, s * K:(s + 1) * K], Bm[s * K:(s + 1) * K, j * N:(j + 1) * N],
                                    acc, TC, TA)
            want[i * M:(i + 1) * M, j * N:(j + 1) * N] = acc
    args = [_arg(TA, A), _arg(TA, B), C.ravel(), C.ravel().copy(), np.int32(steps), np.int32(lda),
            np.int32(ldb), np.int32(ldc), np.int32(tn)]
    bound = np.zeros(want.shape)
    if TC.is_float:
        for i in range(tm):
            for j in range(tn):
                sl = (slice(i * M, (i + 1) * M), slice(j * N, (j + 1) * N))
                bound[sl] = mma_error_bound(TC.name, A[sl[0], :kt], Bm[:, sl[1]], C[sl])
    return args, want, bound, tm * tn


@pytest.mark.parametrize("TA,TC,M,N,K,steps,tiles,bcol,pad", CASES)
@pytest.mark.parametrize("target", TARGETS)
def test_tile_gemm(target, TA, TC, M, N, K, steps, tiles, bcol, pad):
    kern = tile_gemm.specialize(TA=TA, TC=TC, M=M, N=N, K=K, BCOL=int(bcol))
    mod = _build_or_refusal(kern, target)
    if mod is None:
        pytest.skip(f"{target} refuses {M}x{N}x{K} {TA} -> {TC} at build")
    args, want, bound, groups = _problem(TA, TC, M, N, K, steps, tiles, bcol, pad, np.random.default_rng(M + K))
    _launch(mod, kern.name, target, *args, grid=groups, block=_subgroup_size(target))
    got = args[3].reshape(want.shape)
    if target.split()[0] in EXACT_KINDS or not TC.is_float:
        np.testing.assert_array_equal(got, want)
    else:
        assert (np.abs(got.astype(np.float64) - want) <= bound).all()


def _values(T, arg):
    """A launch argument's values as float64 (bf16: its bits' values)."""
    return (bits_to_f32(arg) if T == bf16 else arg).astype(np.float64)


@pytest.mark.parametrize("TA", [f16, bf16, f32])
@pytest.mark.parametrize("target", TARGETS)
def test_rounding_in_k_order(target, TA):
    """Values with many significant bits: the CPU adds in k order in f32 exactly as the reference; a
    matrix engine stays within numerics.mma_error_bound."""
    kern = tile_gemm.specialize(TA=TA, TC=f32, M=16, N=16, K=16, BCOL=0)
    mod = _build_or_refusal(kern, target)
    if mod is None:
        pytest.skip(f"{target} refuses fragments")
    args, want, bound, groups = _problem(TA, f32, 16, 16, 16, 4, (1, 1), False, 0, np.random.default_rng(7),
                                         wide=True)
    if TA == f32:  # f32 inputs are rounded to tf32: an engine that used them unrounded leaves the bound
        exact = args[0].reshape(16, 64).astype(np.float64) @ args[1].reshape(64, 16) + args[2].reshape(16, 16)
        assert (np.abs(exact - want) > bound).mean() > 0.5
    assert (want != (_values(TA, args[0]).reshape(16, 64) @ _values(TA, args[1]).reshape(64, 16)
                     + args[2].reshape(16, 16))).any()  # the reference really rounds
    _launch(mod, kern.name, target, *args, grid=groups, block=_subgroup_size(target))
    got = args[3].reshape(want.shape)
    if target.split()[0] in EXACT_KINDS:
        np.testing.assert_array_equal(got, want)
    assert (np.abs(got.astype(np.float64) - want) <= bound).all()


@pytest.mark.parametrize("target", TARGETS)
def test_fill_scale_col_store_and_shared(target):
    rng = np.random.default_rng(3)
    A, B = _rand(np.float16, (16, 16), rng), _rand(np.float16, (16, 16), rng)
    want = reference_mma(A, B, np.full((16, 16), 1.5, np.float32), f32) * np.float32(0.5)
    mod = _build_or_refusal(fill_scale_store, target)
    if mod is None:
        pytest.skip(f"{target} refuses fragments")
    d = np.full(20 * 16, -1.0, np.float32)
    _launch(mod, "fill_scale_store", target, A.ravel(), B.ravel(), d, np.float32(1.5), grid=1,
            block=_subgroup_size(target))
    got = d.reshape(16, 20)[:, :16].T  # column-major, ld 20
    np.testing.assert_array_equal(got, want)  # small integers / 4: exact everywhere
    assert (d.reshape(16, 20)[:, 16:] == -1.0).all()  # the padding is not written
    d2 = np.zeros(512, np.float32)
    _launch(pk.build([staged], targets=[target]), "staged", target, A.ravel(), B.ravel(), d2, grid=1,
            block=2 * _subgroup_size(target))
    want2 = reference_mma(A, B, np.zeros((16, 16), np.float32), f32)
    np.testing.assert_array_equal(d2.reshape(2, 16, 16), np.stack([want2, want2]))


@pytest.mark.parametrize("col,off", [(0, 8), (1, 8), (0, 4), (1, 4)])
@pytest.mark.parametrize("target", TARGETS)
def test_shared_layouts_and_offsets(target, col, off):
    rng = np.random.default_rng(17)
    Ma, Mb = _rand(np.float16, (32, 32), rng), _rand(np.float16, (32, 32), rng)
    A, B = (Ma.T, Mb.T) if col else (Ma, Mb)  # column-major: memory holds the transpose
    kern = staged_layouts.specialize(COL=col, OFF=off)
    mod = _build_or_refusal(kern, target)
    if mod is None:
        pytest.skip(f"{target} refuses 32x32x32 fragments")
    d = np.zeros(32 * 32, np.float32)
    _launch(mod, kern.name, target, Ma.ravel(), Mb.ravel(), d, grid=1, block=_subgroup_size(target))
    want = reference_mma(np.ascontiguousarray(A), np.ascontiguousarray(B), np.zeros((32, 32), np.float32), f32)
    np.testing.assert_array_equal(d.reshape(32, 32), want)  # small integers: exact everywhere


@pytest.mark.parametrize("col", [0, 1])
@pytest.mark.parametrize("target", TARGETS)
def test_bf16_shared_loads_and_fill(target, col):
    """bf16 A/B fragments from shared memory (cuda, nvptx: ldmatrix), row- or column-major, and a bf16
    fill: d = A @ B + A @ H, H all bf16(0.5). Values with 8 significant bits: every product is exact."""
    rng = np.random.default_rng(23)
    Ma, Mb = (_bf16_values(rng.standard_normal((32, 32)).astype(np.float32)) for _ in range(2))
    A, B = (Ma.T, Mb.T) if col else (Ma, Mb)  # column-major: memory holds the transpose
    kern = staged_bf16.specialize(COL=col)
    mod = _build_or_refusal(kern, target)
    if mod is None:
        pytest.skip(f"{target} refuses bf16 fragments")
    d = np.zeros(32 * 32, np.float32)
    args = [pk.bf16_array(Ma.ravel()), pk.bf16_array(Mb.ravel()), d]
    _launch(mod, kern.name, target, *args, grid=1, block=_subgroup_size(target))
    A, B = np.ascontiguousarray(A), np.ascontiguousarray(B)
    H = np.full((32, 32), 0.5, np.float32)
    want = reference_mma(A, H, reference_mma(A, B, np.zeros((32, 32), np.float32), f32), f32)
    if target.split()[0] in EXACT_KINDS:
        np.testing.assert_array_equal(d.reshape(32, 32), want)
        oracle = interpret(kern, [pk.bf16_array(Ma.ravel()), pk.bf16_array(Mb.ravel()), np.zeros(1024, np.float32)],
                           1, _subgroup_size(target))
        np.testing.assert_array_equal(oracle.buffers["d"].reshape(32, 32), want)
    else:
        bound = mma_error_bound("f32", np.hstack([A, A]), np.vstack([B, H]), np.zeros((32, 32)))
        assert (np.abs(d.reshape(32, 32).astype(np.float64) - want) <= bound).all()


#: f32 values at and around tf32's rounding ties (the low 13 bits 0x1000: ties away from zero, which
#: round-to-even and truncation would take down; 0x0FFF and 0x1001: below and above), normal range.
#: (Finite results only: A @ I with an infinite element would put inf * 0 = NaN in its row.)
TF32_EDGES = np.array([0x3F801000, 0xBF801000, 0x3F803000, 0x3F800FFF, 0x3F801001, 0x4B7FF000, 0x3F7FF000,
                       0x7F7FE000, 0x00801000, 0xC0001000, 0x3F800000, 0x3FFFF000], np.uint32).view(np.float32)


@pytest.mark.parametrize("col", [0, 1])
@pytest.mark.parametrize("target", TARGETS)
def test_tf32_rounding_of_inputs(target, col):
    """f32 A/B fragments: every input is rounded to tf32 (ir.matrix.round_tf32: nearest, ties away from
    zero), loaded (row- or column-major) or filled; A @ I and S @ fill are exact on every engine, so each
    element must be the rounded input bit for bit (a wrong lane table puts it elsewhere; round-to-even,
    truncation or unrounded inputs give other bits)."""
    rng = np.random.default_rng(29)
    A = rng.standard_normal((16, 8)).astype(np.float32)
    A.ravel()[:TF32_EDGES.size] = TF32_EDGES
    A.ravel()[TF32_EDGES.size:2 * TF32_EDGES.size] = -TF32_EDGES[::-1]
    S = np.zeros((16, 8), np.float32)
    S[np.arange(16), rng.integers(0, 8, 16)] = 1.0
    v = np.uint32(0x3F801000).view(np.float32)  # 1 + 2**-11: a tie, rounds up to 1 + 2**-10
    kern = tf32_inputs.specialize(COL=col)
    mod = _build_or_refusal(kern, target)
    if mod is None:
        pytest.skip(f"{target} refuses f32 (tf32) fragments")
    a = np.zeros((8, 16), np.float32) if col else A.copy()
    if col:  # column-major, ld 16: A[i, j] at j * 16 + i
        a[:, :] = A.T
    d = np.full(256, -1.0, np.float32)
    _launch(mod, kern.name, target, a.ravel(), S.ravel(), d, np.float32(v), grid=1, block=_subgroup_size(target))
    want = round_tf32(A)
    assert (want.view(np.uint32) != A.view(np.uint32)).any() and (want != A).any()
    np.testing.assert_array_equal(d[:128].reshape(16, 8).view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(d[128:], np.full(128, 1 + 2 ** -10, np.float32))
    if target.split()[0] in EXACT_KINDS:
        oracle = interpret(kern, [a.ravel(), S.ravel(), np.zeros(256, np.float32), np.float32(v)], 1,
                           _subgroup_size(target))
        np.testing.assert_array_equal(oracle.buffers["d"], d)


def test_round_tf32_definition():
    """The reference rounding on the bits: ties away from zero, carries into the exponent, overflow to
    inf, subnormals rounded (not flushed), infinities kept, NaN stays NaN."""
    bits = np.array([0x3F801000, 0x3F800FFF, 0xBF801000, 0x3F803000, 0x3FFFF000, 0x7F7FF000, 0x7F800000,
                     0xFF800000, 0x00001000, 0x00000FFF, 0x80001000, 0x7F800001, 0xFFC00000, 0x00000000],
                    np.uint32)
    want = np.array([0x3F802000, 0x3F800000, 0xBF802000, 0x3F804000, 0x40000000, 0x7F800000, 0x7F800000,
                     0xFF800000, 0x00002000, 0x00000000, 0x80002000, 0x7FC00000, 0xFFC00000, 0x00000000],
                    np.uint32)
    np.testing.assert_array_equal(round_tf32(bits.view(np.float32)).view(np.uint32), want)
    # as the reference's inputs: an f32 product of rounded inputs, only for f32 inputs
    one = np.full((1, 1), 1.0, np.float32)
    x = bits[:1].view(np.float32).reshape(1, 1)
    assert reference_mma(x, one, np.zeros((1, 1), np.float32), f32, f32)[0, 0] == np.float32(1 + 2 ** -10)
    assert reference_mma(x, one, np.zeros((1, 1), np.float32), f32)[0, 0] == x[0, 0]


@pytest.mark.parametrize("target", TARGETS)
def test_shared_fragment_of_two_registers(target):
    """A 16 x 8 B fragment from shared memory (cuda, nvptx: ldmatrix .x2.trans) and a 16 x 16 A."""
    rng = np.random.default_rng(19)
    A, B = _rand(np.float16, (16, 16), rng), _rand(np.float16, (16, 8), rng)
    mod = _build_or_refusal(staged_x2, target)
    if mod is None:
        pytest.skip(f"{target} refuses 16x8x16 fragments")
    d = np.zeros(16 * 8, np.float32)
    _launch(mod, "staged_x2", target, A.ravel(), B.ravel(), d, grid=1, block=_subgroup_size(target))
    np.testing.assert_array_equal(d.reshape(16, 8), reference_mma(A, B, np.zeros((16, 8), np.float32), f32))


@pytest.mark.parametrize("TA", [f16, bf16, f32])
def test_oracle_matches_reference_and_cpu(TA):
    """The interpreter runs fragments with the reference semantics (so it can judge any backend)."""
    kern = tile_gemm.specialize(TA=TA, TC=f32, M=16, N=16, K=16, BCOL=1)
    args, want, _, groups = _problem(TA, f32, 16, 16, 16, 2, (2, 1), True, 3, np.random.default_rng(11),
                                     wide=True)
    res = interpret(kern, args, groups, 8)
    np.testing.assert_array_equal(res.buffers["d"].reshape(want.shape), want)
    if TA != f16:
        return
    res2 = interpret(staged, [args[0][:256], args[1][:256], np.zeros(512, np.float32)], 1, 16)
    A, B = args[0][:256].reshape(16, 16), args[1][:256].reshape(16, 16)
    want2 = reference_mma(A, B, np.zeros((16, 16), np.float32), f32)
    np.testing.assert_array_equal(res2.buffers["d"].reshape(2, 16, 16), np.stack([want2, want2]))


@pk.kernel
def lane_offsets(a: Buffer[f16], d: Buffer[f32]):
    fa = pk.frag_a(f16, 16, 16, 16)
    fb = pk.frag_b(f16, 16, 16, 16)
    acc = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_fill(acc, 0.0)
    pk.frag_load(fa, a, pk.local_id(0), 16)  # differs between the lanes of a subgroup
    pk.frag_load(fb, a, 0, 16)
    acc = pk.mma(fa, fb, acc)
    pk.frag_store(d, 0, 16, acc)


@pk.kernel
def unfilled(d: Buffer[f32]):
    acc = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_store(d, 0, 16, acc)


def test_oracle_refuses_what_has_no_meaning():
    with pytest.raises(OracleError, match="operands of this matrix-fragment operation differ"):
        interpret(lane_offsets, [np.zeros(512, np.float16), np.zeros(256, np.float32)], 1, 8)
    with pytest.raises(OracleError, match="read before it was filled"):
        interpret(unfilled, [np.zeros(256, np.float32)], 1, 8)
    with pytest.raises(OracleError, match="out of bounds"):
        interpret(fill_scale_store, [np.zeros(256, np.float16), np.zeros(256, np.float16),
                                     np.zeros(256, np.float32), np.float32(0)], 1, 8)


# the target kinds whose Capabilities have no matrix fragments (opencl, webgpu, ...)
NO_MATRIX = [k for k in all_target_kinds() if capabilities.of(k).matrix is None]


def test_most_kinds_have_a_matrix_engine():
    assert {"opencl", "webgpu"} <= set(NO_MATRIX) and "llvm" not in NO_MATRIX


@pytest.mark.parametrize("kind", NO_MATRIX)
def test_backends_without_a_matrix_engine_refuse(kind):
    with pytest.raises(KernelTypeError) as ei:
        pk.build([fill_scale_store], targets=[kind])
    msg = str(ei.value)
    assert f"{kind} has no matrix fragments" in msg and "pk.frag_fill" in msg
    assert ei.value.loc.line == fill_scale_store.ir.body[0].loc.line


def _error(src_fn):
    with pytest.raises((KernelTypeError, KernelSyntaxError)) as ei:
        src_fn.ir
    return ei.value


def test_language_refusals_are_located():
    @pk.kernel
    def bad_shape(d: Buffer[f32]):
        acc = pk.frag_acc(f32, 16, 16, 12)
        pk.frag_fill(acc, 0.0)

    e = _error(bad_shape)
    assert "K = 12 is not a fragment dimension" in str(e) and e.loc.line > 0

    @pk.kernel
    def bad_mix(a: Buffer[f16], d: Buffer[f32]):
        fa = pk.frag_a(f16, 16, 16, 16)
        fb = pk.frag_b(f16, 16, 16, 16)
        acc = pk.frag_acc(i32, 16, 16, 16)
        acc = pk.mma(fa, fb, acc)

    assert "f16 inputs accumulate into f32 or f16, not i32" in str(_error(bad_mix))

    @pk.kernel
    def bad_order(d: Buffer[f32]):
        fa = pk.frag_a(f16, 16, 16, 16)
        fb = pk.frag_b(f16, 16, 16, 16)
        acc = pk.frag_acc(f32, 16, 16, 16)
        acc = pk.mma(fb, fa, acc)

    assert "takes a frag_a, a frag_b and a frag_acc" in str(_error(bad_order))

    @pk.kernel
    def bad_elem(d: Buffer[f16]):
        acc = pk.frag_acc(f32, 16, 16, 16)
        pk.frag_fill(acc, 0.0)
        pk.frag_store(d, 0, 16, acc)

    assert "'d' holds f16 but the fragment holds f32" in str(_error(bad_elem))

    @pk.kernel
    def bad_private(d: Buffer[f32]):
        t = pk.local(f16, 256)
        fa = pk.frag_a(f16, 16, 16, 16)
        pk.frag_load(fa, t, 0, 16)

    assert "not the private array 't'" in str(_error(bad_private))

    @pk.kernel
    def bad_expr(d: Buffer[f32]):
        acc = pk.frag_acc(f32, 16, 16, 16)
        d[0] = pk.mma(acc, acc, acc)

    assert "is a statement of its own" in str(_error(bad_expr))

    @pk.kernel
    def bad_layout(d: Buffer[f32]):
        acc = pk.frag_acc(f32, 16, 16, 16)
        pk.frag_fill(acc, 0.0)
        pk.frag_store(d, 0, 16, acc, "diagonal")

    assert 'layout of pk.frag_store() is "row" or "col"' in str(_error(bad_layout))


def test_divergent_fragment_operation_is_refused():
    @pk.kernel
    def divergent(d: Buffer[f32]):
        acc = pk.frag_acc(f32, 16, 16, 16)
        pk.frag_fill(acc, 0.0)
        if pk.local_id(0) < 8:
            pk.frag_store(d, 0, 16, acc)

    e = _error(divergent)
    assert "pk.frag_store() is reached only by some work-items" in str(e)
    assert "local_id(0)" in str(e) and e.loc.source_line.strip().startswith("pk.frag_store")


def test_checked_mode_guards_fragment_memory():
    """bounds_check=True checks a fragment load/store's lowest and highest element (the operation is
    skipped and the violation named); before, a too-short buffer was silently overrun."""
    from polykern.errors import LaunchError

    mod = pk.build([fill_scale_store], targets=["llvm"], bounds_check=True)
    ones = np.ones(256, np.float16)
    with pytest.raises(LaunchError, match=r"out-of-bounds frag_store on buffer 'd' at offset 0 with leading dimension 20: .* span 0 \.\. 315 \(length 100\)"):
        mod["fill_scale_store"](ones, ones, np.zeros(100, np.float32), np.float32(1), grid=1, block=8)
    d = np.zeros(320, np.float32)
    mod["fill_scale_store"](ones, ones, d, np.float32(1), grid=1, block=8)
    assert (d.reshape(16, 20)[:, :16] == 8.5).all()
    with pytest.raises(LaunchError, match=r"out-of-bounds frag_load on buffer 'a'"):
        mod["fill_scale_store"](ones[:100], ones, d, np.float32(1), grid=1, block=8)


LAYOUT = "col"


def test_a_layout_that_is_not_a_literal_is_named():
    """The layout must be the literal itself; a Python variable holding "col" (red team, 2026-11-24) was
    refused without saying why. The message names the argument, what was written and why, at the layout."""
    @pk.kernel
    def layout_by_name(d: Buffer[f32], x: Buffer[f32, "readonly"]):
        a = pk.frag_acc(f32, 16, 16, 16)
        pk.frag_load(a, x, 0, 16, LAYOUT)
        pk.frag_store(d, 0, 16, a)

    @pk.kernel
    def layout_twice(d: Buffer[f32]):
        acc = pk.frag_acc(f32, 16, 16, 16)
        pk.frag_fill(acc, 0.0)
        pk.frag_store(d, 0, 16, acc, "row", layout="col")

    e = _error(layout_by_name)
    assert ('the layout of pk.frag_load() is "row" or "col", written as a string literal in the call (argument 5 '
            'or layout=); got LAYOUT (a name, whose value is not read)') in str(e)
    assert e.loc is not None and e.loc.source_line.strip() == "pk.frag_load(a, x, 0, 16, LAYOUT)"
    assert e.loc.col == e.loc.source_line.index("LAYOUT") + 1
    e = _error(layout_twice)
    assert "pk.frag_store() takes one layout (argument 5 or layout=), got 2" in str(e) and e.loc is not None
