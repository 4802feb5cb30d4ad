"""Run a test against a private copy of the registry and the backend table."""
from __future__ import annotations

import contextlib
from typing import Iterator

from .. import backends, registry


@contextlib.contextmanager
def isolated(loaded: bool = True) -> Iterator[None]:
    """Swap in an empty registry and backend table; restore the originals afterwards.
    ``loaded=True`` marks discovery as done so no real backend is imported inside."""
    saved = (registry._entries, backends._records, backends._kind_owner, backends._attempted_modules,
             backends._state)
    registry._entries = {}
    backends._records = {}
    backends._kind_owner = {}
    backends._attempted_modules = set()
    backends._state = {"loaded": loaded, "loading": False}
    try:
        yield
    finally:
        (registry._entries, backends._records, backends._kind_owner, backends._attempted_modules,
         backends._state) = saved
