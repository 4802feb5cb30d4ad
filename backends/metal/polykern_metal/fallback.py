"""The metal module a host without the Metal runtime (any non-macOS host) builds: same bytes as the
real module (one serializer, ``DeviceModule.save_to_bytes``), inspectable, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule
from polykern.kbin.payload_formats import PayloadFormats


class MetalFallbackModule(FallbackModule):
    """``inspect_source()`` shows every kernel's MSL."""

    source_preference = ("metal",)
    #: The payloads these modules hold (the codegen writes them; the loaders accept only these).
    payload_formats = PayloadFormats("smap", ("metal", "metallib"), section_per_function=True)
