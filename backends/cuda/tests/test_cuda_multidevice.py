"""Several CUDA devices in one process, on real GPUs (docs/runtime.md "Several devices"): arrays on
``"cuda:1"``, launches running where their arrays live (DeviceArrays and PyTorch tensors), the mixed-device
LaunchError, peer copies, streams per device, and a long kernel on each of two GPUs running at once.
Skipped with the reason on a host with fewer than two CUDA devices (run on a machine with two GPUs:
tools/gpu/run_gpu_suite.sh; figures: tools/gpu/two_gpu_probe.py). The host-side logic is tested without a
GPU in test_cuda_multidevice_fake.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import backends
from polykern.errors import LaunchError, StreamError

from fake_cuda import saxpy  # the kernel only; no fake here

try:
    import two_gpu_probe as probe  # tools/gpu (conftest.py)
except ImportError:  # a Bazel test's runfiles hold no tools/gpu
    probe = None

_REC = backends.record_for_kind("cuda")
if probe is None:
    REASON = "tools/gpu/two_gpu_probe.py is not in this tree (a Bazel test's runfiles)"
elif _REC is None or not _REC.runtime_available:
    REASON = f"no CUDA device: {_REC.runtime_reason if _REC is not None else 'the cuda backend is not installed'}"
else:
    from polykern_cuda import runtime as _rt

    _n = _rt.device_count()
    REASON = "" if _n >= 2 else f"needs two CUDA devices; this host has {_n}"
pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "-")
X = np.arange(1 << 16, dtype=np.float32)


@pytest.fixture(scope="module")
def k():
    return pk.build([saxpy], ["cuda"])["saxpy"]


def _ordinal(arr) -> int:
    from polykern_cuda.runtime import libcuda

    return libcuda.pointer_info(arr.ptr).ordinal


def test_a_launch_on_cuda1_arrays_runs_on_cuda1(k):
    n = X.size
    x, y = pk.to_device(X, device="cuda:1"), pk.zeros(n, np.float32, device="cuda:1")
    assert (_ordinal(x), _ordinal(y), x.device_name) == (1, 1, "cuda:1")
    for _ in range(2):
        k(n, 2.0, x, y, grid=n // 256, block=256)
    np.testing.assert_array_equal(y.numpy(), 4 * X)
    y0 = pk.zeros(n, np.float32, device="cuda:0")
    with pytest.raises(LaunchError, match=r"argument 'x' \(#3\) is on cuda:1 but argument 'y' \(#4\) is on cuda:0"):
        k(n, 2.0, x, y0, grid=n // 256, block=256)


def test_peer_copies(k):
    a = pk.to_device(X, device="cuda:1")
    b = a.to("cuda:0")
    assert _ordinal(b) == 0
    np.testing.assert_array_equal(b.numpy(), X)
    s = pk.Stream(device="cuda:0")
    with s:
        c = pk.to_device(b, device="cuda:1")  # cuMemcpyPeerAsync on s
    s.synchronize()
    assert _ordinal(c) == 1
    np.testing.assert_array_equal(c.numpy(), X)


def test_torch_tensors_on_cuda1_launch_on_cuda1(k):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if torch.cuda.device_count() < 2:
        pytest.skip(f"PyTorch sees {torch.cuda.device_count()} CUDA device(s)")
    n = X.size
    x = torch.from_numpy(X).to("cuda:1")
    y = torch.ones(n, device="cuda:1")
    k(n, 3.0, x, y, grid=n // 256, block=256)
    np.testing.assert_array_equal(y.cpu().numpy(), 1 + 3 * X)


def test_streams_per_device(k):
    n = X.size
    x0, y0 = pk.to_device(X, device="cuda:0"), pk.zeros(n, np.float32, device="cuda:0")
    s1 = pk.Stream(device="cuda:1")
    with s1, pytest.raises(StreamError, match="the current stream is on cuda:1"):
        k(n, 2.0, x0, y0, grid=n // 256, block=256)
    x1, y1 = pk.to_device(X, device="cuda:1"), pk.zeros(n, np.float32, device="cuda:1")
    with s1:
        k(n, 2.0, x1, y1, grid=n // 256, block=256)
    s1.synchronize()
    np.testing.assert_array_equal(y1.numpy(), 2 * X)
    s1.close()


def test_two_kernels_run_at_once_on_two_gpus():
    """A long kernel on each GPU, each on a stream of its device: both had started before either finished,
    and both together take about as long as the longer one alone (not the sum, as they would on one GPU)."""
    k = pk.build([probe.spin], ["cuda"])["spin"]
    devs = ("cuda:0", "cuda:1")
    xs = [pk.zeros(probe.N, np.float32, device=d) for d in devs]
    streams = [pk.Stream(device=d) for d in devs]
    probe.run_both(k, xs, streams, 1)  # load the module on both devices
    rounds = 200000
    alone = [probe.run_both(k, xs[i:i + 1], streams[i:i + 1], rounds)[0] for i in range(2)]
    both, spans = probe.run_both(k, xs, streams, rounds)
    assert min(alone) > 0.005, f"the kernel is too short to show overlap ({alone} s)"
    assert probe.overlapped(spans), f"the launches did not overlap: {spans} (s, from the first launch)"
    assert both < 1.5 * max(alone), f"both at once took {both:.3f} s; alone {alone[0]:.3f} s and {alone[1]:.3f} s"
    for x in xs:
        np.testing.assert_array_equal(x.numpy(), np.full(probe.N, 3.0, np.float32))  # warm-up, alone, both
    for s in streams:
        s.close()
