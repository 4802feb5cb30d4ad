"""Golden MSL for every kernel of the C-like corpus, diffed line by line; refusals checked.

Nothing on Linux compiles MSL, so beyond the goldens (reviewed by people) the shaders get structural
checks here; the Metal runtime (macOS) is where they are compiled.

Regenerate after an intended codegen change with
    POLYKERN_UPDATE_GOLDEN=1 python -m pytest backends/metal/tests/test_metal_golden.py
and review the diff of backends/metal/tests/golden/.
"""
from __future__ import annotations

import re

import pytest

from polykern.testing.c_corpus import corpus
from polykern.errors import KernelTypeError
from polykern_metal.codegen import metal_shaders

from metal_support import GOLDEN, REFUSED, SUPPORTED
from polykern.testing.golden import check_golden
from polykern.passes.clone import clone_function
from polykern.passes.legalize_target import legalize_for_target


def _shader(name):
    """The MSL of corpus kernel ``name`` after metal's legalization (as pk.build runs it)."""
    return metal_shaders([legalize_for_target(clone_function(corpus()[name]), "metal")])[name]


@pytest.mark.parametrize("name", SUPPORTED)
def test_golden_msl(name):
    text = _shader(name)
    check_golden(GOLDEN / f"{name}.metal", text)


@pytest.mark.parametrize("name", SUPPORTED)
def test_shader_is_self_contained_and_balanced(name):
    text = _shader(name)
    assert text.count("#include <metal_stdlib>") == 1 and "using namespace metal;" in text
    assert len(re.findall(r"^kernel void ", text, re.M)) == 1
    for a, b in ("{}", "()", "[]"):
        assert text.count(a) == text.count(b), f"unbalanced {a}{b}"
    assert "double" not in text and "__" not in text.replace("__METAL", "")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_a_located_kernel_type_error(name):
    with pytest.raises(KernelTypeError) as info:
        metal_shaders([corpus()[name]])
    msg = str(info.value)
    assert "metal backend" in msg and REFUSED[name] in msg and "not supported" in msg
    assert info.value.loc is not None or name == "special_values"  # hand-built IR has no location


def test_f64_refusal_says_why():
    with pytest.raises(KernelTypeError, match="no double-precision type; use f32"):
        metal_shaders([corpus()["double_math"]])
