"""The opencl module a host without the OpenCL runtime builds: same bytes as the real module (one
serializer, ``DeviceModule.save_to_bytes``), inspectable, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule
from polykern.kbin.payload_formats import PayloadFormats


class OpenCLFallbackModule(FallbackModule):
    """``inspect_source()`` shows the OpenCL C."""

    source_preference = ("cl",)
    #: The payloads these modules hold (the codegen writes them; the loaders accept only these).
    payload_formats = PayloadFormats("bytes", ("cl",))
