"""Helpers shared by the opencl backend tests: expected refusals, golden comparison, PoCL context."""
from __future__ import annotations

import pathlib

from polykern.testing.c_corpus import NAMES
from polykern.testing import tier_skip

GOLDEN = pathlib.Path(__file__).parent / "golden"

# Corpus kernels OpenCL must refuse, and the feature its error names.
REFUSED = {"atomics_8": "atomic_add on u8", "atomics_16": "atomic_add on f16"}
SUPPORTED = [n for n in NAMES if n not in REFUSED]


def pocl_context():
    """(pyopencl, a context on PoCL's CPU device); skips the test with the reason when unavailable."""
    try:
        import pyopencl as cl
    except Exception as e:
        tier_skip.skip("pocl", f"pyopencl could not be imported: {e}")
    try:
        platforms = [p for p in cl.get_platforms() if "Portable Computing Language" in p.name]
    except Exception as e:
        tier_skip.skip("pocl", f"no OpenCL platform (ICD loader found none): {e}")
    if not platforms:
        tier_skip.skip("pocl", "no PoCL platform (pip install pocl-binary-distribution, or Debian pocl-opencl-icd)")
    return cl, cl.Context(platforms[0].get_devices()[:1])
