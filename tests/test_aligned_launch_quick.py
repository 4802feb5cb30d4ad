"""The launch-time alignment check of wide-access kernels (polykern/runtime/aligned_launch.py) reads only the address of
an aligned NumPy or __cuda_array_interface__ argument: the full argument reading (launch._buffer) ran for every
aligned buffer on every launch and cost 40-50 us a buffer (a 4096 x 4096 layer norm's CUDA launch took 208 us of
host time on the H200 host for 25 us of GPU work, which made back-to-back benchmarks measure the host).
A misaligned or unreadable argument still goes through the full reading, so its message is unchanged."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.runtime import aligned_launch
from polykern.errors import LaunchError


@pk.kernel
def wide(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i * 4 < n:
        a, b, c, d = pk.vload(x, i, 4)
        pk.vstore(y, i, (a + 1.0, b + 1.0, c + 1.0, d + 1.0))


class CAI:
    """A device-array stand-in: only its __cuda_array_interface__ address matters to the alignment check."""

    def __init__(self, ptr):
        self.ptr = ptr

    @property
    def __cuda_array_interface__(self):
        return {"typestr": "<f4", "shape": (16,), "data": (self.ptr, False), "version": 3}


def test_aligned_arguments_are_not_read_in_full(monkeypatch):
    calls = []
    real = aligned_launch._buffer
    monkeypatch.setattr(aligned_launch, "_buffer", lambda *a: calls.append(a) or real(*a))
    k = pk.build([wide], "llvm")["wide"]
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    k(64, x, y, grid=1, block=16)
    assert np.array_equal(y, x + 1) and calls == []
    assert aligned_launch._quick_address(CAI(1 << 20)) == 1 << 20


def test_misaligned_arguments_still_get_the_full_message(monkeypatch):
    calls = []
    real = aligned_launch._buffer
    monkeypatch.setattr(aligned_launch, "_buffer", lambda *a: calls.append(a) or real(*a))
    k = pk.build([wide], "llvm")["wide"]
    x, y = np.arange(65, dtype=np.float32), np.zeros(65, np.float32)
    with pytest.raises(LaunchError, match=r"argument 1 \('x'\) is at address 0x[0-9a-f]+, which is not aligned to 16"):
        k(64, x[1:], y[1:], grid=1, block=16)
    assert len(calls) == 1
    with pytest.raises(LaunchError, match="float64"):  # a wrong dtype keeps its own message first, as before
        k(64, x[1:].astype(np.float64), y[1:], grid=1, block=16)
