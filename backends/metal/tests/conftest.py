"""Shared setup of the metal backend tests: metal_support importable, backends loaded once."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # metal_support

from polykern import backends  # noqa: E402

backends.load_all()
