"""examples/attention_f16.py, the fused attention forward on matrix fragments: it runs on the CPU
(llvm) against the float64 reference within its documented bound (both head dims, causal or not,
sequences that are not whole tiles), the oracle runs the GPU specialization (subgroups of 32) without
a race or a lane disagreement, the GPU kernels compile (CUDA C through NVRTC and nvptx, both through
ptxas for sm_80 and sm_90; SPIR-V through a spirv-val that knows SPV_KHR_cooperative_matrix), and
lavapipe, which has no 16x16x16 cooperative matrices, refuses it by name."""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import polykern as pk
from polykern.errors import BackendUnavailableError, DeviceError
from polykern.testing import tier_skip

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import attention_f16 as A  # noqa: E402

sys.path.remove(os.path.join(ROOT, "examples"))


@pytest.fixture(scope="module")
def cpu():
    return pk.build(A.kernels(subgroups=(8,), causal=(False, True)) + [A.kernel_for(64, 8, staging="sync")],
                    targets=["llvm"])


def _qkv(rng, bh, seq, d):
    return tuple(rng.standard_normal((bh, seq, d)).astype(np.float16) for _ in range(3))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("seq", [80, 64, 17])  # 80, 17: neither BM nor BN divides it (masked rows and keys)
def test_cpu_matches_reference_within_bound(cpu, d, seq, causal):
    rng = np.random.default_rng(seq * 1000 + d + causal)
    q, k, v = _qkv(rng, 2, seq, d)
    o = np.full((2, seq, d), np.nan, np.float16)  # every element must be written
    A.launch(cpu, q.ravel(), k.ravel(), v.ravel(), o.ravel(), 2, seq, d, A.device_subgroup_size(cpu), causal)
    assert not np.isnan(o).any()
    assert A.check(o, q, k, v, causal) <= 1.0


def test_cpu_sync_staging(cpu):
    """The variant that stages K and V with loads and stores computes the same."""
    rng = np.random.default_rng(7)
    q, k, v = _qkv(rng, 2, 40, 64)
    outs = []
    for staging in A.STAGINGS:
        o = np.zeros((2, 40, 64), np.float16)
        A.launch(cpu, q.ravel(), k.ravel(), v.ravel(), o.ravel(), 2, 40, 64, 8, staging=staging)
        outs.append(o)
    assert A.check(outs[1], q, k, v) <= 1.0
    np.testing.assert_array_equal(outs[0], outs[1])


def test_cpu_large_scores_do_not_overflow(cpu):
    """Scores up to ~60 (2^87 after exp2 without the running max): the online softmax keeps P <= 1."""
    rng = np.random.default_rng(5)
    q, k, v = _qkv(rng, 1, 40, 64)
    q *= np.float16(8.0)
    k *= np.float16(8.0)
    o = np.zeros((1, 40, 64), np.float16)
    A.launch(cpu, q.ravel(), k.ravel(), v.ravel(), o.ravel(), 1, 40, 64, A.device_subgroup_size(cpu))
    assert np.isfinite(o).all()
    assert A.check(o, q, k, v) <= 1.0


def test_check_rejects_plausible_bugs():
    """The bound is tight enough to see a wrong scale, a missing rescale or a stale normalization."""
    rng = np.random.default_rng(3)
    q, k, v = _qkv(rng, 2, 48, 64)
    ref, _ = A.reference(q, k, v)
    assert A.check(ref.astype(np.float16), q, k, v) <= 1.0
    wrong_scale, _ = A.reference(q * np.float16(1.125), k, v)
    assert A.check(wrong_scale, q, k, v) > 1.0
    half = 24  # two key blocks combined without alpha: each half normalized by its own max, summed
    s = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 2, 1) / 8.0
    p = np.concatenate([np.exp(s[..., :half] - s[..., :half].max(-1, keepdims=True)),
                        np.exp(s[..., half:] - s[..., half:].max(-1, keepdims=True))], -1)
    no_rescale = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)
    assert A.check(no_rescale, q, k, v) > 1.0
    assert A.check(ref * (1 + 2.0 ** -7), q, k, v) > 1.0
    causal_ref, _ = A.reference(q, k, v, causal=True)
    assert A.check(causal_ref, q, k, v) > 1.0 and A.check(causal_ref, q, k, v, causal=True) <= 1.0


@pytest.mark.parametrize("d,staging", [(64, "async"), (128, "async"), (64, "sync")])
def test_oracle_runs_the_gpu_specialization(d, staging):
    """Subgroups of 32 (the cuda/nvptx/Vulkan kernel): no race between the staging (asynchronous
    copies waited for and published by a barrier before use, not overwritten while read), the
    fragment stores and the per-row work (two lanes per row), every lane agrees, and the numbers are
    right."""
    from polykern.testing.interp import interpret

    rng = np.random.default_rng(d)
    seq = 40
    q, k, v = _qkv(rng, 1, seq, d)
    bm, _ = A.CONFIGS[d]
    res = interpret(A.kernel_for(d, 32, True, staging=staging),
                    [q.ravel(), k.ravel(), v.ravel(), np.zeros(seq * d, np.float16), np.int32(seq),
                     np.float32(A.LOG2E / math.sqrt(d))], ((seq + bm - 1) // bm, 1), (bm // 16) * 32, 32)
    assert A.check(res.buffers["o"].reshape(1, seq, d), q, k, v, causal=True) <= 1.0


def test_launch_refuses_what_it_was_not_built_for(cpu):
    z = np.zeros(16 * 64, np.float16)
    with pytest.raises(ValueError, match="head dims"):
        A.launch(cpu, z, z, z, z, 1, 16, 96, 8)
    with pytest.raises(ValueError, match="subgroups of"):
        A.launch(cpu, z, z, z, z, 1, 16, 64, 16)
    with pytest.raises(ValueError, match="BN <= d"):
        A.kernel_for(64, 32, tiles=(64, 128))
    with pytest.raises(ValueError, match="BM a multiple of 16"):
        A.kernel_for(64, 32, tiles=(40, 32))
    with pytest.raises(ValueError, match="staging"):
        A.kernel_for(64, 32, staging="tma")


GPU_KERNELS = A.kernels(subgroups=(32,), causal=(False, True), stagings=A.STAGINGS)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_c_assembles(arch, monkeypatch):
    from polykern_cuda import toolchain

    try:
        toolchain.nvrtc_library()
    except BackendUnavailableError as e:
        pytest.skip(f"NVRTC is not installed here ({e})")
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")
    monkeypatch.setenv(toolchain.COMPILER_ENV, "nvrtc")
    ptx = pk.build(GPU_KERNELS, targets=[f"cuda -arch={arch}"]).on("cuda").inspect_source("ptx")
    assert "mma.sync.aligned.m16n8k16" in ptx and "ldmatrix" in ptx and "cp.async.cg.shared.global" in ptx
    toolchain.ptxas_check(ptx.encode(), arch)  # also: static shared memory within 48 KiB


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvptx_assembles(arch):
    from polykern_cuda import toolchain

    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")
    ptx = pk.build(GPU_KERNELS, targets=[f"nvptx -arch={arch}"]).on("cuda").inspect_source("ptx")
    assert "mma.sync.aligned.m16n8k16" in ptx
    toolchain.ptxas_check(ptx.encode(), arch)


def test_spirv_validates():
    tool = os.environ.get("POLYKERN_SPIRV_VAL")
    if not tool:
        pytest.skip("POLYKERN_SPIRV_VAL (a SPIRV-Tools 2023.4+ spirv-val) is not set")
    mod = pk.build(GPU_KERNELS, targets=["vulkan"])
    for name, spv in mod.on("vulkan").payload.items():
        with tempfile.NamedTemporaryFile(suffix=".spv") as f:
            f.write(spv)
            f.flush()
            r = subprocess.run([tool, "--target-env", "vulkan1.1", f.name], capture_output=True, text=True)
        assert r.returncode == 0, f"{name}: {r.stderr}"


def test_vulkan_runs_or_refuses_by_name():
    """Where the device lists 16x16x16 f16 -> f32 cooperative matrices the kernel runs and checks;
    elsewhere (lavapipe) the launch is refused naming the feature."""
    try:
        mod = pk.build(A.kernels(dims=(64,)), targets=["vulkan"])
        sg = A.device_subgroup_size(mod)
    except (BackendUnavailableError, DeviceError) as e:
        tier_skip.skip("lavapipe", f"no Vulkan device here: {e}")
    rng = np.random.default_rng(9)
    q, k, v = _qkv(rng, 1, 40, 64)
    o = np.zeros((1, 40, 64), np.float16)
    if sg not in A.SUBGROUPS:
        with pytest.raises(ValueError, match="subgroups of"):
            A.launch(mod, q.ravel(), k.ravel(), v.ravel(), o.ravel(), 1, 40, 64, sg)
        return
    try:
        A.launch(mod, q.ravel(), k.ravel(), v.ravel(), o.ravel(), 1, 40, 64, sg)
    except DeviceError as e:
        assert "cooperative" in str(e).lower() or "VK_KHR_cooperative_matrix" in str(e), e
        return
    assert A.check(o, q, k, v) <= 1.0
