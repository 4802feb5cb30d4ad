"""The cuda module a host without the CUDA runtime builds: same bytes as the real module (one
serializer, ``DeviceModule.save_to_bytes``), inspectable, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule
from polykern.kbin.payload_formats import PayloadFormats


class CUDAFallbackModule(FallbackModule):
    """``inspect_source()`` shows the CUDA C by default; ``inspect_source("ptx")`` the PTX."""

    source_preference = ("cuda", "ptx")
    #: The payloads these modules hold (the codegen writes them; the loaders accept only these).
    payload_formats = PayloadFormats("bytes", ("ptx", "cubin", "cuda"))
