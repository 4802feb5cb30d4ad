"""Which GPUs a cubin can run on, read before the driver is asked to load it.

A cubin holds machine code (SASS) for one real architecture. The rules (CUDA C Programming Guide,
"Binary Compatibility"): code for ``sm_XY`` runs on devices of compute capability ``X.Z`` with
``Z >= Y`` (same major, equal or newer minor); an architecture-specific variant (``sm_90a``,
``sm_100a``) runs only on exactly ``X.Y``. The runtime checks before ``cuModuleLoadData`` and raises
``DeviceError(CUDA_ERROR_NO_BINARY_FOR_GPU)`` naming both architectures, so the error is the same
whatever the driver (and its lazy module loading) would have reported, and when.

The architecture is read from the ELF header (``e_machine`` EM_CUDA = 190, ``e_flags``): the SM
number is in the low byte of ``e_flags`` for ELF ABI version 7 (``EF_CUDA_SM``) and in bits 8-15
for ABI version 8 (``EF_CUDA_SM_MASK``, CUDA 12.8+ and every Blackwell cubin); an ``a`` variant is
flagged by bit 11 (ABI 7). ABI 8 does not reliably mark ``a`` variants, so the architecture the
kernel was built for (FunctionInfo ``arch``, e.g. ``sm_90a``) supplies the suffix. A fatbinary
(several images, possibly PTX) is left to the driver, which picks from it. Pure: no driver.
"""
from __future__ import annotations

import re
import struct
from typing import Iterable, Optional, Tuple

__all__ = ["elf_arch", "parse_arch", "incompatibility", "cubin_arch"]

EM_CUDA = 190
_ABI_V1, _ABI_V2 = 7, 8
_ACCEL_V1 = 0x800
_ARCH = re.compile(r"^sm_(\d+)(\d)([af]?)$")


def parse_arch(arch: str) -> Optional[Tuple[int, int, str]]:
    """``"sm_90a"`` -> ``(9, 0, "a")``; None if not an sm_ architecture."""
    m = _ARCH.match(arch or "")
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), m.group(3)


def _plausible(sm: int) -> bool:
    return 20 <= sm <= 255


def elf_arch(blob: bytes) -> Optional[Tuple[int, int, str]]:
    """(major, minor, variant) of the SASS in an ELF cubin; None if ``blob`` is not a 64-bit
    little-endian CUDA ELF or its flags hold no recognizable architecture."""
    if len(blob) < 64 or blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        return None
    (machine,) = struct.unpack_from("<H", blob, 18)
    if machine != EM_CUDA:
        return None
    (flags,) = struct.unpack_from("<I", blob, 48)
    abi = blob[8]
    low, high = flags & 0xFF, (flags >> 8) & 0xFF
    if abi == _ABI_V1:
        sm, variant = low, ("a" if flags & _ACCEL_V1 else "")
    elif abi == _ABI_V2:
        sm, variant = high, ""
    elif _plausible(low) and low <= 90:  # unknown ABI: the legacy layout if its low byte is an SM
        sm, variant = low, ""
    else:
        sm, variant = high, ""
    if not _plausible(sm):
        return None
    return sm // 10, sm % 10, variant


def cubin_arch(blob: bytes, built_for: Iterable[str] = ()) -> Optional[Tuple[int, int, str]]:
    """The architecture a cubin needs: from its ELF header, the ``a``/``f`` suffix (and, when
    the header says nothing usable, the whole architecture) from the ``arch`` the kernels were built
    for. None when neither tells (the driver decides)."""
    declared = [p for p in (parse_arch(a) for a in built_for) if p is not None]
    found = elf_arch(blob)
    if found is None:
        return declared[0] if len(declared) == 1 else None
    major, minor, variant = found
    for d in declared:
        if d[:2] == (major, minor) and d[2]:
            variant = variant or d[2]
    return major, minor, variant


def fmt_arch(arch: Tuple[int, int, str]) -> str:
    return f"sm_{arch[0]}{arch[1]}{arch[2]}"


def incompatibility(arch: Tuple[int, int, str], device_cc: Tuple[int, int]) -> Optional[str]:
    """Why code for ``arch`` cannot run on a device of compute capability ``device_cc``; None if it can."""
    major, minor, variant = arch
    dmaj, dmin = device_cc
    name, dev = fmt_arch(arch), f"sm_{dmaj}{dmin}"
    if variant == "a":
        if (major, minor) != (dmaj, dmin):
            return f"the cubin holds {name} code, which runs only on {major}.{minor} devices, not on {dev}"
        return None
    if major != dmaj:
        return (f"the cubin holds {name} code, which runs only on compute capability {major}.x devices "
                f"with x >= {minor}, not on {dev}")
    if minor > dmin:
        return f"the cubin holds {name} code, which needs compute capability {major}.{minor} or a newer {major}.x; " \
               f"this device is {dev}"
    return None
