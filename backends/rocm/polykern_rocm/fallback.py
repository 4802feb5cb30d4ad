"""The rocm module a host without the HIP runtime builds: same bytes as the real module (one
serializer, ``DeviceModule.save_to_bytes``), inspectable, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule
from polykern.kbin.payload_formats import PayloadFormats


class ROCmFallbackModule(FallbackModule):
    """``inspect_source()`` shows the AMDGPU assembly; ``inspect_source("llvm")`` the LLVM IR."""

    source_preference = ("asm", "llvm")
    #: The payloads these modules hold (the codegen writes them; the loaders accept only these).
    payload_formats = PayloadFormats("bytes", ("hsaco",))
