"""Conformance-suite settings for the CUDA backend (read by tests/runtimes.py when the CUDA
runtime is available).

TARGETS: both codegens (CUDA C through NVRTC/nvcc, and LLVM NVPTX) for the architecture of the
device the runtime uses (the newest architecture polykern knows that is not newer than the
device, so the PTX is JIT-compiled forward where the device is newer). What the codegens refuse is
their target kinds' ``Capabilities`` (codegen.py): both compile every feature of the suite.
"""
from __future__ import annotations

from .codegen import ARCHS


def _arch_number(arch: str) -> int:
    return int("".join(ch for ch in arch[3:] if ch.isdigit()))


def device_arch(default: str = "sm_90") -> str:
    """The target -arch for the runtime's device (``default`` when no device can be asked)."""
    try:
        from .runtime import get_device

        have = get_device().arch
    except Exception:  # no runtime here: the suite does not run CUDA targets anyway
        return default
    if have in ARCHS:
        return have
    usable = [a for a in ARCHS if not a.endswith("a") and _arch_number(a) <= _arch_number(have)]
    return max(usable, key=_arch_number) if usable else default


_ARCH = device_arch()
TARGETS = {"cuda": [f"cuda -arch={_ARCH}"], "nvptx": [f"nvptx -arch={_ARCH}"]}
