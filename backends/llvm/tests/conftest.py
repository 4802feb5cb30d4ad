"""Fixtures of the llvm (CPU) backend tests: everything here runs for real on this host's CPU."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # irk (hand-built IR helpers)

from polykern import backends  # noqa: E402

backends.load_all()
