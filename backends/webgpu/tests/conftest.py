"""Fixtures of the webgpu backend tests.

``wgpu_context`` is the real process-wide device (lavapipe on a CPU-only host);
tests that need it skip, with the reason, where wgpu or an adapter is missing.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # ir_kernels, helpers

from polykern import backends  # noqa: E402
from polykern.testing import tier_skip

backends.load_all()


def _wgpu_skip_reason():
    try:
        from polykern_webgpu.runtime import wgpu_context
    except ImportError as e:
        return f"wgpu is not importable here: {e}"
    err = wgpu_context.context_error()
    return None if err is None else f"no WebGPU device here: {err}"


@pytest.fixture(scope="session")
def wgpu_context():
    reason = _wgpu_skip_reason()
    if reason:
        tier_skip.skip("wgpu", reason)
    from polykern_webgpu.runtime import wgpu_context

    return wgpu_context.context()
