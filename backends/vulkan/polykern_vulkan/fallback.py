"""The vulkan module a host without the Vulkan runtime builds: same bytes as the real module
(one serializer, ``DeviceModule.save_to_bytes``), inspectable, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule


class VulkanFallbackModule(FallbackModule):
    """``inspect_source()`` shows the SPIR-V disassembly ("spirv-asm") by default."""

    source_preference = ("spirv-asm",)
