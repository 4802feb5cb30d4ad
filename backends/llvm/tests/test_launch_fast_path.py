"""The CPU runtime's launch fast path: array addresses read from the array header (checked against
``ctypes.data``), a one-group launch called right on the launching thread without the worker pool, and
arrays the fast path must not take still go the checked way."""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import LaunchError
from polykern_llvm.runtime import pool as pool_mod
from polykern_llvm.runtime import addresses


@pk.kernel
def add_one(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = x[i] + 1.0


@pytest.fixture(scope="module")
def k():
    return pk.build([add_one], targets=["llvm"])["add_one"]


def _arrays():
    base = np.arange(100, dtype=np.float32)
    ro = base.copy()
    ro.flags.writeable = False
    return [base, base[7:], base[::3], ro, np.empty(0, np.float32), np.zeros((5, 8), np.float64)[2],
            np.frombuffer(bytearray(64), np.float32)]


@pytest.mark.parametrize("i", range(7))
def test_data_address_is_the_arrays_data_pointer(i):
    a = _arrays()[i]
    assert addresses.data_address(a) == a.ctypes.data


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="the header read is CPython's layout")
def test_cpython_reads_the_address_from_the_header():
    assert addresses.data_address is addresses._header_read


def test_one_group_runs_on_the_calling_thread_without_the_pool(k, monkeypatch):
    def no_pool(*a, **kw):
        raise AssertionError("a one-group launch went through the worker pool")
    monkeypatch.setattr(pool_mod.WorkerPool, "run", no_pool)
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    k(64, x, y, grid=1, block=64)
    np.testing.assert_array_equal(y, x + 1)
    assert k.resolve()[1].last_threads == {threading.get_ident()}


def test_views_run_at_their_own_address(k):
    x = np.arange(200, dtype=np.float32)
    y = np.zeros(300, np.float32)
    k(100, x[50:150], y[100:200], grid=2, block=64)
    np.testing.assert_array_equal(y[100:200], x[50:150] + 1)
    assert not y[:100].any() and not y[200:].any()


def test_byte_swapped_and_strided_arrays_are_not_taken_as_they_are(k):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    with pytest.raises(LaunchError):
        k(64, x.astype(">f4"), y, grid=1, block=64)
    with pytest.raises(LaunchError):
        k(32, x[::2], y, grid=1, block=64)
    ro = np.zeros(64, np.float32)
    ro.flags.writeable = False
    with pytest.raises(LaunchError):
        k(64, x, ro, grid=1, block=64)
    assert not y.any()
