"""Golden CUDA C for every kernel of the C-like corpus, diffed line by line; refusals checked.

Regenerate after an intended codegen change with
    POLYKERN_UPDATE_GOLDEN=1 python -m pytest backends/cuda/tests/test_cuda_golden.py
and review the diff of backends/cuda/tests/golden/.
"""
from __future__ import annotations

import pytest

from polykern.passes.clone import clone_function
from polykern.passes.legalize_target import legalize_for_target
from polykern.testing.c_corpus import corpus
from polykern.errors import KernelTypeError
from polykern_cuda.codegen import cuda_source

from cuda_support import GOLDEN, REFUSED, SUPPORTED
from polykern.testing.golden import check_golden


@pytest.mark.parametrize("name", SUPPORTED)
def test_golden_cuda_c(name):
    text, symbols = cuda_source([legalize_for_target(clone_function(corpus()[name]), "cuda")])  # as pk.build
    check_golden(GOLDEN / f"{name}.cu", text)
    assert symbols[name] in text


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_a_located_kernel_type_error(name):
    with pytest.raises(KernelTypeError) as info:
        cuda_source([corpus()[name]])
    msg = str(info.value)
    assert "cuda backend" in msg and REFUSED[name] in msg and "not supported" in msg
    assert info.value.loc is not None and info.value.loc.line > 0  # points at the user's source


def test_one_translation_unit_shares_helpers():
    funcs = corpus()
    text, symbols = cuda_source([funcs["atomics_f32"], funcs["half_math"], funcs["atomics_16"]])
    assert text.count("float pk_f16(float x)") == 1
    assert text.count("pk_atomic_max_f32(float* p, float v)") == 1
    assert sorted(symbols) == ["atomics_16", "atomics_f32", "half_math"]
    assert text == cuda_source([funcs["atomics_f32"], funcs["half_math"], funcs["atomics_16"]])[0]
