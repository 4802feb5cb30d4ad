"""Streams on the OpenCL runtime (runtime/streams.py): a launch with only DeviceArrays is enqueued and not
waited for, one with NumPy arrays waits and copies back; every pk.Stream is its own in-order queue; the host
waits for every queue of the device before it touches a DeviceArray; events are markers with profiling
times."""
import numpy as np
import pyopencl as cl
import pytest

import polykern as pk
from polykern import Buffer, backends, f32, i32
from polykern.testing import tier_skip

backends.load_all()
_REC = backends.record_for_kind("opencl")
if _REC is None or not _REC.runtime_available:
    tier_skip.skip("pocl", f"OpenCL runtime not available: {_REC.runtime_reason if _REC else 'backend not found'}")

N = 1 << 12


@pk.kernel
def scale(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i]


@pytest.fixture(scope="module")
def k():
    return pk.build([scale], ["opencl"])["scale"]


@pytest.fixture
def waited(monkeypatch):
    calls = []
    real = cl.wait_for_events
    monkeypatch.setattr(cl, "wait_for_events", lambda evs: (calls.append(len(evs)), real(evs)))
    return calls


def test_device_array_launch_is_not_waited_for(k, waited):
    x = pk.to_device(np.ones(N, np.float32), device="opencl")
    y = pk.zeros(N, np.float32, device="opencl")
    dev = x.device
    k(N, 3.0, x, y, grid=N // 64, block=64)
    assert waited == [] and dev.queued
    np.testing.assert_array_equal(y.numpy(), np.full(N, 3, np.float32))
    assert not dev.queued  # numpy() finished every queue
    host = np.zeros(N, np.float32)
    k(N, 2.0, x, host, grid=N // 64, block=64)
    assert waited == [2]  # the kernel and the copy back
    np.testing.assert_array_equal(host, np.full(N, 2, np.float32))


def test_each_stream_is_its_own_queue(k):
    x = pk.to_device(np.ones(N, np.float32), device="opencl")
    s, t = pk.Stream(device="opencl"), pk.Stream(device="opencl")
    dev = x.device
    assert len({id(dev.queue), id(s._impl.queue), id(t._impl.queue)}) == 3
    assert {id(v) for v in dev.streams} >= {id(s._impl), id(t._impl)}
    with s:
        k(N, 5.0, x, x, grid=N // 64, block=64)
    e = s.record()
    t.wait_event(e)
    with t:
        k(N, 2.0, x, x, grid=N // 64, block=64)
    np.testing.assert_array_equal(x.numpy(), np.full(N, 10, np.float32))  # numpy() waited for both queues
    assert e.query() and e._impl.event.command_type == cl.command_type.MARKER
    s.close()
    assert s._impl not in dev.streams
