"""Conformance and fuzzing settings for the Metal backend (read by tests/runtimes.py and
polykern.testing.fuzzcase; this file never imports the Metal runtime).

REFUSES: every feature (polykern.testing.kernelgen.FEATURES names) the MSL codegen refuses at compile
time, with the reason; the fuzzer and the tests accept a refusal only for these.
"""
TARGETS = {"metal": ["metal"]}
SKIPS = {"metal": {}}
REFUSES = {
    "metal": {
        "f64": "the Metal Shading Language has no double-precision floating-point type",
        "math_f64": "the Metal Shading Language has no double-precision floating-point type",
    },
}
