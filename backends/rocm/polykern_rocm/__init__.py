"""polykern ROCm backend: kernels -> LLVM IR -> AMDGPU code object (hsaco) for the HIP runtime.

``register_backend()`` is the ``polykern.backends`` entry point: it declares the codegen (target
kind ``rocm``; needs llvmlite and ld.lld) and tries the runtime, which is not written yet (see
``runtime.py``), so rocm modules are compile-only fallbacks for now.
"""
from __future__ import annotations

__all__ = ["register_backend"]

HINT = "on a host with an AMD GPU and the HIP runtime"


def register_backend():
    from polykern import backends

    return backends.declare(
        "rocm", "rocm", display_name="ROCm", hint=HINT,
        codegen="polykern_rocm.codegen", runtime="polykern_rocm.runtime")
