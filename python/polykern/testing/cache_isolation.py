"""Test runs never read or fill the user's polykern cache (docs/language.md "Compile cache").

:func:`isolate` points ``POLYKERN_CACHE_DIR`` at a fresh temporary folder (removed at exit) and turns the
compile cache off (``POLYKERN_CACHE=0``), so a test's outcome never depends on what an earlier run or the
user's own builds left behind, and a test that changes the compiler under it (a monkeypatched code
generator or toolchain) sees its change. The compile cache's own tests turn it on, with their own folder.
The repository's conftest.py and the Bazel pytest runner call it before any test runs.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Optional

__all__ = ["isolate"]


def isolate(parent: Optional[str] = None) -> str:
    """Set the environment as described above (subprocesses inherit it); returns the cache folder."""
    folder = tempfile.mkdtemp(prefix="polykern-test-cache-", dir=parent)
    atexit.register(shutil.rmtree, folder, True)
    os.environ["POLYKERN_CACHE_DIR"] = folder
    os.environ["POLYKERN_CACHE"] = "0"
    return folder
