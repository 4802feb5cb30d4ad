"""Hopper's matrix path on a real sm_90 GPU (docs/language.md "Hopper ..."): examples/gemm_hopper.py built for
``cuda -arch=sm_90a`` (CUDA C) and for ``nvptx -arch=sm_90a`` (LLVM NVPTX) runs (tensor maps encoded at launch,
warp-specialized wgmma) and matches float64, one wgmma (hopper_kernels.py: f32 and f16 stores, even and odd
leading dimensions) is exact, the launch checks of tensor maps and warpgroups are LaunchErrors, and
examples/attention_hopper.py and the register operations (rows, A from registers, B as K x N) match float64 and
the IR interpreter, on both targets. Skipped with the reason where no CUDA device (or a device other than compute capability 9.0) is
present; run by tools/gpu/run_gpu_hopper.sh.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import polykern as pk
from polykern import backends
from polykern.errors import LaunchError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
import gemm_hopper as G  # noqa: E402
import hopper_kernels as HK  # noqa: E402

#: The two ways to build Hopper kernels (docs/language.md 5.3 "Targets").
SM90A = ["cuda -arch=sm_90a", "nvptx -arch=sm_90a"]

_REC = backends.record_for_kind("cuda")
REASON = "" if (_REC is not None and _REC.runtime_available) else (
    _REC.runtime_reason if _REC is not None else "the cuda backend is not installed")
pytestmark = pytest.mark.skipif(bool(REASON), reason=f"no CUDA device: {REASON}")


@pytest.fixture(scope="module")
def sm90():
    from polykern_cuda.runtime import device

    dev = device.get()
    if tuple(dev.compute_capability) != (9, 0):
        pytest.skip(f"needs a compute capability 9.0 device (H100/H200), this is {dev.arch}")
    return dev


def _operands(M, N, K, seed=1):
    rng = np.random.default_rng(seed)
    a = (rng.integers(-8, 9, (M, K)) / 8 + rng.standard_normal((M, K)) * 0.01).astype(np.float16)
    b = (rng.integers(-8, 9, (N, K)) / 8 + rng.standard_normal((N, K)) * 0.01).astype(np.float16)
    return a, b


@pytest.mark.parametrize("target", ["cuda -arch=sm_90a -fmt=ptx", "cuda -arch=sm_90a -fmt=cuda", SM90A[1]])
@pytest.mark.parametrize("bn,stages,K", [(256, 4, 1024), (128, 3, 192), (64, 2, 64)])
def test_gemm_hopper_matches_float64(sm90, target, bn, stages, K):
    M, N = 256, 2 * bn
    mod = pk.build(G.make_gemm(BN=bn, STAGES=stages), target)
    a, b = _operands(M, N, K)
    c = np.zeros((M, N), np.float16)
    mod["gemm_hopper"](M, N, K, a.ravel(), b.ravel(), c.ravel(), shared_size=G.shared_elems(bn, stages),
                       grid=(M // G.BM, N // bn, 1), block=(384, 1, 1))
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    err = np.abs(c.astype(np.float64) - ref)
    # f32 accumulation (within the mma bound) then one f16 rounding of the result
    tol = np.abs(ref) * 2.0 ** -11 + (K + 1) * 2.0 ** -23 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)).T) * 2
    assert (err <= tol + 1e-6).all(), f"max error {err.max()} (worst {np.unravel_index(err.argmax(), err.shape)})"


@pytest.mark.parametrize("target", SM90A)
@pytest.mark.parametrize("grid", [1, 3, 7])
def test_persistent_gemm_matches_float64(sm90, target, grid):
    """Fewer blocks than tiles: each walks several tiles, the ring's phases running on across them."""
    M, N, K, bn = 384, 512, 320, 128
    mod = pk.build(G.make_gemm_persistent(BN=bn, STAGES=3), target)
    a, b = _operands(M, N, K, seed=grid)
    c = np.zeros((M, N), np.float16)
    mod["gemm_hopper_persistent"](M, N, K, a.ravel(), b.ravel(), c.ravel(), shared_size=G.shared_elems(bn, 3),
                                  grid=(grid, 1, 1), block=(384, 1, 1))
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    tol = np.abs(ref) * 2.0 ** -11 + (K + 1) * 2.0 ** -22 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)).T)
    err = np.abs(c.astype(np.float64) - ref)
    assert (err <= tol + 1e-6).all(), f"max error {err.max()}"


@pytest.mark.parametrize("target", SM90A)
@pytest.mark.parametrize("case", HK.CASES, ids=HK.CASE_IDS)
def test_one_wgmma_is_exact(sm90, target, case):
    """Small integers: every product and sum is exact, so the device's result is the reference's (which the IR
    interpreter computes too: test_hopper_nvptx.py)."""
    args, a, c = HK.launch_args(case)
    mod = pk.build(HK.make_one_wgmma(*case[:3]), target)
    mod["one_wgmma"](*args, shared_size=HK.SHARED_ELEMS, grid=(1, 1, 1), block=(128, 1, 1))
    assert np.array_equal(HK.stored(c, case), HK.expected(a, case)), target


@pytest.mark.parametrize("target", SM90A)
def test_wrong_block_is_a_launch_error(sm90, target):
    mod = pk.build(G.make_gemm(BN=64, STAGES=2), target)
    a, b = _operands(128, 64, 64)
    c = np.zeros((128, 64), np.float16)
    with pytest.raises(LaunchError, match="exactly 3 warpgroups"):
        mod["gemm_hopper"](128, 64, 64, a.ravel(), b.ravel(), c.ravel(), shared_size=G.shared_elems(64, 2), grid=(1, 1, 1),
                           block=(256, 1, 1))


@pytest.mark.parametrize("target", SM90A)
def test_tensor_map_checks_are_launch_errors(sm90, target):
    mod = pk.build(G.make_gemm(BN=64, STAGES=2), target)
    a, b = _operands(128, 64, 64)
    c = np.zeros((128, 64), np.float16)
    k = mod["gemm_hopper"]
    with pytest.raises(LaunchError, match="tensor map 'ta'.*needs 16384 elements"):  # M*K past A's end
        k(256, 64, 64, a.ravel(), b.ravel(), c.ravel(), shared_size=G.shared_elems(64, 2), grid=(1, 1, 1), block=(384, 1, 1))
    with pytest.raises(LaunchError, match="multiple of 16 bytes"):  # rows of 4 f16 = 8 bytes
        k(128, 64, 4, a.ravel(), b.ravel(), c.ravel(), shared_size=G.shared_elems(64, 2), grid=(1, 1, 1), block=(384, 1, 1))
    import cupy as cp

    buf = cp.asarray(np.concatenate([np.zeros(1, np.float16), a.ravel()]))
    with pytest.raises(LaunchError, match="aligned"):  # an offset view
        k(128, 64, 64, buf[1:], b.ravel(), c.ravel(), shared_size=G.shared_elems(64, 2), grid=(1, 1, 1), block=(384, 1, 1))


# ---------------------------------------------------------------- attention: registers, rows, A from registers

import attention_hopper as AT  # noqa: E402


@pytest.mark.parametrize("target", SM90A)
@pytest.mark.parametrize("D,causal,BN", [(64, False, 128), (128, False, 128), (64, True, 64), (128, True, 128)])
def test_attention_hopper_matches_float64(sm90, target, D, causal, BN):
    """wgmma for S, the row operations (pk.wg_row_max / sum, wg_rows, wg_elements), P from S's registers and V
    as a K x N tile (pk.wgmma_kn: one panel at D 64, two at D 128), against float64."""
    heads, seq = 2, 512
    mod = pk.build(AT.make_attention(D, causal, BN, 2), target)
    rng = np.random.default_rng(D + causal)
    q, k, v = (rng.uniform(-1, 1, (heads * seq, D)).astype(np.float16) for _ in range(3))
    o = np.zeros(heads * seq * D, np.float16)
    mod["attention_hopper"](*AT.launch_args(q.ravel(), k.ravel(), v.ravel(), o, heads, seq, D),
                            shared_size=AT.shared_elems(D, BN, 2), grid=(seq // AT.BM, heads, 1), block=(384, 1, 1))
    ref = AT.reference(q, k, v, heads, seq, D, causal)
    err = np.abs(o.reshape(heads * seq, D).astype(np.float64) - ref).max()
    assert err <= 2e-3, f"{target}: max |O - float64| = {err}"


@pytest.mark.parametrize("target", SM90A)
def test_attention_hopper_matches_the_interpreter(sm90, target):
    """The device and the IR interpreter on one input: the same kernel, the same exact meaning (exp2 and the
    tensor cores' sums within their promises)."""
    heads, seq, D, BN = 1, 256, 64, 64
    q, k, v, o_cpu = AT.run_on_cpu(heads, seq, D, True, BN, 2, seed=5)
    mod = pk.build(AT.make_attention(D, True, BN, 2), target)
    o = np.zeros(heads * seq * D, np.float16)
    mod["attention_hopper"](*AT.launch_args(q.ravel(), k.ravel(), v.ravel(), o, heads, seq, D),
                            shared_size=AT.shared_elems(D, BN, 2), grid=(seq // AT.BM, heads, 1), block=(384, 1, 1))
    diff = np.abs(o.reshape(heads * seq, D).astype(np.float64) - o_cpu.astype(np.float64))
    assert diff.max() <= 2.0 ** -10, f"{target}: device and interpreter differ by {diff.max()}"


@pytest.mark.parametrize("target", SM90A)
@pytest.mark.parametrize("n", [64, 128])
def test_wgmma_kn_and_rows_match_the_interpreter(sm90, target, n):
    """A @ B with B a K x N row-major tile (pk.wgmma_kn, panels of 64 columns) and A from another accumulator's
    registers, then the row max and sum: on small integers every step is exact, so the device equals float64 and
    the IR interpreter bit for bit."""
    from polykern.testing.interp import interpret

    K = 64

    @pk.kernel
    def kn(B: pk.Buffer[pk.f16, "readonly"], C: pk.Buffer[pk.f32], R: pk.Buffer[pk.f32]):
        pk.warpgroups(1)
        tb = pk.tensor_map(B, (K, n), (K, 64), "128B")
        tiles = pk.shared_dynamic(pk.f16)
        bar = pk.mbarriers(1)
        src = pk.wg_acc(pk.f32, 64, K)
        acc = pk.wg_acc(pk.f32, 64, n)
        rows = pk.wg_acc(pk.f32, 64, 8)
        mx = pk.wg_vec(pk.f32)
        sm = pk.wg_vec(pk.f32)
        if pk.local_id(0) == 0:
            pk.mbarrier_init(bar, 0, 1)
        pk.barrier()
        if pk.local_id(0) == 0:
            pk.mbarrier_arrive_tx(bar, 0, K * n * 2)
            for p in range(n // 64):
                pk.tma_load(tiles, p * K * 64, tb, 0, p * 64, bar, 0)
        pk.mbarrier_wait(bar, 0, 0)
        pk.wg_fill(src, 0.0)
        pk.wg_fill(acc, 0.0)
        pk.wg_fill(rows, 0.0)
        for i, j in pk.wg_elements(src):
            src[i, j] = pk.f32(i - j) * 0.25
        for kk in range(K // 16):
            pk.wgmma_kn(acc, src, kk * 16, tiles, kk * 16 * 64, K * 64)
        pk.wgmma_commit()
        pk.wgmma_wait(0)
        pk.wg_row_max(mx, acc)
        pk.wg_row_sum(sm, acc)
        for i, j in pk.wg_elements(rows):
            if j == 0:
                rows[i, j] = mx[i]
            if j == 1:
                rows[i, j] = sm[i]
        pk.wg_store(C, 0, n, acc)
        pk.wg_store(R, 0, 8, rows)

    rng = np.random.default_rng(n)
    b = rng.integers(-4, 5, (K, n)).astype(np.float16)
    args = lambda: [b.ravel(), np.zeros(64 * n, np.float32), np.zeros(64 * 8, np.float32)]  # noqa: E731
    shared = K * n
    ref = interpret(kn, args() + [shared], (1,), 128)
    got = args()
    pk.build(kn, target)["kn"](*got, shared_size=shared, grid=(1, 1, 1), block=(128, 1, 1))
    src = np.array([[(i - j) * 0.25 for j in range(K)] for i in range(64)], np.float64)
    want = src @ b.astype(np.float64)
    assert np.array_equal(got[1].reshape(64, n), want.astype(np.float32)), "pk.wgmma_kn with A from registers"
    assert np.array_equal(got[1], ref.buffers["C"])
    r = got[2].reshape(64, 8)
    assert np.array_equal(r[:, 0], want.max(1).astype(np.float32)) and np.array_equal(r[:, 1], want.sum(1))
    assert np.array_equal(got[2], ref.buffers["R"])


# ---------------------------------------------------------------- named barriers (bar.sync / bar.arrive)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
import named_barrier_kernels as NB  # noqa: E402


@pytest.mark.parametrize("target", SM90A)
@pytest.mark.parametrize("n_iter", [1, 7, 64])
def test_named_barriers_relay_matches_the_interpreter(sm90, n_iter, target):
    """A producer and a consumer warpgroup hand a shared tile over n_iter times through two named barriers
    ("full": bar.arrive / bar.sync 1, "empty": bar.arrive / bar.sync 2) while a third warpgroup leaves at once:
    the device gives the exact sums, as the IR interpreter does."""
    from polykern.testing.interp import interpret

    blocks = 4
    a = (np.arange(128 * blocks) % 17 - 8).astype(np.float32)
    c = np.zeros(128 * blocks, np.float32)
    pk.build(NB.relay, target)["relay"](n_iter, a, c, grid=(blocks, 1, 1), block=(384, 1, 1))
    assert np.array_equal(c, NB.relay_expected(a, n_iter))
    ref = interpret(NB.relay, [n_iter, a, np.zeros_like(c)], blocks, 384).buffers["C"]
    assert np.array_equal(c, ref)
