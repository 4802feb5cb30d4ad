"""Matrix fragments on ROCm (amdgpu_matrix.py): MFMA kernels compile for gfx90a/gfx942 and link with
ld.lld, the assembly has v_mfma_f32_16x16x16 instructions, every element of a fragment belongs to
exactly one (lane, slot), and the refusals (an RDNA target, integer fragments) are located."""
from __future__ import annotations

import os
import re
import sys

import pytest

import polykern as pk
from polykern import bf16, f16, f32, i8, i32
from polykern.errors import KernelTypeError
from polykern.ir.types import FragmentType

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
from matrix_kernels import fill_scale_store, staged, staged_bf16, tf32_inputs, tile_gemm  # noqa: E402

KERNELS = [tile_gemm.specialize(TA=f16, TC=f32, M=16, N=16, K=16, BCOL=0),
           tile_gemm.specialize(TA=f16, TC=f32, M=32, N=16, K=32, BCOL=1), fill_scale_store, staged]


@pytest.mark.parametrize("mcpu", ["gfx90a", "gfx942"])
def test_mfma_kernels_link(mcpu):
    dev = pk.build(KERNELS, targets=[f"rocm -mcpu={mcpu}"]).on("rocm")  # links with ld.lld (hsaco checked)
    asm = dev.sources["asm"]
    assert len(re.findall(r"v_mfma_f32_16x16x16_?f16", asm)) >= 1 + 4 + 1 + 1  # one per block and k step


@pytest.mark.parametrize("role", ["a", "b", "acc"])
def test_lanes_hold_every_element_once(role):
    from polykern_rocm.amdgpu_matrix import _blocks

    ft = FragmentType(role, f16 if role != "acc" else f32, 32, 16, 32)
    seen = set()
    for lane in range(64):
        lo, hi = lane % 16, lane // 16
        for block in _blocks(ft):
            for i in range(4):
                k = 4 * hi + i
                rc = (16 * block[0] + lo, 16 * block[1] + k) if role == "a" else (16 * block[0] + k, 16 * block[1] + lo)
                assert rc not in seen
                seen.add(rc)
    assert seen == {(r, c) for r in range(ft.rows) for c in range(ft.cols)}


def test_refusals():
    with pytest.raises(KernelTypeError, match="MFMA matrix instructions exist on gfx908, gfx90a, gfx942, gfx950, "
                                              "not gfx1100") as ei:
        pk.build([fill_scale_store], targets=["rocm -mcpu=gfx1100"])
    assert ei.value.loc is not None
    with pytest.raises(KernelTypeError, match=r"f16, bf16 or f32 \(tf32\) inputs into f32 accumulators"):
        pk.build([tile_gemm.specialize(TA=i8, TC=i32, M=16, N=16, K=16, BCOL=0)], targets=["rocm"])


BF16 = [tile_gemm.specialize(TA=bf16, TC=f32, M=16, N=16, K=16, BCOL=0),
        tile_gemm.specialize(TA=bf16, TC=f32, M=32, N=16, K=32, BCOL=1), staged_bf16.specialize(COL=1)]


@pytest.mark.parametrize("mcpu", ["gfx90a", "gfx942"])
def test_bf16_mfma_kernels_link(mcpu):
    """bf16 inputs: llvm.amdgcn.mfma.f32.16x16x16bf16.1k on the bits (<4 x i16>), the f16 lane layout."""
    dev = pk.build(BF16, targets=[f"rocm -mcpu={mcpu}"]).on("rocm")  # links with ld.lld (hsaco checked)
    asm = dev.sources["asm"]
    assert len(re.findall(r"v_mfma_f32_16x16x16_?bf16(_1k)?", asm)) >= 1 + 4 + 8 * 2
    assert not re.search(r"v_mfma_f32_16x16x16_?f16", asm)


def test_bf16_mfma_needs_gfx90a():
    with pytest.raises(KernelTypeError, match=r"bf16 MFMA \(16x16x16bf16_1k\) exists on gfx90a, gfx942, gfx950, "
                                              r"not gfx908") as ei:
        pk.build(BF16[:1], targets=["rocm -mcpu=gfx908"])
    assert ei.value.loc is not None


TF32 = [tile_gemm.specialize(TA=f32, TC=f32, M=16, N=16, K=16, BCOL=0),
        tile_gemm.specialize(TA=f32, TC=f32, M=32, N=16, K=32, BCOL=1)]


@pytest.mark.parametrize("mcpu", ["gfx908", "gfx90a", "gfx942"])
def test_tf32_mfma_kernels_link(mcpu):
    """f32 (tf32) inputs: llvm.amdgcn.mfma.f32.16x16x4f32, four per 16x16x16 block (element i of the f16
    layout's four per lane is k 4 * (lane // 16) + i), every input rounded to tf32 on the bits first."""
    dev = pk.build(TF32, targets=[f"rocm -mcpu={mcpu}"]).on("rocm")  # links with ld.lld (hsaco checked)
    asm = dev.sources["asm"]
    assert len(re.findall(r"v_mfma_f32_16x16x4_?f32", asm)) == 4 * (1 + 2 * 2)  # per (block, k block)
    assert not re.search(r"v_mfma_f32_16x16x16", asm)
    # the rounding on the bits (add 0x1000, clear the low 13 bits) of every distinct input element: 16x16x16
    # 4 + 4 (one block each), 32x16x32 16 of A + 8 of B (its B blocks feed both output blocks)
    assert asm.count("0xffffe000") == (4 + 4) + (16 + 8)


def test_tf32_needs_multiples_of_16():
    with pytest.raises(KernelTypeError, match=r"multiples of 16 \(shape 16x8x8\)") as ei:
        pk.build([tf32_inputs.specialize(COL=0)], targets=["rocm -mcpu=gfx90a"])
    assert ei.value.loc is not None
