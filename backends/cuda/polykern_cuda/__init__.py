"""polykern CUDA backend: kernels -> CUDA C (shared C-like emitter) -> PTX/cubin (NVRTC or nvcc).

``register_backend()`` is the ``polykern.backends`` entry point: it declares the codegen (target kinds
``cuda`` and ``nvptx``; always available) and tries the runtime, which needs pycuda and a driver.
"""
from __future__ import annotations

__all__ = ["register_backend", "synchronize"]

HINT = "on a host with an NVIDIA driver"


def register_backend():
    from polykern import backends

    return backends.declare(
        "cuda", "cuda", display_name="CUDA", extra="cuda", config="cuda", hint=HINT,
        codegen="polykern_cuda.codegen", runtime="polykern_cuda.runtime")


def synchronize() -> None:
    """Wait for every asynchronous polykern CUDA launch; a kernel fault is raised here as DeviceError
    (``polykern_cuda.runtime.synchronize``). ImportError where the CUDA runtime is unavailable."""
    from .runtime import synchronize as _synchronize

    _synchronize()
