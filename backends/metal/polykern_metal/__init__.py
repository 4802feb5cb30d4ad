"""polykern Metal backend: kernels -> Metal Shading Language, one shader source per kernel.

``register_backend()`` is the ``polykern.backends`` entry point: it declares the codegen (target kind
``metal``; always available) and tries the runtime, which needs macOS (nothing on Linux runs MSL).
"""
from __future__ import annotations

__all__ = ["register_backend"]

HINT = "on macOS with a Metal device"


def register_backend():
    from polykern import backends

    return backends.declare(
        "metal", "metal", display_name="Metal", hint=HINT,
        codegen="polykern_metal.codegen", runtime="polykern_metal.runtime")
