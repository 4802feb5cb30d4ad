"""The hexagon module a host without the emulated runtime builds: same bytes as the real module
(one serializer, ``DeviceModule.save_to_bytes``), inspectable, not runnable. Its ``asm`` source is
rendered when first read (``polykern.codegen.cpu.lazy_asm``, shared with the emulated runtime's module).
"""
from __future__ import annotations

from polykern.codegen.cpu.lazy_asm import LazyAsmSources
from polykern.module import FallbackModule
from polykern.kbin.payload_formats import PayloadFormats

__all__ = ["HexagonFallbackModule"]


class HexagonFallbackModule(LazyAsmSources, FallbackModule):
    """``inspect_source()`` shows the Hexagon assembly; ``inspect_source("llvm")`` the LLVM IR."""

    source_preference = ("asm", "llvm")
    #: The payloads these modules hold (the codegen writes them; the loaders accept only these).
    payload_formats = PayloadFormats("bytes", ("o",))
