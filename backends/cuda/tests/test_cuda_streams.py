"""Streams on the CUDA runtime (runtime/streams.py) on a real NVIDIA GPU: a pk.Stream is a cuStreamCreate
stream that launches go to (through cuLaunchKernel), events time with cuEventElapsedTime, and with no
pk.Stream current a launch with PyTorch / CuPy arguments goes to PyTorch's / CuPy's current stream.
Skipped with the reason where the runtime is unavailable (on the GPU machine: tools/gpu/run_gpu_suite.sh).
"""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import backends
from polykern.errors import StreamError
try:
    from two_gpu_probe import spin  # x[i] += 1 after `rounds` multiplications: a launch that takes a while
except ImportError:  # tools/gpu (conftest.py) is not in a Bazel test's runfiles
    spin = None

_REC = backends.record_for_kind("cuda")
REASON = "" if (_REC is not None and _REC.runtime_available) else (
    _REC.runtime_reason if _REC is not None else "the cuda backend is not installed")
if spin is None:
    REASON = "tools/gpu/two_gpu_probe.py (the spin kernel) is not in this tree (a Bazel test's runfiles)"
pytestmark = pytest.mark.skipif(bool(REASON), reason=f"no CUDA device: {REASON}" if _REC is None or
                                not _REC.runtime_available else REASON)
N = 1 << 20


@pytest.fixture(scope="module")
def k():
    return pk.build([spin], ["cuda"])["spin"]


def test_pk_stream_gets_the_launch_and_times_it(k):
    x = pk.zeros(N, np.float32, device="cuda")
    s = pk.Stream(device="cuda")
    assert s._impl.handle != 0
    start = s.record()
    with s:
        k(N, 20000, x, grid=N // 256, block=256)
    end = s.record()
    assert not end.query()  # the busy launch is still running on s: the call did not wait
    assert start.elapsed_ms(end) > 0.0
    assert end.query()
    np.testing.assert_array_equal(x.numpy(), np.ones(N, np.float32))
    s.close()


def test_events_order_two_streams(k):
    x = pk.zeros(N, np.float32, device="cuda")
    a, b = pk.Stream(device="cuda"), pk.Stream(device="cuda")
    with a:
        k(N, 20000, x, grid=N // 256, block=256)
    b.wait_event(a.record())
    with b:
        k(N, 0, x, grid=N // 256, block=256)
    b.synchronize()
    np.testing.assert_array_equal(x.numpy(), np.full(N, 2, np.float32))


def test_launch_goes_to_torchs_current_stream(k):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (the current-stream pick-up needs it)")
    x = torch.zeros(N, dtype=torch.float32, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        k(N, 20000, x, grid=N // 256, block=256)
        assert not side.query()  # the launch is queued on `side`
    assert torch.cuda.default_stream().query()  # ... and not on the default stream
    side.synchronize()
    assert float(x[0]) == 1.0


def test_launch_goes_to_cupys_current_stream(k):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed (the current-stream pick-up needs it)")
    x = cp.zeros(N, dtype=cp.float32)
    side = cp.cuda.Stream(non_blocking=True)
    with side:
        k(N, 20000, x, grid=N // 256, block=256)
        assert not side.done
    side.synchronize()
    assert float(x[0]) == 1.0


def test_a_captured_graph_replays_the_launches(k):
    x = pk.zeros(N, np.float32, device="cuda")
    s = pk.Stream(device="cuda")
    with s:
        k(N, 0, x, grid=N // 256, block=256)  # the first launch loads and checks the kernel
    s.synchronize()
    with s.capture() as g:
        k(N, 10, x, grid=N // 256, block=256)
        k(N, 10, x, grid=N // 256, block=256)
    s.synchronize()
    np.testing.assert_array_equal(x.numpy(), np.ones(N, np.float32))  # captured, not run
    assert g.launches == 2
    g.replay()
    g.replay(s)
    pk.synchronize("cuda")
    s.synchronize()
    np.testing.assert_array_equal(x.numpy(), np.full(N, 5, np.float32))
    g.close()
    with pytest.raises(StreamError, match="not captured yet"):
        g.replay()
    s.close()


def test_host_arrays_cannot_be_captured_and_the_stream_stays_usable(k):
    s = pk.Stream(device="cuda")
    host = np.zeros(N, np.float32)
    with s:
        k(N, 0, pk.zeros(N, np.float32, device="cuda"), grid=N // 256, block=256)
    with pytest.raises(StreamError, match="host \\(NumPy\\) arrays while its stream is capturing"):
        with s.capture():
            k(N, 0, host, grid=N // 256, block=256)
    np.testing.assert_array_equal(host, 0)
    x = pk.zeros(N, np.float32, device="cuda")
    with s:
        k(N, 0, x, grid=N // 256, block=256)
    s.synchronize()
    np.testing.assert_array_equal(x.numpy(), np.ones(N, np.float32))
    with pytest.raises(StreamError, match="default stream"):
        with pk.default_stream("cuda").capture():
            pass
    s.close()


def test_torch_cuda_graph_captures_polykern_launches(k):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (torch.cuda.graph needs it)")
    x = torch.zeros(N, dtype=torch.float32, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as torch.cuda.graph asks
        k(N, 0, x, grid=N // 256, block=256)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k(N, 10, x, grid=N // 256, block=256)
        x.mul_(2)
    torch.cuda.synchronize()
    assert float(x[0]) == 1.0  # captured, not run
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(x, torch.full((N,), 22.0, device="cuda"))  # ((1+1)*2+1)*2+1)*2


def test_cupy_stream_capture_records_polykern_launches(k):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    x = cp.zeros(N, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        k(N, 0, x, grid=N // 256, block=256)  # warm-up on the stream (its launcher is made here)
        s.synchronize()
        s.begin_capture()
        k(N, 10, x, grid=N // 256, block=256)
        graph = s.end_capture()
    graph.launch(s)
    graph.launch(s)
    s.synchronize()
    assert float(x[0]) == 3.0
