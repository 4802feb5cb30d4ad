"""External validation: NVRTC (and nvcc) compile the emitted CUDA C, ptxas assembles every PTX."""
from __future__ import annotations

import pytest

from polykern.testing.c_corpus import corpus
from polykern.errors import BackendUnavailableError
from polykern_cuda import toolchain
from polykern_cuda.codegen import cuda_source

from cuda_support import SUPPORTED


def _need_nvrtc():
    try:
        toolchain.nvrtc_library()
    except BackendUnavailableError as e:
        pytest.skip(f"NVRTC is not installed here ({e}); pip install nvidia-cuda-nvrtc==13.0.*")


def _need_ptxas():
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")


@pytest.fixture
def nvrtc_only(monkeypatch):
    monkeypatch.setenv(toolchain.COMPILER_ENV, "nvrtc")


@pytest.mark.parametrize("arch", ["sm_75", "sm_90", "sm_120"])
def test_nvrtc_ptx_of_whole_corpus_assembles(arch, nvrtc_only):
    _need_nvrtc()
    _need_ptxas()
    funcs = corpus()
    src, symbols = cuda_source([funcs[n] for n in SUPPORTED])
    ptx, tool = toolchain.compile_cuda(src, arch, "ptx")
    assert tool == "nvrtc" and not ptx.endswith(b"\x00")
    text = ptx.decode()
    assert f".target {arch}" in text
    for sym in symbols.values():
        assert f".entry {sym}(" in text
    toolchain.ptxas_check(ptx, arch)


@pytest.mark.parametrize("name", ["saxpy", "half_math", "atomics_16", "special_values"])
def test_nvrtc_ptx_per_kernel_assembles(name, nvrtc_only):
    _need_nvrtc()
    _need_ptxas()
    ptx, _ = toolchain.compile_cuda(cuda_source([corpus()[name]])[0], "sm_90", "ptx")
    toolchain.ptxas_check(ptx, "sm_90")


def test_nvrtc_cubin_is_an_elf(nvrtc_only):
    _need_nvrtc()
    cubin, _ = toolchain.compile_cuda(cuda_source([corpus()["saxpy"]])[0], "sm_90", "cubin")
    assert cubin[:4] == b"\x7fELF"


def test_nvcc_ptx_of_whole_corpus_assembles(monkeypatch):
    if toolchain.find_nvcc() is None:
        pytest.skip("nvcc is not on PATH")
    _need_ptxas()
    monkeypatch.setenv(toolchain.COMPILER_ENV, "nvcc")
    src, _ = cuda_source([corpus()[n] for n in SUPPORTED])
    ptx, tool = toolchain.compile_cuda(src, "sm_90", "ptx")
    assert tool == "nvcc"
    toolchain.ptxas_check(ptx, "sm_90")


def test_ptxas_rejects_broken_ptx():
    _need_ptxas()
    from polykern.errors import CompileError

    with pytest.raises(CompileError) as info:
        toolchain.ptxas_check(b".version 9.0\n.target sm_90\n.address_size 64\nnot ptx at all\n", "sm_90")
    assert "ptxas" in str(info.value)
