"""Hexagon runtime plugin — placeholder until polykern's Hexagon runtime lands (a later issue).

Importing this module is how ``polykern.backends`` probes the Hexagon runtime. Running the ``o``
payload needs the Qualcomm Hexagon SDK: its toolchain links the object into a FastRPC skeleton
library that calls ``K__range(args, launch, begin, end)`` on the DSP's hardware threads, and the
application side reaches it through FastRPC (``libcdsprpc``) on a Snapdragon device, or runs it
under ``hexagon-sim`` on a development host. None of that exists in the polykern tree yet.
"""
from __future__ import annotations

import shutil

from polykern.errors import BackendUnavailableError

_SIM = shutil.which("hexagon-sim")
raise BackendUnavailableError(
    "polykern's Hexagon runtime is not implemented yet (it needs the Hexagon SDK: FastRPC to a Snapdragon "
    f"DSP or hexagon-sim; {'hexagon-sim is at ' + _SIM if _SIM else 'no hexagon-sim on PATH'})")
