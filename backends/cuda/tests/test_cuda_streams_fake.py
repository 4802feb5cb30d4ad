"""Host-side tests of CUDA streams (runtime/streams.py) against the FAKE pycuda driver (fake_cuda.py; no GPU):
a launch made while a pk.Stream is current goes to that stream's handle through cuLaunchKernel (the ctypes
launcher: pycuda launches only on its own streams), one with none current to the legacy default stream through
pycuda, and one with a PyTorch tensor argument to PyTorch's current stream (a fake ``torch`` module). They
prove nothing about the real driver (test_cuda_streams.py, on a GPU machine)."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import polykern as pk
from polykern.errors import StreamError
from polykern.streams import current_stream

from fake_cuda import fake, make_module, param_launches  # noqa: F401  (fake: the fixture)


@pytest.fixture
def launched_on(fake, monkeypatch):
    """The stream of every launch that went through the ctypes launcher (FAKE, runs the emulation)."""
    return param_launches(fake[0], monkeypatch, lambda stream, ctx: stream)


def _arrays(rt, n=64):
    x = rt.to_device(np.arange(n, dtype=np.float32))
    y = rt.to_device(np.ones(n, np.float32))
    return x, y


def test_a_launch_goes_to_the_current_pk_stream(fake, launched_on):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = _arrays(rt)
    k(64, 2.0, x, y, grid=1, block=64)  # no stream current: pycuda, legacy default stream
    assert launched_on == [] and gpu.calls["launch"] == 1
    s = pk.Stream(device="cuda")
    handle = s._impl.handle
    assert handle and [ev for ev in gpu.calls["events"] if ev[0] == "stream_create"]
    with s:
        k(64, 2.0, x, y, grid=1, block=64)  # the fast path
        k(64, 2.0, x, np.zeros(64, np.float32), grid=1, block=64)  # the full path (host array)
    assert launched_on == [handle, handle] and gpu.calls["launch"] == 1
    np.testing.assert_array_equal(y.numpy(), 1 + 4 * np.arange(64, dtype=np.float32))
    e = s.record()
    assert ("record", e._impl.handle, handle) in gpu.calls["events"]
    t = pk.Stream(device="cuda")
    t.wait_event(e)
    assert ("wait", t._impl.handle, e._impl.handle) in gpu.calls["events"]
    assert e.query() and e.elapsed_ms(t.record()) == 0.5  # the fake's time
    s.close()
    assert ("stream_destroy", handle) in gpu.calls["events"]
    with pytest.raises(StreamError, match="was closed"):
        s.synchronize()


def test_a_torch_tensor_launches_on_torchs_current_stream(fake, launched_on, monkeypatch):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = _arrays(rt)
    current = {"stream": 0x7777}

    class Tensor:  # stands in for a torch CUDA tensor over y's memory
        is_cuda = True
        device = "cuda:0"

        def __init__(self, arr):
            self.__cuda_array_interface__ = {"shape": arr.shape, "typestr": "<f4", "version": 3, "strides": None,
                                             "data": (arr.__polykern_buffer__()["ptr"], False),
                                             "stream": current["stream"]}

    Tensor.__module__ = "torch"
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(current_stream=lambda device: types.SimpleNamespace(
        cuda_stream=current["stream"]))
    monkeypatch.setitem(sys.modules, "torch", torch)
    k(64, 2.0, x, Tensor(y), grid=1, block=64)
    assert launched_on == [0x7777]
    assert not [ev for ev in gpu.calls["events"] if ev[0] == "wait"]  # its own stream: no event join
    with pk.Stream(device="cuda") as s:  # a current pk.Stream wins over torch's
        k(64, 2.0, x, Tensor(y), grid=1, block=64)
    assert launched_on[-1] == s._impl.handle
    current["stream"] = 0  # torch on the legacy default stream: pycuda's launch
    k(64, 2.0, x, Tensor(y), grid=1, block=64)
    assert len(launched_on) == 2 and gpu.calls["launch"] == 1
    np.testing.assert_array_equal(y.numpy(), 1 + 6 * np.arange(64, dtype=np.float32))


def test_a_stream_made_elsewhere_gets_the_launch_and_is_never_destroyed(fake, launched_on):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = _arrays(rt)
    k(64, 2.0, x, y, grid=1, block=64)
    s = pk.Stream(device="cuda", handle=0x5EED)  # e.g. XLA's stream (polykern.jax on a GPU)
    with s:
        k(64, 2.0, x, y, grid=1, block=64)
    assert launched_on == [0x5EED]
    s.close()
    assert not [ev for ev in gpu.calls["events"] if ev[0] == "stream_destroy" and ev[1] == 0x5EED]
    with pytest.raises(StreamError, match=r"a CUstream is an int in 0..2\*\*64-1 \(a pointer\), got .0x5EED."):
        pk.Stream(device="cuda", handle="0x5EED")
    for bad in (-1, 1 << 64, True, 1.5, np.int64(5)):  # not a pointer (1 << 64 was taken, and failed at the launch)
        with pytest.raises(StreamError, match=r"a CUstream is an int in 0..2\*\*64-1"):
            pk.Stream(device="cuda", handle=bad)


def test_a_capture_records_launches_and_replays_them(fake, launched_on):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = _arrays(rt)
    k(64, 2.0, x, y, grid=1, block=64)  # loaded before the capture
    s = pk.Stream(device="cuda")
    with s.capture() as g:
        assert current_stream("cuda") is s and repr(g) == "<polykern Graph on cuda:0, not captured>"
        k(64, 2.0, x, y, grid=1, block=64)
        k(64, 2.0, x, y, grid=1, block=64)
    assert current_stream("cuda") is None and gpu.capturing == {}
    assert g.launches == 2 and repr(g) == "<polykern Graph on cuda:0, 2 launches>"
    g.replay()  # no stream current: the default stream
    g.replay(s)
    t = pk.Stream(device="cuda")
    with t:
        g.replay()  # the current stream
    assert [stream for _, stream in gpu.replays] == [0, s._impl.handle, t._impl.handle]
    with t.capture() as outer:  # a graph replayed into another capture: the new graph holds its arrays too
        g.replay()
        k(64, 2.0, x, y, grid=1, block=64)
    assert outer.launches == 3 and any(x in args for args in outer._impl.keep[:2])
    outer.close()
    g.close()
    assert gpu.graphs == {}  # the graph and its executable were destroyed
    with pytest.raises(StreamError, match="not captured yet \\(or was closed\\)"):
        g.replay()


def test_capture_misuse_is_named_and_leaves_the_stream_usable(fake, launched_on):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = _arrays(rt)
    k(64, 2.0, x, y, grid=1, block=64)
    s = pk.Stream(device="cuda")
    with pytest.raises(StreamError, match="is capturing already"):
        with s.capture():
            with s.capture():
                pass
    with pytest.raises(KeyError):  # an exception in the block: nothing kept, the capture ended
        with s.capture() as g:
            k(64, 2.0, x, y, grid=1, block=64)
            raise KeyError("boom")
    assert g._impl is None and gpu.capturing == {} and gpu.graphs == {} and current_stream("cuda") is None
    # waiting for a capturing stream: named (it was CUresult 900 from the driver, which broke the capture)
    for wait in (s.synchronize, s.close):
        with pytest.raises(StreamError, match=r"(synchronize|close): <polykern Stream at 0x[0-9a-f]+ on cuda:0> is "
                                              r"capturing a CUDA graph \(its launches are recorded, not run\)"):
            with s.capture():
                wait()
        assert gpu.capturing == {} and current_stream("cuda") is None
    with pytest.raises(StreamError, match="launching kernel 'saxpy' with host \\(NumPy\\) arrays while its stream is "
                                          "capturing"):
        with s.capture():
            k(64, 2.0, x, np.ones(64, np.float32), grid=1, block=64)
    with s:  # still usable
        k(64, 2.0, x, y, grid=1, block=64)
    s.synchronize()
    with pytest.raises(StreamError, match="default stream on cuda:0> cannot capture"):
        with pk.default_stream("cuda").capture():
            pass
    with pytest.raises(StreamError, match="the legacy default stream cannot be captured"):
        with pk.Stream(device="cuda", handle=0).capture():
            pass
    with pytest.raises(StreamError, match="streams of the cpu runtime cannot record work to replay"):
        with pk.Stream(device="cpu").capture():
            pass
    s.close()
    with pytest.raises(StreamError, match="capture: .* was closed"):
        with s.capture():
            pass
    assert gpu.capturing == {} and current_stream("cuda") is None
