"""Conformance and fuzzing settings (read by polykern's tests/runtimes.py and polykern.testing.fuzzcase).

REFUSES: the generator features (polykern.testing.kernelgen.FEATURES) this backend refuses at compile
time, with the reason; the differential fuzzer accepts a refusal only for these.
"""
TARGETS = {"csrc": ["csrc"]}
SKIPS = {"csrc": {}}
REFUSES = {"csrc": {"f16": "C99 has no half-precision type"}}
