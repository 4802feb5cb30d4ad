"""OpenCL platforms and devices, and the device polykern runs on.

:func:`probe` runs once, when the runtime plugin is imported: it asks the ICD loader for every
platform and device. No platform (no ICD installed), no device, no device with a compiler, or a
``POLYKERN_OPENCL_DEVICE`` that matches nothing raises :class:`BackendUnavailableError`; the
plugin import then fails with that reason (``polykern backends`` shows it and builds produce the
compile-only fallback). Contexts and queues are created later, on first use (device.py).

Device choice, ``POLYKERN_OPENCL_DEVICE`` (read when the plugin is imported):
- unset or empty: the first GPU, else the first device (in platform, then device order);
- ``N``: the N-th device of the flattened enumeration ``polykern backends`` prints (``opencl:N``);
- ``P:D``: device D of platform P;
- ``gpu`` / ``cpu`` / ``accelerator``: the first device of that type;
- anything else: the first device whose "platform name / device name" contains the text
  (case-insensitive), e.g. ``pocl``, ``nvidia``, ``Intel(R) Graphics``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import pyopencl as cl

from polykern.errors import BackendUnavailableError

from .clerrors import CL_ERRORS, status_name

__all__ = ["DeviceEntry", "Probe", "probe", "enumerate_devices", "choose", "DEVICE_ENV", "type_name"]

DEVICE_ENV = "POLYKERN_OPENCL_DEVICE"
INSTALL_HINT = ("install an OpenCL driver (ICD); PoCL runs on any CPU: `pip install pocl-binary-distribution` "
                "or `apt install pocl-opencl-icd`")
_TYPES = (("GPU", cl.device_type.GPU), ("CPU", cl.device_type.CPU), ("accelerator", cl.device_type.ACCELERATOR),
          ("custom", getattr(cl.device_type, "CUSTOM", 0)))


def type_name(dtype: int) -> str:
    names = [n for n, bit in _TYPES if bit and dtype & bit]
    return "/".join(names) or f"type {dtype:#x}"


@dataclass
class DeviceEntry:
    """One device of the enumeration (``index`` is its flattened position)."""

    index: int
    platform_index: int
    device_index: int
    device: "cl.Device" = field(repr=False)
    name: str = ""
    platform_name: str = ""
    platform_version: str = ""
    type: int = 0
    version: str = ""
    driver_version: str = ""
    problem: str = ""  # why polykern cannot use it ("" when usable)

    @property
    def type_name(self) -> str:
        return type_name(self.type)

    def describe(self) -> str:
        """``opencl:N: name (type, OpenCL version, driver version; platform P: name, version)``."""
        version = " ".join(self.version.split()[:2])  # "OpenCL 3.0" (vendors append free text)
        platform_version = self.platform_version.split("  ")[0].strip()  # PoCL appends its build flags
        return (f"opencl:{self.index}: {self.name} ({self.type_name}, {version}, driver {self.driver_version}; "
                f"platform {self.platform_index}: {self.platform_name}, {platform_version})")


@dataclass
class Probe:
    entries: List[DeviceEntry]
    chosen: DeviceEntry
    notes: List[str] = field(default_factory=list)  # platforms whose devices could not be listed


def _info(obj, attr: str, default: str = "?") -> str:
    try:
        return str(getattr(obj, attr)).strip()
    except Exception:
        return default


def _problem(dev) -> str:
    try:
        if not dev.available:
            return "the device reports itself unavailable"
        if not dev.compiler_available:
            return "the device has no OpenCL C compiler (polykern ships OpenCL C source)"
    except CL_ERRORS as e:
        return f"cannot query the device ({status_name(getattr(e, 'code', None))})"
    return ""


def enumerate_devices() -> Tuple[List[DeviceEntry], List[str]]:
    """Every device of every platform; raises BackendUnavailableError when there is no platform."""
    try:
        platforms = cl.get_platforms()
    except CL_ERRORS as e:
        raise BackendUnavailableError(
            f"no OpenCL platform: the ICD loader found no driver ({status_name(getattr(e, 'code', None))}: "
            f"{e}); {INSTALL_HINT}") from None
    if not platforms:
        raise BackendUnavailableError(f"no OpenCL platform: the ICD loader found no driver; {INSTALL_HINT}")
    entries: List[DeviceEntry] = []
    notes: List[str] = []
    for p_index, p in enumerate(platforms):
        try:
            devs = p.get_devices()
        except CL_ERRORS as e:  # CL_DEVICE_NOT_FOUND on a platform without devices
            notes.append(f"platform {p_index} ({_info(p, 'name')}): {status_name(getattr(e, 'code', None))}")
            continue
        for d_index, d in enumerate(devs):
            try:
                dtype = int(d.type)
            except CL_ERRORS:
                dtype = 0
            entries.append(DeviceEntry(len(entries), p_index, d_index, d, _info(d, "name"), _info(p, "name"),
                                       _info(p, "version"), dtype, _info(d, "version"), _info(d, "driver_version"),
                                       _problem(d)))
    return entries, notes


def choose(entries: Sequence[DeviceEntry], spec: Optional[str]) -> DeviceEntry:
    """The device ``spec`` (see the module docstring) selects among usable ``entries``."""
    usable = [e for e in entries if not e.problem]
    listing = "; ".join(e.describe() + (f" [unusable: {e.problem}]" if e.problem else "") for e in entries)
    if not usable:
        raise BackendUnavailableError(f"no usable OpenCL device ({listing or 'the platforms list no devices'}); "
                                      f"{INSTALL_HINT}")
    spec = (spec or "").strip()
    if not spec:
        gpus = [e for e in usable if e.type & cl.device_type.GPU]
        return (gpus or usable)[0]
    found: Optional[DeviceEntry] = None
    if spec.isdigit():
        i = int(spec)
        found = entries[i] if i < len(entries) else None
    elif spec.count(":") == 1 and all(part.strip().isdigit() for part in spec.split(":")):
        p, d = (int(part) for part in spec.split(":"))
        found = next((e for e in entries if (e.platform_index, e.device_index) == (p, d)), None)
    elif spec.lower() in ("gpu", "cpu", "accelerator"):
        bit = {"gpu": cl.device_type.GPU, "cpu": cl.device_type.CPU, "accelerator": cl.device_type.ACCELERATOR}
        found = next((e for e in usable if e.type & bit[spec.lower()]), None)
    else:
        low = spec.lower()
        found = next((e for e in usable if low in f"{e.platform_name} / {e.name}".lower()), None)
    if found is None:
        raise BackendUnavailableError(f"{DEVICE_ENV}={spec!r} matches no OpenCL device; devices here: {listing}")
    if found.problem:
        raise BackendUnavailableError(f"{DEVICE_ENV}={spec!r} selects {found.describe()}, which polykern cannot "
                                      f"use: {found.problem}")
    return found


def probe(spec: Optional[str] = None) -> Probe:
    """Enumerate and choose (``spec`` defaults to the environment variable)."""
    entries, notes = enumerate_devices()
    chosen = choose(entries, os.environ.get(DEVICE_ENV, "") if spec is None else spec)
    return Probe(entries, chosen, notes)
