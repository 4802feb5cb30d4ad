"""The webgpu module a host without the WebGPU runtime builds: same bytes, inspectable, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule
from polykern.kbin.payload_formats import PayloadFormats


class WebGPUFallbackModule(FallbackModule):
    source_preference = ("wgsl",)
    #: The payloads these modules hold (the codegen writes them; the loaders accept only these).
    payload_formats = PayloadFormats("smap", ("wgsl",), section_per_function=True, attrs=("entry",))
