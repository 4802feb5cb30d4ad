"""The llvm module a host without the CPU runtime builds (or one built with
POLYKERN_COMPILE_FORCE_FALLBACK): same bytes as the real module, inspectable, not runnable. Its ``asm``
source is rendered when first read (``polykern.codegen.cpu.lazy_asm``, shared with the real module).
"""
from __future__ import annotations

from polykern.codegen.cpu.lazy_asm import LazyAsmSources
from polykern.module import FallbackModule
from polykern.kbin.payload_formats import PayloadFormats

SOURCE_PREFERENCE = ("asm", "ll")

__all__ = ["SOURCE_PREFERENCE", "LLVMFallbackModule"]


class LLVMFallbackModule(LazyAsmSources, FallbackModule):
    """``inspect_source()`` shows the assembly; ``inspect_source("ll")`` the optimized LLVM IR."""

    source_preference = SOURCE_PREFERENCE
    #: The payloads these modules hold (the codegen writes them; the loaders accept only these).
    payload_formats = PayloadFormats("bytes", ("o",))
