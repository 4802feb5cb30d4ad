"""Shared setup of the vulkan backend tests: helper modules importable, backends loaded, the ``saxpy``
fixture (vulkan_kernels.saxpy built for Vulkan; requested only by tests that skip where Vulkan is absent)."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # vulkan_kernels, vulkan_tools

from polykern import backends  # noqa: E402

backends.load_all()


@pytest.fixture(scope="module")
def saxpy():
    import polykern as pk
    import vulkan_kernels as K

    return pk.build([K.saxpy], targets=["vulkan"]).on("vulkan")["saxpy"]
