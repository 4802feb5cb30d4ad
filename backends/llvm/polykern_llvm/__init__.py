"""polykern CPU backend: kernels -> LLVM IR -> a relocatable ELF object for a host or cross triple.

``register_backend()`` is the ``polykern.backends`` entry point: it declares the codegen (target
kind ``llvm``; needs only llvmlite) and the runtime (polykern's own ELF object loader, loader.py,
and a thread pool of ``os.cpu_count()`` workers), which is available wherever llvmlite imports.
"""
from __future__ import annotations

__all__ = ["register_backend"]


def register_backend():
    from polykern import backends

    return backends.declare(
        "llvm", "llvm", display_name="LLVM CPU", config="llvm",
        codegen="polykern_llvm.codegen", runtime="polykern_llvm.runtime")
