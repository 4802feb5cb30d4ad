"""Checked mode (``bounds_check=True``) on CUDA, device-free: every conformance and corpus kernel, with
its accesses guarded, still becomes CUDA C that NVRTC compiles and PTX that ptxas assembles, on both
code generators (CUDA C and LLVM NVPTX); the guards are really there (one compare-and-swap on the
error record per checked kernel)."""
from __future__ import annotations

import copy
import pathlib
import re
import sys

import pytest

import polykern as pk
from polykern.testing.c_corpus import corpus
from polykern.passes import run_default_passes
from polykern.passes.bounds_check import bounds_check
from polykern_cuda import toolchain
from polykern_cuda.codegen import cuda_source

from cuda_support import SUPPORTED

try:
    from conformance import ALL_CASES
except ImportError:  # plain pytest: the suite lives in the repository's tests/
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests"))
    from conformance import ALL_CASES

needs_ptxas = pytest.mark.skipif(toolchain.find_ptxas() is None, reason="ptxas (CUDA toolkit) is not on PATH")


def _checked_corpus():
    funcs = corpus()
    return [bounds_check(run_default_passes(copy.deepcopy(funcs[n]))) for n in SUPPORTED]


def test_checked_cuda_c_has_guards_and_hidden_parameters():
    funcs = _checked_corpus()
    src, symbols = cuda_source(funcs)
    assert src.count("atomicCAS") >= len(funcs)
    assert re.search(r"saxpy[^(]*\([^)]*bounds_lens[^)]*bounds_err", src)


@needs_ptxas
def test_checked_cuda_c_compiles_and_assembles(monkeypatch):
    try:
        toolchain.nvrtc_library()
    except pk.errors.BackendUnavailableError as e:
        pytest.skip(f"NVRTC is not installed here ({e})")
    monkeypatch.setenv(toolchain.COMPILER_ENV, "nvrtc")
    src, _ = cuda_source(_checked_corpus())
    ptx, _ = toolchain.compile_cuda(src, "sm_90", "ptx")
    toolchain.ptxas_check(ptx, "sm_90")


@needs_ptxas
@pytest.mark.parametrize("case", ALL_CASES, ids=[c.name for c in ALL_CASES])
def test_checked_nvptx_assembles(case):
    (dev,) = pk.build(case.kernels, targets=["nvptx -arch=sm_90"], bounds_check=True).imports
    ptx = dev.inspect_source("ptx")
    assert len(re.findall(r"\batom\.[a-z.]*cas\.b32", ptx)) >= len(case.kernels)
    toolchain.ptxas_check(ptx.encode(), "sm_90")
