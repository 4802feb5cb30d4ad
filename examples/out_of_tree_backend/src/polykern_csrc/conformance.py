"""Conformance settings (read by polykern's tests/runtimes.py): the target strings the suite runs.

What the backend refuses and whose numeric promises it keeps is its target kind's ``Capabilities``
(codegen.py), which the suite and the differential fuzzer read.
"""
TARGETS = {"csrc": ["csrc"]}
