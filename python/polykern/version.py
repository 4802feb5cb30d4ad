"""The compiler's version, and the string an artifact records as the compiler that wrote it.

A leaf module: ``artifact`` and the package's ``__init__`` both read it, so neither imports the
other for it.
"""
from __future__ import annotations

__all__ = ["__version__", "compiler_version"]

__version__ = "0.1.0"


def compiler_version() -> str:
    """This package's version (the installed distribution's metadata is not needed)."""
    return __version__
