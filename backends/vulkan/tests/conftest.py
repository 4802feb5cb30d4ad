"""Shared setup of the vulkan backend tests: helper modules importable, backends loaded."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # vulkan_kernels, vulkan_tools

from polykern import backends  # noqa: E402

backends.load_all()
