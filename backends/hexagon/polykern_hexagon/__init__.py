"""polykern Hexagon backend: kernels -> LLVM IR -> a Hexagon ELF object of range entry points.

``register_backend()`` is the ``polykern.backends`` entry point: it declares the codegen (target
kind ``hexagon``; needs only llvmlite) and tries the runtime, which is not written yet (it needs
the Hexagon SDK: FastRPC to a device DSP, or the Hexagon simulator; see ``runtime.py``).
"""
from __future__ import annotations

__all__ = ["register_backend"]

HINT = "with the Hexagon SDK (FastRPC to a Snapdragon DSP, or hexagon-sim)"


def register_backend():
    from polykern import backends

    return backends.declare(
        "hexagon", "hexagon", display_name="Hexagon", extra="hexagon", config="hexagon", hint=HINT,
        codegen="polykern_hexagon.codegen", runtime="polykern_hexagon.runtime")
