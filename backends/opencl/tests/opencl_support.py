"""Helpers shared by the opencl backend tests: expected refusals, golden comparison, PoCL context."""
from __future__ import annotations

import difflib
import os
import pathlib

import pytest

from polykern.codegen.c_corpus import NAMES

GOLDEN = pathlib.Path(__file__).parent / "golden"
UPDATE = os.environ.get("POLYKERN_UPDATE_GOLDEN", "") not in ("", "0")

# Corpus kernels OpenCL must refuse, and the feature its error names.
REFUSED = {"atomics_8": "atomic_add on u8", "atomics_16": "atomic_add on f16"}
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


def pocl_context():
    """(pyopencl, a context on PoCL's CPU device); skips the test with the reason when unavailable."""
    try:
        import pyopencl as cl
    except Exception as e:
        pytest.skip(f"pyopencl could not be imported: {e}")
    try:
        platforms = [p for p in cl.get_platforms() if "Portable Computing Language" in p.name]
    except Exception as e:
        pytest.skip(f"no OpenCL platform (ICD loader found none): {e}")
    if not platforms:
        pytest.skip("no PoCL platform (pip install pocl-binary-distribution, or Debian pocl-opencl-icd)")
    return cl, cl.Context(platforms[0].get_devices()[:1])
