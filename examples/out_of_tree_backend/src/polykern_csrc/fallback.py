"""The csrc module a host without a C compiler builds: same bytes as the real module, not runnable."""
from __future__ import annotations

from polykern.module import FallbackModule
from polykern.kbin.payload_formats import PayloadFormats


class CSourceFallbackModule(FallbackModule):
    source_preference = ("c",)
    #: The payloads a csrc module holds: one C source whose launchers the kernels' 'entry' attributes name
    #: (registered as module.payload.csrc, so a host without this backend's runtime gives the same verdict).
    payload_formats = PayloadFormats("bytes", ("c",), attrs=("entry",))
