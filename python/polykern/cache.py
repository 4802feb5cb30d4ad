"""polykern's on-disk cache folder.

``$POLYKERN_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/polykern``, else ``~/.cache/polykern``; each
user of the cache takes a subfolder (``autotune/``, the Hexagon runtime's objects, ...). Files are
read and written through :mod:`polykern.user_files`.
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "POLYKERN_CACHE_DIR"


def cache_root() -> Path:
    base = os.environ.get(CACHE_DIR_ENV)
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "polykern" if xdg else Path.home() / ".cache" / "polykern"
