"""Conformance-suite settings for the WebGPU backend (read by tests/runtimes.py).

TARGETS: the target strings the suite runs for the ``webgpu`` target kind (f16 switched on:
the suite's f16 cases then run where the device offers 'shader-f16', as lavapipe does).
What WGSL lacks (64-bit, 8- and 16-bit types, bf16, bool buffers, matrix fragments) is the target
kind's ``Capabilities`` (codegen.py).
"""
TARGETS = {"webgpu": ["webgpu -shader_f16=true"]}
