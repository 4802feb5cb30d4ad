"""Host-side tests of several CUDA devices in one process against the FAKE pycuda driver with two devices
(fake_cuda.py ``fake2``: contexts 0x1000 = cuda:0 and 0x1001 = cuda:1; no GPU): arrays on ``"cuda:1"``,
a launch running on the device of its arrays (one module load per device), the mixed-device LaunchError,
peer copies (cuMemcpyPeer / cuMemcpyPeerAsync) and streams per device. They prove nothing about the real
driver (test_cuda_multidevice.py, on a machine with two GPUs)."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern.errors import DeviceUnavailableError, LaunchError, StreamError

from fake_cuda import CAI, FakeGPU, fake2, fake_runtime, make_module, param_launches  # noqa: F401  (fixtures)

CTX0, CTX1 = 0x1000, 0x1001
X = np.arange(16, dtype=np.float32)


def _owner(gpu, arr) -> int:
    return gpu.owner[gpu.find(arr.ptr)[0]]


@pytest.fixture
def launched_on(fake2, monkeypatch):
    """(stream, context) of every launch through the ctypes launcher (launches on a pk.Stream; FAKE)."""
    return param_launches(fake2[0], monkeypatch, lambda stream, ctx: (stream, ctx))


def test_arrays_live_on_the_device_their_string_names(fake2):
    gpu, rt = fake2
    a = pk.to_device(X, device="cuda:1")
    z = pk.zeros(4, np.float32, device="cuda:1")
    e = pk.empty(4, np.float32, device="cuda:0")
    assert (_owner(gpu, a), _owner(gpu, z), _owner(gpu, e)) == (CTX1, CTX1, CTX0)
    assert a.device_name == "cuda:1" and "cuda:1" in repr(a) and a.device.ordinal == 1
    np.testing.assert_array_equal(a.numpy(), X)
    assert a.device is pk.to_device(X, device="cuda:1").device  # one device object (context, pool) per ordinal
    with pytest.raises(DeviceUnavailableError, match=r"'cuda:2': this host has 2 CUDA devices \(cuda:0..cuda:1\)"):
        pk.to_device(X, device="cuda:2")


def _count_full_checks(monkeypatch) -> list:
    """Launches that went through the full argument check (the slow path), recorded by kernel name."""
    from polykern.runtime import staged_launch as kernel

    calls = []
    real = kernel.check_args

    def counting(info, *a, **kw):
        calls.append(info.name)
        return real(info, *a, **kw)

    monkeypatch.setattr(kernel, "check_args", counting)
    return calls


def test_a_launch_runs_on_the_device_of_its_arrays_with_one_module_per_device(fake2, monkeypatch):
    gpu, rt = fake2
    full = _count_full_checks(monkeypatch)
    k = make_module(rt)["saxpy"]  # the kernel of the default device: loaded there
    assert gpu.calls["load"] == 1
    x1, y1 = pk.to_device(X, device="cuda:1"), pk.zeros(16, np.float32, device="cuda:1")
    for _ in range(3):  # the first through the full path, then the fast path of cuda:1's kernel
        k(16, 2.0, x1, y1, grid=1, block=16)
    assert gpu.launch_contexts == [CTX1] * 3 and gpu.calls["load"] == 2  # loaded into cuda:1 on its first launch
    assert full == ["saxpy"]  # later launches: the fast path of cuda:1's kernel
    np.testing.assert_array_equal(y1.numpy(), 6 * X)
    x0, y0 = pk.to_device(X, device="cuda:0"), pk.zeros(16, np.float32, device="cuda:0")
    k(16, 1.0, x0, y0, grid=1, block=16)
    k(16, 1.0, x1, y1, grid=1, block=16)
    assert gpu.launch_contexts[-2:] == [CTX0, CTX1] and gpu.calls["load"] == 2  # one CUmodule per device
    np.testing.assert_array_equal(y0.numpy(), X)


def test_arguments_on_two_devices_are_a_launch_error_naming_both(fake2):
    gpu, rt = fake2
    k = make_module(rt)["saxpy"]
    x1, y0 = pk.to_device(X, device="cuda:1"), pk.zeros(16, np.float32, device="cuda:0")
    with pytest.raises(LaunchError, match=r"kernel 'saxpy': argument 'x' \(#3\) is on cuda:1 but argument 'y' "
                                          r"\(#4\) is on cuda:0; a launch runs on one device"):
        k(16, 2.0, x1, y0, grid=1, block=16)
    with pytest.raises(LaunchError, match=r"argument 'x' \(#3\) is on cuda:0 but argument 'y' \(#4\) is on cuda:1"):
        k(16, 2.0, CAI(gpu, 16, ctx=CTX0), pk.zeros(16, np.float32, device="cuda:1"), grid=1, block=16)
    assert gpu.calls["launch"] == 0 and gpu.launch_contexts == []


def test_a_foreign_array_on_cuda1_launches_on_cuda1(fake2, monkeypatch):
    """A CuPy/PyTorch array: the driver's pointer attribute (device ordinal) says where it lives."""
    gpu, rt = fake2
    full = _count_full_checks(monkeypatch)
    k = make_module(rt)["saxpy"]
    x, y = CAI(gpu, 16, ctx=CTX1), CAI(gpu, 16, ctx=CTX1)
    gpu.write(x.ptr, X.tobytes())
    k(16, 3.0, x, y, grid=1, block=16)
    k(16, 3.0, x, y, grid=1, block=16)
    assert gpu.launch_contexts == [CTX1, CTX1] and full == ["saxpy"]  # the second: cuda:1's fast path
    np.testing.assert_array_equal(np.frombuffer(gpu.read(y.ptr, 64), np.float32), 6 * X)


def test_host_arrays_run_on_the_default_device(monkeypatch):
    """POLYKERN_CUDA_DEVICE stays the device of launches with only NumPy arguments."""
    monkeypatch.setenv("POLYKERN_CUDA_DEVICE", "1")
    for gpu, rt in fake_runtime(monkeypatch, FakeGPU(count=2)):
        k = make_module(rt)["saxpy"]
        y = np.ones(16, np.float32)
        k(16, 2.0, X, y, grid=1, block=16)
        np.testing.assert_array_equal(y, 1 + 2 * X)
        assert gpu.launch_contexts == [CTX1] and pk.to_device(X, device="cuda").device.ordinal == 1
        x0 = pk.to_device(X, device="cuda:0")
        k(16, 2.0, x0, pk.zeros(16, np.float32, device="cuda:0"), grid=1, block=16)
        assert gpu.launch_contexts == [CTX1, CTX0]


def test_peer_copies_go_device_to_device(fake2):
    gpu, rt = fake2
    a = pk.to_device(X, device="cuda:1")
    htod, dtoh = gpu.calls["htod"], gpu.calls["dtoh"]
    b = a.to("cuda:0")
    c = pk.to_device(b, device="cuda:1")
    d = c.to("cuda:1")  # the same device: one copy in one context
    assert (gpu.calls["htod"], gpu.calls["dtoh"]) == (htod, dtoh)  # never through the host
    assert gpu.peer_copies == [(b.ptr, CTX0, a.ptr, CTX1, 64, None), (c.ptr, CTX1, b.ptr, CTX0, 64, None),
                               (d.ptr, CTX1, c.ptr, CTX1, 64, None)]
    for arr, ctx in ((b, CTX0), (c, CTX1), (d, CTX1)):
        assert _owner(gpu, arr) == ctx
        np.testing.assert_array_equal(arr.numpy(), X)
    h = a.to("cpu")
    assert h.device_name == "cpu" and gpu.calls["dtoh"] == dtoh + 4  # (3 checks above, then this copy)
    np.testing.assert_array_equal(h.numpy(), X)


def test_a_peer_copy_is_queued_on_the_current_stream_of_either_device(monkeypatch):
    for gpu, rt in fake_runtime(monkeypatch, FakeGPU(count=3)):
        a = pk.to_device(X, device="cuda:1")
        s = pk.Stream(device="cuda:0")
        with s:
            b = a.to("cuda:0")
        assert gpu.peer_copies[-1] == (b.ptr, CTX0, a.ptr, CTX1, 64, s._impl.handle)
        with pk.Stream(device="cuda:2"):
            with pytest.raises(StreamError, match=r"copying 64 bytes from cuda:1 to cuda:0: the current stream is "
                                                  r"on cuda:2"):
                a.to("cuda:0")
        assert len(gpu.peer_copies) == 1


def test_streams_are_made_in_their_devices_context(fake2, launched_on):
    gpu, rt = fake2
    k = make_module(rt)["saxpy"]
    s1 = pk.Stream(device="cuda:1")
    assert ("stream_create", CTX1) in gpu.calls["events"]
    x1, y1 = pk.to_device(X, device="cuda:1"), pk.zeros(16, np.float32, device="cuda:1")
    with s1:
        k(16, 2.0, x1, y1, grid=1, block=16)
        y = np.zeros(16, np.float32)
        k(16, 1.0, X, y, grid=1, block=16)  # host arrays only: the current stream's device
    assert launched_on == [(s1._impl.handle, CTX1)] * 2
    np.testing.assert_array_equal(y, X)
    x0, y0 = pk.to_device(X, device="cuda:0"), pk.zeros(16, np.float32, device="cuda:0")
    with s1, pytest.raises(StreamError, match=r"the current stream is on cuda:1, but the kernel runs on another "
                                              r"device of that kind \(where its arrays are\)"):
        k(16, 2.0, x0, y0, grid=1, block=16)
    assert len(launched_on) == 2 and gpu.calls["launch"] == 0
    s1.close()
