"""The csrc module a host without a C compiler builds: same bytes as the real module, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule


class CSourceFallbackModule(FallbackModule):
    source_preference = ("c",)
