"""polykern Hexagon backend: kernels -> LLVM IR -> a Hexagon ELF object of range entry points.

``register_backend()`` is the ``polykern.backends`` entry point: it declares the codegen (target
kind ``hexagon``; needs only llvmlite) and tries the runtime (``runtime/``), which runs kernels
under QEMU user-mode emulation where ``qemu-hexagon-static``, clang and ld.lld are installed.
"""
from __future__ import annotations

__all__ = ["register_backend"]

HINT = "where qemu-hexagon-static, clang and ld.lld are installed (apt-get install qemu-user-static clang lld)"


def register_backend():
    from polykern import backends

    return backends.declare(
        "hexagon", "hexagon", display_name="Hexagon", config="hexagon", hint=HINT,
        codegen="polykern_hexagon.codegen", runtime="polykern_hexagon.runtime")
