"""Shared setup of the opencl backend tests: opencl_support importable, backends loaded once."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # opencl_support

from polykern import backends  # noqa: E402

backends.load_all()
