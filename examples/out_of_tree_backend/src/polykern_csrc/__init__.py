"""polykern-csrc: an out-of-tree polykern backend (the worked example of docs/backends.md).

Module kind ``csrc``: each kernel becomes C99 source that the host's C compiler (``$CC``, ``cc`` or
``gcc``) turns into a shared object when the module is first launched; work-items run one after
another through ctypes. Compile anywhere (the codegen is pure Python); run where a C compiler exists.

``register_backend()`` is the ``polykern.backends`` entry point (pyproject.toml).
"""
from __future__ import annotations

__all__ = ["register_backend"]


def register_backend():
    from polykern import backends

    return backends.declare(
        "csrc", "csrc", display_name="C source (host compiler)", install="pip install polykern-csrc",
        hint="on a host with a C compiler (cc or gcc)",
        codegen="polykern_csrc.codegen", runtime="polykern_csrc.runtime")
