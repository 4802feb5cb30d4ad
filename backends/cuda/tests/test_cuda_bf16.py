"""bf16 on NVIDIA (docs/language.md "bf16"): the CUDA C path (NVRTC, ``unsigned short`` bits and the
passes/legalize_f16.py conversions: no cuda_bf16.h) and the NVPTX path (LLVM ``i16``, llvm_bf16.py) compile and
assemble with ptxas; bf16 fragments are ``mma.sync...f32.bf16.bf16.f32`` with the f16 lane layout (ldmatrix
from shared memory). Results on a GPU: tests/test_bf16.py, tests/conformance (bf16 cases) and
tests/test_matrix.py, where cuda and nvptx are runnable targets."""
from __future__ import annotations

import os
import re
import sys

import pytest

import polykern as pk
from polykern import bf16, f32
from polykern.errors import BackendUnavailableError, KernelTypeError
from polykern.passes import run_default_passes
from polykern.passes.clone import clone_function
from polykern.passes.legalize_f16 import legalize_f16
from polykern.target import Target
from polykern_cuda import nvptx, toolchain
from polykern_cuda.codegen import cuda_source

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
from conformance.kernels_bf16 import bf16_arith as scalar_bf16  # noqa: E402
from matrix_kernels import staged_bf16, tile_gemm  # noqa: E402

MMA_BF16 = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"


FRAGMENTS = [tile_gemm.specialize(TA=bf16, TC=f32, M=16, N=16, K=16, BCOL=1), staged_bf16.specialize(COL=0),
             staged_bf16.specialize(COL=1)]


def _ir(kernels):
    """The kernels' IR as pk.build gives it to the NVIDIA targets (bf16 conversions written on the bits)."""
    return [legalize_f16(run_default_passes(clone_function(k.ir)), "cuda") for k in kernels]


def _need_nvrtc():
    try:
        toolchain.nvrtc_library()
    except BackendUnavailableError as e:
        pytest.skip(f"NVRTC is not installed here ({e})")


def _need_ptxas():
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")


def test_cuda_c_holds_bits_and_converts_with_integer_code():
    src, _ = cuda_source(_ir([scalar_bf16]))
    assert "#include" not in src and "__nv_bfloat16" not in src  # NVRTC alone, no cuda_bf16.h
    assert "unsigned short* out" in src and "__shared__" in src
    assert "32767u" in src and "| 64u" in src and "__float_as_uint" in src  # rounded on the bits
    assert "(unsigned int)x << 16u" in src and "__uint_as_float" in src  # widened on the bits


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
def test_cuda_c_scalar_bf16_assembles(arch, monkeypatch):
    _need_nvrtc()
    _need_ptxas()
    monkeypatch.setenv(toolchain.COMPILER_ENV, "nvrtc")
    src, _ = cuda_source(_ir([scalar_bf16]))
    ptx, _ = toolchain.compile_cuda(src, arch, "ptx")
    toolchain.ptxas_check(ptx, arch)


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_nvptx_scalar_bf16_assembles(arch):
    _need_ptxas()
    ptx = nvptx.generate(_ir([scalar_bf16]), Target.parse(f"nvptx -arch={arch}"))[0]
    assert not re.search(rb"\.bf16\b|cvt\.\w*bf16", ptx)  # i16 bits, not PTX's bf16 types
    toolchain.ptxas_check(ptx, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_c_bf16_mma_assembles(arch, monkeypatch):
    _need_nvrtc()
    _need_ptxas()
    monkeypatch.setenv(toolchain.COMPILER_ENV, "nvrtc")
    src, _ = cuda_source(_ir(FRAGMENTS))
    ptx, _ = toolchain.compile_cuda(src, arch, "ptx")
    text = ptx.decode()
    assert set(re.findall(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.\w+\.(\w+)\.\w+\.\w+", text)) == {"bf16"}
    assert text.count(MMA_BF16) >= 3
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in text  # a staged kernel's B (row-major)
    toolchain.ptxas_check(ptx, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvptx_bf16_mma_assembles(arch):
    _need_ptxas()
    text = nvptx.generate(_ir(FRAGMENTS), Target.parse(f"nvptx -arch={arch}"))[0].decode()
    assert MMA_BF16 in text and "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in text
    assert "f32.f16.f16.f32" not in text
    toolchain.ptxas_check(text.encode(), arch)


@pytest.mark.parametrize("kind", ["cuda", "nvptx"])
def test_bf16_fragments_need_sm_80(kind):
    with pytest.raises(KernelTypeError, match="mma.sync needs sm_80 or newer; the target is sm_75") as ei:
        pk.build([FRAGMENTS[0]], targets=[f"{kind} -arch=sm_75"])
    assert ei.value.loc is not None
