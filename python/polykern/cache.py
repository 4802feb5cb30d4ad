"""polykern's on-disk cache folder, and atomic writes into it.

``$POLYKERN_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/polykern``, else ``~/.cache/polykern``; each
user of the cache takes a subfolder (``autotune/``, the Hexagon runtime's objects, ...).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

CACHE_DIR_ENV = "POLYKERN_CACHE_DIR"


def cache_root() -> Path:
    base = os.environ.get(CACHE_DIR_ENV)
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "polykern" if xdg else Path.home() / ".cache" / "polykern"


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (creating its folder) through a temporary file in the same folder and
    a rename, so a reader sees the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
