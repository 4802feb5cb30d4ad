"""Golden WGSL: the emitted text of every kernel in ir_kernels.KERNELS, diffed line by line.

Regenerate after an intended codegen change with
    POLYKERN_UPDATE_GOLDEN=1 python -m pytest backends/webgpu/tests/test_wgsl_golden.py
and review the diff of backends/webgpu/tests/golden/.
"""
from __future__ import annotations

import pathlib

import pytest

from polykern.testing.golden import check_golden

from polykern.ir.verifier import verify
from polykern.passes.legalize_target import legalize_for_target
from polykern_webgpu.wgsl_emit import emit_wgsl

from ir_kernels import F16_KERNELS, KERNELS

GOLDEN = pathlib.Path(__file__).parent / "golden"


def emitted(name):
    text, attrs = emit_wgsl(legalize_for_target(verify(KERNELS[name]()), "webgpu"), f16_ok=name in F16_KERNELS)
    return text


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_golden_wgsl(name):
    path = GOLDEN / f"{name}.wgsl"
    text = emitted(name)
    check_golden(path, text)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_emission_is_deterministic(name):
    assert emitted(name) == emitted(name)


def test_golden_files_have_no_strays():
    stray = sorted(p.stem for p in GOLDEN.glob("*.wgsl") if p.stem not in KERNELS)
    assert not stray, f"golden files without a kernel: {stray}"
