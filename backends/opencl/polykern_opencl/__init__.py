"""polykern OpenCL backend: kernels -> OpenCL C 1.2 source (shared C-like emitter).

``register_backend()`` is the ``polykern.backends`` entry point: it declares the codegen (target kind
``opencl``; always available) and tries the runtime, which needs pyopencl and an ICD.
"""
from __future__ import annotations

__all__ = ["register_backend"]

HINT = "on a host with an OpenCL driver (an ICD; PoCL works on any CPU)"


def register_backend():
    from polykern import backends

    return backends.declare(
        "opencl", "opencl", display_name="OpenCL", extra="opencl", config="opencl", hint=HINT,
        codegen="polykern_opencl.codegen", runtime="polykern_opencl.runtime")
