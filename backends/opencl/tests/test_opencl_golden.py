"""Golden OpenCL C for every kernel of the C-like corpus, diffed line by line; refusals checked.

Regenerate after an intended codegen change with
    POLYKERN_UPDATE_GOLDEN=1 python -m pytest backends/opencl/tests/test_opencl_golden.py
and review the diff of backends/opencl/tests/golden/.
"""
from __future__ import annotations

import pytest

from polykern.passes.clone import clone_function
from polykern.passes.legalize_target import legalize_for_target
from polykern.testing.c_corpus import corpus
from polykern.errors import KernelTypeError
from polykern_opencl.codegen import opencl_source

from opencl_support import GOLDEN, REFUSED, SUPPORTED
from polykern.testing.golden import check_golden


@pytest.mark.parametrize("name", SUPPORTED)
def test_golden_opencl_c(name):
    text, symbols = opencl_source([legalize_for_target(clone_function(corpus()[name]), "opencl")])  # as pk.build
    check_golden(GOLDEN / f"{name}.cl", text)
    assert f"__kernel void {symbols[name]}(" in text


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_a_located_kernel_type_error(name):
    with pytest.raises(KernelTypeError) as info:
        opencl_source([corpus()[name]])
    msg = str(info.value)
    assert "opencl backend" in msg and REFUSED[name] in msg and "not supported" in msg
    assert info.value.loc is not None and info.value.loc.line > 0


def test_extensions_are_enabled_only_when_used():
    funcs = corpus()
    plain = opencl_source([funcs["saxpy"]])[0]
    assert "#pragma OPENCL EXTENSION" not in plain
    assert "#pragma OPENCL FP_CONTRACT OFF" in plain  # a*b+c is never fused (polykern.numerics)
    wide = opencl_source([funcs["atomics_64"], funcs["double_math"]])[0]
    for ext in ("cl_khr_fp64", "cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"):
        assert f"#pragma OPENCL EXTENSION {ext} : enable" in wide
    half = opencl_source([funcs["half_math"]])[0]
    assert "cl_khr_fp16" not in half and "vload_half" in half  # storage-only f16 needs no extension
