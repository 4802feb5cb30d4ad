"""Helpers shared by the metal backend tests: expected refusals, golden comparison."""
from __future__ import annotations

import pathlib


from polykern.testing.c_corpus import NAMES

GOLDEN = pathlib.Path(__file__).parent / "golden"

# Corpus kernels Metal must refuse, and the feature its error names.
F64 = "type f64"
REFUSED = {"atomics_8": "atomic_add on u8", "atomics_16": "atomic_add on f16", "atomics_64": "atomic_add on i64",
           "atomics_f64": F64, "casts": F64, "double_math": F64, "special_values": F64}
SUPPORTED = [n for n in NAMES if n not in REFUSED]


