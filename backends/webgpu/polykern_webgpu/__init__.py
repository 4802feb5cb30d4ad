"""polykern WebGPU backend: kernels -> WGSL compute shaders, run through wgpu-native (wgpu-py).

``register_backend()`` is the ``polykern.backends`` entry point: it declares the
codegen (always available, pure Python) and tries the runtime (needs ``wgpu``).
"""
from __future__ import annotations

__all__ = ["register_backend"]

HINT = "on a host with a WebGPU adapter (a Vulkan, Metal or D3D12 driver; Mesa lavapipe works)"


def register_backend():
    from polykern import backends

    return backends.declare(
        "webgpu", "webgpu", display_name="WebGPU", extra="webgpu", config="webgpu", hint=HINT,
        codegen="polykern_webgpu.codegen", runtime="polykern_webgpu.runtime")
