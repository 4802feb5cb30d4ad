"""Shared setup of the cuda backend tests: cuda_support and tools/gpu/two_gpu_probe importable, backends loaded
once."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # cuda_support
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "gpu"))  # two_gpu_probe

from polykern import backends  # noqa: E402

backends.load_all()
