"""Helpers shared by the metal backend tests: expected refusals, golden comparison."""
from __future__ import annotations

import difflib
import os
import pathlib

import pytest

from polykern.codegen.c_corpus import NAMES

GOLDEN = pathlib.Path(__file__).parent / "golden"
UPDATE = os.environ.get("POLYKERN_UPDATE_GOLDEN", "") not in ("", "0")

# Corpus kernels Metal must refuse, and the feature its error names.
F64 = "type f64"
REFUSED = {"atomics_8": "atomic_add on u8", "atomics_16": "atomic_add on f16", "atomics_64": "atomic_add on i64",
           "atomics_f64": F64, "casts": F64, "double_math": F64, "special_values": F64}
SUPPORTED = [n for n in NAMES if n not in REFUSED]


def check_golden(path: pathlib.Path, text: str) -> None:
    """``text`` must equal the golden file (POLYKERN_UPDATE_GOLDEN=1 rewrites it); fails with a diff."""
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing; run with POLYKERN_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text()
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            f"golden/{path.name}", "emitted"))
        pytest.fail(f"{path.name} changed (POLYKERN_UPDATE_GOLDEN=1 regenerates):\n{diff}")
