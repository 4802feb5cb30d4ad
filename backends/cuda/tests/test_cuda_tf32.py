"""f32 (tf32) matrix fragments on NVIDIA (mma_sync.py): the m16n8k8 tf32 lane tables cover every element
once, and the CUDA C (NVRTC) and NVPTX paths emit ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``
with every input rounded by ``cvt.rna.tf32.f32``, which ptxas assembles for sm_80 and sm_90. The results
on a GPU are checked by tests/test_matrix.py (f32 cases, test_tf32_rounding_of_inputs)."""
from __future__ import annotations

import os
import re
import sys

import pytest

import polykern as pk
from polykern import f16, f32
from polykern.errors import KernelTypeError
from polykern.ir.types import FragmentType
from polykern.passes import run_default_passes
from polykern.target import Target
from polykern_cuda import mma_sync, nvptx, toolchain
from polykern_cuda.codegen import cuda_source

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
from matrix_kernels import tf32_inputs, tile_gemm  # noqa: E402

KERNELS = [tile_gemm.specialize(TA=f32, TC=f32, M=32, N=16, K=16, BCOL=1), tf32_inputs.specialize(COL=0)]
MMA = re.compile(r"mma\.sync\.aligned\.(m16n8k\d+)\.row\.col\.(\w+)\.(\w+)\.(\w+)\.(\w+)")
#: tile_gemm 32x16x16: 2 x 2 output blocks x 2 k-blocks per mma; tf32_inputs: 2 mma of one block each
INSTRUCTIONS = 8 + 2


@pytest.mark.parametrize("shape", mma_sync.TF32_SHAPES)
@pytest.mark.parametrize("role", ["a", "b"])
def test_tf32_lanes_hold_every_element_once(role, shape):
    ft = FragmentType(role, f32, *shape)
    seen = {}
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for (r0, rg, rt), (c0, cg, ct) in mma_sync.slots(ft):
            rc = (r0 + rg * g + rt * t, c0 + cg * g + ct * t)
            assert rc not in seen, (rc, lane, seen.get(rc))
            seen[rc] = lane
    assert set(seen) == {(r, c) for r in range(ft.rows) for c in range(ft.cols)}


def test_tf32_lane_table_is_the_ptx_isa_one():
    """PTX ISA "Matrix Fragments for mma.m16n8k8" (.tf32): lane (g, t) holds A rows g, g+8 and columns t,
    t+4 as a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); B b0 (t, g), b1 (t+4, g)."""
    def at(ft, lane):
        g, t = lane >> 2, lane & 3
        return [(r0 + rg * g + rt * t, c0 + cg * g + ct * t) for (r0, rg, rt), (c0, cg, ct) in mma_sync.slots(ft)]

    assert at(FragmentType("a", f32, 16, 8, 8), 4 * 5 + 3) == [(5, 3), (13, 3), (5, 7), (13, 7)]
    assert at(FragmentType("b", f32, 16, 8, 8), 4 * 5 + 3) == [(3, 5), (7, 5)]
    assert mma_sync.register_count(FragmentType("a", f32, 16, 8, 8)) == 4
    assert mma_sync.register_count(FragmentType("b", f32, 16, 8, 8)) == 2
    # K = 16: two k blocks in k order; the second A block's columns start at 8
    assert at(FragmentType("a", f32, 16, 8, 16), 0) == [(0, 0), (8, 0), (0, 4), (8, 4),
                                                        (0, 8), (8, 8), (0, 12), (8, 12)]


def _check(text: str) -> None:
    found = [m.groups() for m in MMA.finditer(text)]
    assert set(found) == {("m16n8k8", "f32", "tf32", "tf32", "f32")}
    assert len(found) == INSTRUCTIONS
    assert "cvt.rna.tf32.f32" in text


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_c_tf32_mma_assembles(arch, monkeypatch):
    try:
        toolchain.nvrtc_library()
    except pk.errors.BackendUnavailableError as e:
        pytest.skip(f"NVRTC is not installed here ({e})")
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")
    monkeypatch.setenv(toolchain.COMPILER_ENV, "nvrtc")
    src, _ = cuda_source([run_default_passes(k.ir) for k in KERNELS])
    ptx, _ = toolchain.compile_cuda(src, arch, "ptx")
    _check(ptx.decode())
    toolchain.ptxas_check(ptx, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvptx_tf32_mma_assembles(arch):
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")
    ptx = nvptx.generate([run_default_passes(k.ir) for k in KERNELS], Target.parse(f"nvptx -arch={arch}"))[0]
    text = ptx.decode()
    _check(text)
    # one conversion per distinct A/B element (LLVM merges the repeated ones: B's fill, A reused over N)
    assert text.count("cvt.rna.tf32.f32") >= 16 * 16 // 32 + 16 * 16 // 32
    toolchain.ptxas_check(ptx, arch)


@pytest.mark.parametrize("kind", ["cuda", "nvptx"])
def test_tf32_refusals_name_the_shape(kind):
    """f32 inputs tile by k = 8 (K 8, 16, 32); f16 inputs still need K 16 or 32."""
    with pytest.raises(KernelTypeError) as ei:
        pk.build([tile_gemm.specialize(TA=f16, TC=f32, M=16, N=8, K=8, BCOL=0)], targets=[f"{kind} -arch=sm_80"])
    assert "K in 16, 32" in str(ei.value) and ei.value.loc is not None
    with pytest.raises(KernelTypeError) as ei:
        pk.build([tile_gemm.specialize(TA=f32, TC=f32, M=8, N=8, K=8, BCOL=0)], targets=[f"{kind} -arch=sm_80"])
    assert "M in 16, 32" in str(ei.value)
