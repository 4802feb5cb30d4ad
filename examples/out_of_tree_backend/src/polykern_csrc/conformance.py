"""Conformance and fuzzing settings (read by polykern's tests/runtimes.py and polykern.testing.fuzzcase).

REFUSES: the generator features (polykern.testing.kernelgen.FEATURES) this backend refuses at compile
time, with the reason; the differential fuzzer accepts a refusal only for these.
NUMERICS: the in-tree backend whose numeric promises (polykern.numerics) each target kind keeps: the
host's C compiler with -std=c99 -ffp-contract=off -fno-fast-math and its libm, like the llvm backend.
"""
TARGETS = {"csrc": ["csrc"]}
SKIPS = {"csrc": {}}
REFUSES = {"csrc": {"f16": "C99 has no half-precision type",
                   "bf16": "this C99 dialect has no f32 bit casts (bf16 converts on the bits)",
                   "barrier": "work-items run one after another: no barrier, no shared memory",
                   "subgroups": "work-items run one after another: no subgroup operations"}}
NUMERICS = {"csrc": "llvm"}
