"""The hexagon module every host builds for now (no Hexagon runtime yet): same bytes as the real
module will have (one serializer, ``DeviceModule.save_to_bytes``), inspectable, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule


class HexagonFallbackModule(FallbackModule):
    """``inspect_source()`` shows the Hexagon assembly; ``inspect_source("llvm")`` the LLVM IR."""

    source_preference = ("asm", "llvm")
