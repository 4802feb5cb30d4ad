"""Conformance and fuzzing settings for the Metal backend (read by tests/runtimes.py and
polykern.testing.fuzzcase; this file never imports the Metal runtime).

What the MSL codegen refuses (f64) is the target kind's ``Capabilities`` (codegen.py).
"""
TARGETS = {"metal": ["metal"]}
