"""Conformance-suite settings for the Vulkan backend (read by tests/runtimes.py).

TARGETS: the target strings the suite runs for the ``vulkan`` target kind.
device_skips: what the selected device lacks, with the reason shown in the skip.

What the codegen refuses (f64 math) is the target kind's ``Capabilities`` (codegen.py).
"""
import sys

TARGETS = {"vulkan": ["vulkan"]}


def device_skips(target_kind: str):
    """Matrix fragments where the device lacks VK_KHR_cooperative_matrix (lavapipe); read only when the
    runtime is already loaded (this file never imports it)."""
    dev = sys.modules.get("polykern_vulkan.runtime.device")
    try:
        missing = dev.get().cooperative_matrix.missing if dev is not None else None
    except Exception:  # noqa: BLE001 - no device: the suite does not run vulkan
        return {}
    return {"matrix": f"the device cannot run matrix fragments: {missing}"} if missing else {}
