"""Helpers shared by the cuda backend tests: expected refusals, golden comparison."""
from __future__ import annotations

import pathlib


from polykern.testing.c_corpus import NAMES

GOLDEN = pathlib.Path(__file__).parent / "golden"

# Corpus kernels CUDA must refuse, and the feature its error names.
REFUSED = {"atomics_8": "atomic_add on u8"}
SUPPORTED = [n for n in NAMES if n not in REFUSED]


