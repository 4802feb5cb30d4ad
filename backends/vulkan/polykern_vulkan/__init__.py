"""polykern Vulkan backend: kernels -> SPIR-V GLCompute shaders from polykern's own emitter.

``register_backend()`` is the ``polykern.backends`` entry point: it declares the codegen (pure
Python, always available) and tries the runtime (needs the ``vulkan`` binding and a loader).
"""
from __future__ import annotations

__all__ = ["register_backend", "DeviceArray", "to_device", "empty", "zeros", "stats"]
_RUNTIME_NAMES = ("DeviceArray", "to_device", "empty", "zeros", "stats", "get_device", "VulkanModule")

HINT = "on a host with a Vulkan 1.1+ driver and loader (libvulkan1; Mesa lavapipe works)"


def register_backend():
    from polykern import backends

    return backends.declare(
        "vulkan", "vulkan", display_name="Vulkan", extra="vulkan", config="vulkan", hint=HINT,
        codegen="polykern_vulkan.codegen", runtime="polykern_vulkan.runtime")


def __getattr__(name):
    """``polykern_vulkan.DeviceArray`` etc. come from the runtime, imported on first use (ImportError
    with the reason where the Vulkan runtime is unavailable); the codegen never imports it."""
    if name in _RUNTIME_NAMES:
        from . import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'polykern_vulkan' has no attribute {name!r}")
