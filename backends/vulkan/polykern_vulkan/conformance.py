"""Conformance-suite settings for the Vulkan backend (read by tests/runtimes.py).

TARGETS: the target strings the suite runs for the ``vulkan`` target kind.
SKIPS: case names or features this backend refuses, with the reason shown in the skip.
REFUSES: every feature (polykern.testing.kernelgen.FEATURES names) this backend's codegen refuses at
compile time with the default target features, with the reason; the fuzzer and the tests accept a
refusal only for these.
"""
TARGETS = {"vulkan": ["vulkan"]}
SKIPS = {
    "vulkan": {
        "math_f64": "GLSL.std.450 has no 64-bit exp/exp2/log/log2/sin/cos/tanh/pow; the Vulkan backend "
                    "refuses them at compile time (cast to f32 explicitly)",
    },
}

REFUSES = {
    "vulkan": {
        "math_f64": "GLSL.std.450 has no 64-bit exp/exp2/log/log2/sin/cos/tanh/pow",
    },
}
