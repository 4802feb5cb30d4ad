"""The cuda module a host without the CUDA runtime builds: same bytes as the real module (one
serializer, ``DeviceModule.save_to_bytes``), inspectable, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule


class CUDAFallbackModule(FallbackModule):
    """``inspect_source()`` shows the CUDA C by default; ``inspect_source("ptx")`` the PTX."""

    source_preference = ("cuda", "ptx")
