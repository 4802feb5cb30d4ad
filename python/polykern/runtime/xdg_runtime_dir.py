"""A private ``XDG_RUNTIME_DIR`` for the graphics driver stack where no login session made one.

Mesa's EGL/Wayland probing (wgpu enumerates an OpenGL adapter beside Vulkan) prints "error:
XDG_RUNTIME_DIR is invalid or not set in the environment." once per probe on hosts without a session
runtime directory (containers, CI, ssh). The Vulkan and WebGPU runtimes call :func:`ensure_runtime_dir`
once, where they load their driver stack (not at ``import polykern``): it gives the process a private
directory, ``$TMPDIR/polykern-runtime-<uid>`` with mode 0700 and owned by the user, as a login session
would (the same one ``./dev`` sets). A set and valid one (a directory owned by the user) is left alone.
"""
from __future__ import annotations

import os
import stat
import sys
import tempfile
import threading
from typing import Optional

__all__ = ["RUNTIME_DIR_ENV", "ensure_runtime_dir"]

RUNTIME_DIR_ENV = "XDG_RUNTIME_DIR"
_lock = threading.Lock()


def _owned_dir(path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def ensure_runtime_dir() -> Optional[str]:
    """Set ``XDG_RUNTIME_DIR`` to a private directory if it is unset or invalid; return the directory
    set, or None when the environment is left as it was (valid already, not a POSIX host other than
    macOS, or the private directory cannot be made ours)."""
    if not hasattr(os, "getuid") or sys.platform == "darwin":
        return None
    with _lock:
        current = os.environ.get(RUNTIME_DIR_ENV, "")
        if current and _owned_dir(current):
            return None
        path = os.path.join(tempfile.gettempdir(), f"polykern-runtime-{os.getuid()}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
        if not _owned_dir(path):  # another user's (or a file) at that name: do not use it
            return None
        try:
            if stat.S_IMODE(os.stat(path).st_mode) != 0o700:
                os.chmod(path, 0o700)
        except OSError:
            return None
        os.environ[RUNTIME_DIR_ENV] = path
        return path
