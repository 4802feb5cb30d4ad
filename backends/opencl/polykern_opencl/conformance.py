"""Conformance-suite settings for the OpenCL backend (read by tests/runtimes.py).

TARGETS: the target strings the suite runs for the ``opencl`` target kind.
device_skips: features the selected device lacks, with the reason shown in the skip.

What the codegen refuses (pk.subgroup_* without -subgroups; matrix fragments) is the target kind's
``Capabilities`` (codegen.py); f16 is storage-only through vload_half / vstore_half, so it needs no
cl_khr_fp16; bools are uchar. What depends on the device is decided when the program is built: f64 needs ``cl_khr_fp64`` and 64-bit atomics need
``cl_khr_int64_base_atomics`` / ``_extended_atomics``. The skips for those are derived from the
device the runtime selected (PoCL's CPU device has them all, so nothing is skipped there).

This file is part of the codegen target: it never imports pyopencl or the runtime; it only reads
the runtime module if polykern's backend loading already imported it.
"""
from __future__ import annotations

import sys
from typing import Dict

TARGETS = {"opencl": ["opencl"]}

#: suite feature -> the OpenCL extension it needs
_FEATURE_EXTENSIONS = {"f64": "cl_khr_fp64"}


def device_skips(target_kind: str) -> Dict[str, str]:
    """``{feature: reason}`` the selected OpenCL device lacks (nothing when the runtime is not loaded)."""
    rt = sys.modules.get("polykern_opencl.runtime")
    if rt is None:  # runtime not loaded: the suite does not run opencl at all
        return {}
    try:
        entry = rt._device.probe_result().chosen
        extensions = set(str(entry.device.extensions).split())
    except Exception:  # no device: the suite does not run opencl either
        return {}
    return {feature: f"{entry.name} lacks {ext}, which the OpenCL C of {feature} kernels enables"
            for feature, ext in sorted(_FEATURE_EXTENSIONS.items()) if ext not in extensions}
