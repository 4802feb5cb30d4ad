"""Hexagon runtime plugin: kernels run under QEMU user-mode emulation (``qemu-hexagon-static``).

Importing this package is how ``polykern.backends`` probes the runtime: it raises
:class:`BackendUnavailableError` naming the Debian packages to install when the emulator, clang or
ld.lld is missing. A real DSP (FastRPC to a Snapdragon cDSP) is out of scope: see the backend's
README. module.py runs the kernels, toolchain.py finds the tools and builds the harness,
``polykern.runtime.launch_stream`` is the launch stream, harness.c and builtins.c are the freestanding Hexagon side.
"""
from __future__ import annotations

import subprocess
from typing import Dict, List

from polykern import registry
from polykern.kbin import wire
from polykern.module import FunctionInfo
from polykern.kbin.payload_formats import check_payload

from ..fallback import HexagonFallbackModule
from .module import HexagonModule
from .toolchain import QEMU_CPU, find_tools

__all__ = ["HexagonModule", "create", "load_from_bytes", "register", "devices"]

_TOOLS = find_tools()  # raises BackendUnavailableError (the reason shown by `polykern backends`)


def create(payload: bytes, fmt: str, fmap: Dict[str, FunctionInfo], sources: Dict[str, str]) -> HexagonModule:
    return HexagonModule(payload, fmt, fmap, sources)


def load_from_bytes(data: bytes, sources: Dict[str, str]) -> HexagonModule:
    fmt, fmap, payload = wire.decode_device_payload("hexagon", data)
    check_payload("hexagon", HexagonFallbackModule.payload_formats, fmt, fmap, payload)  # before anything trusts it
    return HexagonModule(payload, fmt, fmap, sources)


def devices() -> List[str]:
    r = subprocess.run([_TOOLS.qemu, "--version"], capture_output=True, text=True)
    version = (r.stdout.splitlines() or ["unknown version"])[0]
    return [f"hexagon {QEMU_CPU} (emulated): {_TOOLS.qemu} ({version}); one hardware thread per launch"]


def register() -> None:
    registry.register("module.create.hexagon", create)
    registry.register("module.load_from_bytes.hexagon", load_from_bytes)
