"""Conformance-suite settings for the OpenCL backend (read by tests/runtimes.py).

TARGETS: the target strings the suite runs for the ``opencl`` target kind.
SKIPS: features the selected device lacks, with the reason shown in the skip.

The codegen itself refuses nothing the suite uses (f16 is storage-only through vload_half /
vstore_half, so it needs no cl_khr_fp16; bools are uchar). What depends on the device is decided
when the program is built: f64 needs ``cl_khr_fp64`` and 64-bit atomics need
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


def _device_skips() -> Dict[str, str]:
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


#: features the 'opencl' target refuses at build (no -subgroups: PoCL's device lacks the extensions)
_TARGET_SKIPS = {"subgroups": "pk.subgroup_* needs cl_khr_subgroups, which the 'opencl' target does not declare "
                              "(PoCL's CPU device lacks it)"}

SKIPS = {"opencl": dict(_device_skips(), **_TARGET_SKIPS,
                         matrix="OpenCL has no standard matrix extension: matrix fragments are refused at build")}

#: features the codegen refuses at compile time (polykern.testing.kernelgen.FEATURES names)
REFUSES = {"opencl": dict(_TARGET_SKIPS)}
