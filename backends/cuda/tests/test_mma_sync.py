"""Matrix fragments on NVIDIA (mma_sync.py): the lane layout covers every element once, the CUDA C
(NVRTC) and NVPTX paths emit mma.sync that ptxas assembles for sm_80 and sm_90, and the located
refusals (an arch without mma.sync, a shape the tiling does not cover). The results on a GPU are
checked by tests/test_matrix.py (cuda and nvptx are runnable targets there)."""
from __future__ import annotations

import os
import re
import sys

import pytest

import polykern as pk
from polykern import Buffer, f16, f32, i8, i32, u8
from polykern.errors import BackendUnavailableError, KernelTypeError
from polykern.ir.types import FragmentType
from polykern.passes import run_default_passes
from polykern.target import Target
from polykern_cuda import mma_sync, nvptx, toolchain
from polykern_cuda.codegen import cuda_source

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
from test_matrix import fill_scale_store, staged, tile_gemm  # noqa: E402

KERNELS = [tile_gemm.specialize(TA=f16, TC=f32, M=16, N=16, K=16, BCOL=0),
           tile_gemm.specialize(TA=f16, TC=f16, M=32, N=8, K=32, BCOL=1),
           tile_gemm.specialize(TA=i8, TC=i32, M=16, N=16, K=16, BCOL=0),
           tile_gemm.specialize(TA=u8, TC=i32, M=16, N=32, K=32, BCOL=1), fill_scale_store, staged]
MMA = re.compile(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.(\w+)\.(\w+)\.(\w+)\.(\w+)")


@pytest.mark.parametrize("elem", [f16, i8, u8])
@pytest.mark.parametrize("shape", mma_sync.SHAPES)
@pytest.mark.parametrize("role", ["a", "b", "acc"])
def test_lanes_hold_every_element_once(role, shape, elem):
    ft = FragmentType(role, elem if role != "acc" else f32, *shape)
    seen = {}
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for (r0, rg, rt), (c0, cg, ct) in mma_sync.slots(ft if role != "acc" else ft):
            rc = (r0 + rg * g + rt * t, c0 + cg * g + ct * t)
            assert rc not in seen, (rc, lane, seen.get(rc))
            seen[rc] = lane
    assert set(seen) == {(r, c) for r in range(ft.rows) for c in range(ft.cols)}


def _need_tools():
    try:
        toolchain.nvrtc_library()
    except BackendUnavailableError as e:
        pytest.skip(f"NVRTC is not installed here ({e})")
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")


def _expected_instructions():
    """{(dtype, atype): count} of the kernels' mma instructions per source occurrence."""
    return {("f32", "f16"), ("s32", "s8"), ("s32", "u8")}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_c_mma_sync_assembles(arch, monkeypatch):
    _need_tools()
    monkeypatch.setenv(toolchain.COMPILER_ENV, "nvrtc")
    src, symbols = cuda_source([run_default_passes(k.ir) for k in KERNELS])
    assert "#include" not in src  # NVRTC alone: the instruction is inline PTX
    ptx, tool = toolchain.compile_cuda(src, arch, "ptx")
    text = ptx.decode()
    assert {(m.group(1), m.group(2)) for m in MMA.finditer(text)} == _expected_instructions()
    toolchain.ptxas_check(ptx, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvptx_mma_sync_assembles(arch):
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")
    ptx = nvptx.generate([run_default_passes(k.ir) for k in KERNELS], Target.parse(f"nvptx -arch={arch}"))[0]
    text = ptx.decode()
    assert {(m.group(1), m.group(2)) for m in MMA.finditer(text)} == _expected_instructions()
    toolchain.ptxas_check(ptx, arch)


@pk.kernel
def small(d: Buffer[f32]):
    acc = pk.frag_acc(f32, 8, 8, 8)
    pk.frag_fill(acc, 1.0)
    pk.frag_store(d, 0, 8, acc)


@pytest.mark.parametrize("kind", ["cuda", "nvptx"])
def test_refusals_name_the_feature(kind):
    with pytest.raises(KernelTypeError) as ei:
        pk.build([fill_scale_store], targets=[f"{kind} -arch=sm_75"])
    assert "mma.sync needs sm_80 or newer; the target is sm_75" in str(ei.value)
    assert ei.value.loc is not None
    with pytest.raises(KernelTypeError) as ei:
        pk.build([small], targets=[f"{kind} -arch=sm_90"])
    assert f"{kind} does not support pk.frag_fill (8x8x8 f32 (acc))" in str(ei.value)
    assert "tiling covers M in 16, 32" in str(ei.value)
