"""The llvm module a host without the CPU runtime builds (or one built with
POLYKERN_COMPILE_FORCE_FALLBACK): same bytes as the real module, inspectable, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule

SOURCE_PREFERENCE = ("asm", "ll")


class LLVMFallbackModule(FallbackModule):
    """``inspect_source()`` shows the assembly; ``inspect_source("ll")`` the optimized LLVM IR."""

    source_preference = SOURCE_PREFERENCE
