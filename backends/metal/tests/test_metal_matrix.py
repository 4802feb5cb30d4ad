"""Matrix fragments in MSL (msl_matrix.py): golden shaders of a fragment GEMM tile (row- and
column-major loads, an accumulate chain) and of fill/scale/column-major store, structural checks,
and the refusal of integer fragments. No MSL compiler runs on Linux: the goldens are reviewed by
people and compiled by the Metal runtime on macOS.

Regenerate after an intended change with
    POLYKERN_UPDATE_GOLDEN=1 python -m pytest backends/metal/tests/test_metal_matrix.py
"""
from __future__ import annotations

import os
import re
import sys

import pytest

import polykern as pk
from polykern import bf16, f16, f32, i8, i32
from polykern.errors import KernelTypeError
from polykern.passes import run_default_passes
from polykern.passes.clone import clone_function
from polykern.passes.legalize_target import legalize_for_target
from polykern.testing.golden import check_golden
from polykern_metal.codegen import metal_shaders

from metal_support import GOLDEN

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
from matrix_kernels import fill_scale_store, staged_bf16, tf32_inputs, tile_gemm  # noqa: E402

GEMM = tile_gemm.specialize(TA=f16, TC=f32, M=16, N=16, K=16, BCOL=1)
GEMM_BF16 = tile_gemm.specialize(TA=bf16, TC=f32, M=16, N=16, K=16, BCOL=1)


def _ir(kernel):
    """``kernel``'s IR as pk.build gives it to metal: the default passes, then metal's legalization."""
    return legalize_for_target(run_default_passes(clone_function(kernel.ir)), "metal")


@pytest.mark.parametrize("kernel,golden", [(GEMM, "matrix_tile_gemm"), (fill_scale_store, "matrix_fill_scale"),
                                           (GEMM_BF16, "matrix_tile_gemm_bf16"),
                                           (staged_bf16.specialize(COL=0), "matrix_staged_bf16"),
                                           (tf32_inputs.specialize(COL=1), "matrix_tf32_inputs")],
                         ids=["tile_gemm", "fill_scale_store", "tile_gemm_bf16", "staged_bf16", "tf32_inputs"])
def test_golden_msl(kernel, golden):
    text = metal_shaders([_ir(kernel)])[kernel.name]
    check_golden(GOLDEN / f"{golden}.metal", text)
    for a, b in ("{}", "()", "[]"):
        assert text.count(a) == text.count(b), f"unbalanced {a}{b}"


def test_tiles_and_calls():
    text = metal_shaders([_ir(GEMM)])[GEMM.name]
    assert "simdgroup_float8x8 pk_frag0[2][2];" in text  # the 16 x 16 accumulator: 2 x 2 tiles
    assert len(re.findall(r"simdgroup_multiply_accumulate\(", text)) == 8  # 4 output tiles x 2 k tiles
    assert ", true);" in text and ", false);" in text  # the column-major B loads transposed


def test_bf16_fragments_are_simdgroup_bfloat():
    """bf16 inputs (MSL 3.1 simdgroup_bfloat8x8) into float accumulators: the ushort bits of device and
    threadgroup memory are loaded as bfloat, a fill bit-casts the value's bits."""
    text = metal_shaders([_ir(GEMM_BF16)])[GEMM_BF16.name]
    assert "simdgroup_bfloat8x8 pk_frag1[2][2];" in text and "simdgroup_float8x8 pk_frag0[2][2];" in text
    assert "((device const bfloat*)a) + (" in text and "device ushort* a" in text
    staged = staged_bf16.specialize(COL=0)
    text = metal_shaders([_ir(staged)])[staged.name]
    assert "((threadgroup const bfloat*)sa) + (" in text
    assert re.search(r"make_filled_simdgroup_matrix<bfloat, 8, 8>\(as_type<bfloat>\(", text)


def test_integer_fragments_are_refused():
    kern = tile_gemm.specialize(TA=i8, TC=i32, M=16, N=16, K=16, BCOL=0)
    with pytest.raises(KernelTypeError) as ei:
        pk.build([kern], targets=["metal"])
    assert "metal does not support" in str(ei.value) and "half, bfloat and float, not i32" in str(ei.value)


def test_f32_inputs_are_rounded_to_tf32():
    """f32 A/B fragments (the language's tf32 inputs): simdgroup_float8x8 tiles, each rounded to tf32 on
    the bits of its thread_elements() after every load and fill; accumulators are not rounded."""
    kern = tile_gemm.specialize(TA=f32, TC=f32, M=16, N=16, K=16, BCOL=1)
    text = metal_shaders([_ir(kern)])[kern.name]
    rounds = re.findall(r"\{ thread auto &pk_e = (pk_frag\d)\[\d\]\[\d\]\.thread_elements\(\);", text)
    assert len(rounds) == 2 * 4  # A and B: 2 x 2 tiles each, after their loads
    assert "(pk_u + 0x1000u)) & 0xFFFFE000u" in text
    acc = re.search(r"simdgroup_float8x8 (pk_frag\d)\[2\]\[2\];  // acc", text).group(1)
    assert acc not in rounds
