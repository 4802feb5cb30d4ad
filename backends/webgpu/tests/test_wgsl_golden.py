"""Golden WGSL: the emitted text of every kernel in ir_kernels.KERNELS, diffed line by line.

Regenerate after an intended codegen change with
    POLYKERN_UPDATE_GOLDEN=1 python -m pytest backends/webgpu/tests/test_wgsl_golden.py
and review the diff of backends/webgpu/tests/golden/.
"""
from __future__ import annotations

import difflib
import os
import pathlib

import pytest

from polykern.ir.verifier import verify
from polykern_webgpu.wgsl_emit import emit_wgsl

from ir_kernels import F16_KERNELS, KERNELS

GOLDEN = pathlib.Path(__file__).parent / "golden"
UPDATE = os.environ.get("POLYKERN_UPDATE_GOLDEN", "") not in ("", "0")


def emitted(name):
    text, attrs = emit_wgsl(verify(KERNELS[name]()), f16_ok=name in F16_KERNELS)
    return text


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_golden_wgsl(name):
    path = GOLDEN / f"{name}.wgsl"
    text = emitted(name)
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing; run with POLYKERN_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text()
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            f"golden/{name}.wgsl", "emitted"))
        pytest.fail(f"WGSL of {name} differs from the golden file "
                    f"(POLYKERN_UPDATE_GOLDEN=1 to accept):\n{diff}")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_emission_is_deterministic(name):
    assert emitted(name) == emitted(name)


def test_golden_files_have_no_strays():
    stray = sorted(p.stem for p in GOLDEN.glob("*.wgsl") if p.stem not in KERNELS)
    assert not stray, f"golden files without a kernel: {stray}"
