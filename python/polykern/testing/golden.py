"""Golden-file comparison shared by every backend's codegen tests.

``check_golden(path, text)`` fails with a unified diff when the emitted text differs from the file;
with ``POLYKERN_UPDATE_GOLDEN=1`` it rewrites the file instead (review the diff before committing).
"""
from __future__ import annotations

import difflib
import os
import pathlib

UPDATE_ENV = "POLYKERN_UPDATE_GOLDEN"


def updating() -> bool:
    return os.environ.get(UPDATE_ENV, "") not in ("", "0")


def check_golden(path, text: str) -> None:
    path = pathlib.Path(path)
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if not path.exists():
        raise AssertionError(f"{path} is missing; run with {UPDATE_ENV}=1 to create it")
    expected = path.read_text()
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            f"golden/{path.name}", "emitted"))
        raise AssertionError(f"{path.name} changed ({UPDATE_ENV}=1 regenerates it):\n{diff}")
