"""Conformance-suite settings for the Vulkan backend (read by tests/runtimes.py).

TARGETS: the target strings the suite runs for the ``vulkan`` target kind.
SKIPS: case names or features this backend refuses, with the reason shown in the skip.
REFUSES: every feature (polykern.testing.kernelgen.FEATURES names) this backend's codegen refuses at
compile time with the default target features, with the reason; the fuzzer and the tests accept a
refusal only for these.
"""
import sys

TARGETS = {"vulkan": ["vulkan"]}


def _device_skips():
    """Matrix fragments where the device lacks VK_KHR_cooperative_matrix (lavapipe); read only when the
    runtime is already loaded (this file never imports it)."""
    dev = sys.modules.get("polykern_vulkan.runtime.device")
    try:
        missing = dev.get().cooperative_matrix.missing if dev is not None else None
    except Exception:  # noqa: BLE001 - no device: the suite does not run vulkan
        return {}
    return {"matrix": f"the device cannot run matrix fragments: {missing}"} if missing else {}


SKIPS = {
    "vulkan": {
        "math_f64": "GLSL.std.450 has no 64-bit exp/exp2/log/log2/sin/cos/tanh/pow; the Vulkan backend "
                    "refuses them at compile time (cast to f32 explicitly)",
        **_device_skips(),
    },
}

REFUSES = {
    "vulkan": {
        "math_f64": "GLSL.std.450 has no 64-bit exp/exp2/log/log2/sin/cos/tanh/pow",
    },
}
