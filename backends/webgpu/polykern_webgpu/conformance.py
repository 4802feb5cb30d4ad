"""Conformance-suite settings for the WebGPU backend (read by tests/runtimes.py).

TARGETS: the target strings the suite runs for the ``webgpu`` target kind (f16 switched on:
the suite's f16 cases then run where the device offers 'shader-f16', as lavapipe does).
SKIPS: features WGSL itself lacks; the codegen refuses them with a KernelTypeError.
REFUSES: every feature (polykern.testing.kernelgen.FEATURES names) this backend's codegen refuses at
compile time, with the reason; the fuzzer and the tests accept a refusal only for these.
"""
TARGETS = {"webgpu": ["webgpu -shader_f16=true"]}
SKIPS = {
    "webgpu": {
        "f64": "WGSL has no 64-bit floating-point type",
        "i64": "WGSL has no 64-bit integer types",
        "i8": "WGSL has no 8-bit integer types",
        "i16": "WGSL has no 16-bit integer types",
        "bf16": "WGSL has no bfloat16 type and no 16-bit integers to hold its bits",
        "bool_buffer": "bool is not host-shareable in WGSL storage buffers",
        "matrix": "WebGPU has no matrix engine: matrix fragments are refused at build",
    },
}

REFUSES = {
    "webgpu": {
        "f64": "WGSL has no 64-bit floating-point type",
        "math_f64": "WGSL has no 64-bit floating-point type",
        "i64": "WGSL has no 64-bit integer types",
        "u64": "WGSL has no 64-bit integer types",
        "i8": "WGSL has no 8-bit integer types",
        "u8": "WGSL has no 8-bit integer types",
        "i16": "WGSL has no 16-bit integer types",
        "u16": "WGSL has no 16-bit integer types",
        "bf16": "WGSL has no bfloat16 type and no 16-bit integers to hold its bits",
        "bool_buffer": "bool is not host-shareable in WGSL storage buffers",
    },
}
