"""The webgpu module a host without the WebGPU runtime builds: same bytes, inspectable, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule


class WebGPUFallbackModule(FallbackModule):
    source_preference = ("wgsl",)
