"""Golden SPIR-V disassembly (our own spirv_text, as embedded in artifacts), diffed line by line.

Regenerate after an intended codegen change with
    POLYKERN_UPDATE_GOLDEN=1 python -m pytest backends/vulkan/tests/test_vulkan_golden.py
and review the diff of backends/vulkan/tests/golden/.
"""
from __future__ import annotations

import pathlib

import pytest

from polykern.testing.golden import check_golden

import polykern as pk

import vulkan_kernels as K

GOLDEN = pathlib.Path(__file__).parent / "golden"

CASES = {
    "saxpy": (K.saxpy, "vulkan"),
    "saxpy_spirv1_0": (K.saxpy, "vulkan -spirv=1.0"),
    "saxpy_spirv1_6": (K.saxpy, "vulkan -spirv=1.6"),
    "control": (K.control, "vulkan"),
    "short_circuit": (K.short_circuit, "vulkan"),
    "shared_reduce": (K.shared_reduce, "vulkan"),
    "local_arrays": (K.local_arrays, "vulkan"),
    "atomics_f32": (K.atomics_f32, "vulkan"),
    "casts_i8": (K.make_casts(pk.i8), "vulkan"),
    "arith_f16": (K.make_arith(pk.f16), "vulkan"),
}


def emitted(name):
    kernel, target = CASES[name]
    return pk.build([kernel], targets=[target]).on("vulkan").inspect_source("spirv-asm")


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_spirv_asm(name):
    path = GOLDEN / f"{name}.spvasm"
    text = emitted(name)
    check_golden(path, text)


def test_output_is_deterministic_across_builds():
    a = pk.build([K.control, K.saxpy], targets=["vulkan"]).on("vulkan")
    b = pk.build([K.saxpy, K.control], targets=["vulkan"]).on("vulkan")
    assert a.save_to_bytes() == b.save_to_bytes()
    assert a.sources == b.sources
