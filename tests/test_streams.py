"""Streams and events (polykern/streams.py, docs/runtime.md) on every runtime present here: launches on one
stream see each other's writes, an event orders two streams, device arrays stay on the device until
numpy(), host arrays are still copied back before the launch returns, and misuse is a named StreamError."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import DeviceUnavailableError, StreamError
from polykern.streams import current_stream
from device_support import DEVICES, target_or_skip as _target_or_skip

N = 1 << 14


@pk.kernel
def add_one(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = x[i] + 1.0


@pk.kernel
def twice(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = 2.0 * x[i]


def _kernels(device):
    mod = pk.build([add_one, twice], [_target_or_skip(device)])
    return mod["add_one"], mod["twice"]


@pytest.mark.parametrize("device", list(DEVICES))
def test_launches_on_one_stream_see_each_others_writes(device):
    inc, dbl = _kernels(device)
    x = pk.to_device(np.arange(N, dtype=np.float32), device=device)
    y = pk.zeros(N, np.float32, device=device)
    s = pk.Stream(device=device)
    with s:
        assert current_stream(s.kind) is s
        for _ in range(3):  # x -> y -> x -> y ...: each launch reads what the one before wrote
            inc(N, x, y, grid=N // 64, block=64)
            dbl(N, y, x, grid=N // 64, block=64)
    assert current_stream(s.kind) is None
    s.synchronize()
    expect = np.arange(N, dtype=np.float32)
    for _ in range(3):
        expect = 2 * (expect + 1)
    np.testing.assert_array_equal(x.numpy(), expect)
    s.close()


@pytest.mark.parametrize("device", list(DEVICES))
def test_an_event_orders_two_streams(device):
    inc, dbl = _kernels(device)
    x = pk.to_device(np.full(N, 5, np.float32), device=device)
    y = pk.zeros(N, np.float32, device=device)
    z = pk.zeros(N, np.float32, device=device)
    producer, consumer = pk.Stream(device=device), pk.Stream(device=device)
    with pk.stream(producer):
        inc(N, x, y, grid=N // 64, block=64)
        done = producer.record()
    consumer.wait_event(done)
    with consumer:
        dbl(N, y, z, grid=N // 64, block=64)
    after = consumer.record()
    after.synchronize()
    assert after.query() and done.query()
    np.testing.assert_array_equal(z.numpy(), np.full(N, 12, np.float32))


@pytest.mark.parametrize("device", list(DEVICES))
def test_device_arrays_stay_until_numpy_and_host_arrays_come_back(device):
    inc, _ = _kernels(device)
    x = pk.to_device(np.arange(N, dtype=np.float32), device=device)
    y = pk.zeros(N, np.float32, device=device)
    host = np.zeros(N, np.float32)
    with pk.Stream(device=device):
        inc(N, x, y, grid=N // 64, block=64)  # returns once queued
        inc(N, y, host, grid=N // 64, block=64)  # a host array: copied back before the call returns
        np.testing.assert_array_equal(host, np.arange(N, dtype=np.float32) + 2)
        inc(N, x, y, grid=N // 64, block=64)
        x.copy_from_host(np.zeros(N, np.float32))  # waits for the launch reading x, then writes
        np.testing.assert_array_equal(y.numpy(), np.arange(N, dtype=np.float32) + 1)


@pytest.mark.parametrize("device", list(DEVICES))
def test_default_stream_and_synchronize(device):
    inc, _ = _kernels(device)
    x = pk.to_device(np.ones(N, np.float32), device=device)
    y = pk.zeros(N, np.float32, device=device)
    d = pk.default_stream(device)
    assert d is pk.default_stream(device) and d.is_default
    start = d.record()
    inc(N, x, y, grid=N // 64, block=64)
    end = d.record()
    pk.synchronize(device)
    assert start.query() and end.query()
    np.testing.assert_array_equal(y.numpy(), np.full(N, 2, np.float32))
    with pytest.raises(StreamError, match="default stream"):
        d.close()


@pytest.mark.parametrize("device", list(DEVICES))
def test_elapsed_ms_where_the_device_can_time(device):
    inc, _ = _kernels(device)
    x = pk.to_device(np.ones(N, np.float32), device=device)
    y = pk.zeros(N, np.float32, device=device)
    s = pk.Stream(device=device)
    start = s.record()
    with s:
        for _ in range(5):
            inc(N, x, y, grid=N // 64, block=64)
    end = s.record()
    if device == "webgpu":
        with pytest.raises(StreamError, match="no device time"):
            start.elapsed_ms(end)
    else:
        ms = start.elapsed_ms(end)
        assert 0.0 <= ms < 60_000.0
    untimed = s.record(pk.Event(timing=False))
    with pytest.raises(StreamError, match="timing=False"):
        start.elapsed_ms(untimed)


@pytest.mark.parametrize("device", list(DEVICES))
def test_a_closed_stream_is_refused_by_name(device):
    inc, _ = _kernels(device)
    x = pk.to_device(np.ones(N, np.float32), device=device)
    s = pk.Stream(device=device)
    s.close()
    s.close()  # twice is fine
    for use in (s.synchronize, s.record, lambda: s.__enter__()):
        with pytest.raises(StreamError, match="was closed"):
            use()
    t = pk.Stream(device=device)
    with t:
        t.close()  # closed while current: the launch names it
        if device != "cpu":  # CPU launches run on the host and never consult a stream
            with pytest.raises(StreamError, match="launching kernel 'add_one'.*was closed"):
                inc(N, x, x, grid=N // 64, block=64)


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "cpu"])
def test_a_stream_of_another_device_is_refused_by_name(device):
    inc, _ = _kernels(device)
    x = pk.to_device(np.ones(N, np.float32), device=device)
    s = pk.Stream(device=device)
    s._impl.device = object()  # as a stream of a second device of this kind would be
    with s, pytest.raises(StreamError, match="current stream is on .*another device"):
        inc(N, x, x, grid=N // 64, block=64)
    cpu_event = pk.Stream("cpu").record()
    with pytest.raises(StreamError, match="recorded on cpu"):
        pk.Stream(device=device).wait_event(cpu_event)
    with pytest.raises(StreamError, match="different devices"):
        cpu_event.elapsed_ms(pk.Stream(device=device).record())


def test_misuse_is_named():
    with pytest.raises(StreamError, match="never recorded"):
        pk.Event().synchronize()
    with pytest.raises(StreamError, match="expected a pk.Stream"):
        pk.Event().record("cpu")
    with pytest.raises(StreamError, match="expected a pk.Stream or None"):
        pk.stream("vulkan")
    with pytest.raises(DeviceUnavailableError, match="hexagon"):
        pk.Stream(device="hexagon")
    with pk.stream(None):  # no stream: nothing changes
        assert current_stream("cpu") is None


def test_docs_runtime_example_runs(tmp_path):
    """docs/runtime.md's example runs as written (on Vulkan, its device)."""
    import os
    import pathlib
    import re
    import subprocess
    import sys

    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "runtime.md"
    if not doc.exists():
        pytest.skip("docs/runtime.md is not in this tree")
    _target_or_skip("vulkan:0")
    code = re.search(r"^```python\n(.*?)^```$", doc.read_text(), re.M | re.S).group(1)
    (tmp_path / "example.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_capture_is_refused_where_the_runtime_cannot_replay():
    s = pk.Stream(device="cpu")
    with pytest.raises(StreamError, match="streams of the cpu runtime cannot record work to replay"):
        with s.capture():
            pass
    g = pk.Graph(s)
    with pytest.raises(StreamError, match="not captured yet"):
        g.replay()
    with pytest.raises(StreamError, match="the cpu runtime cannot take a stream made elsewhere"):
        pk.Stream(device="cpu", handle=1234)


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "cpu"])
def test_a_device_array_or_stream_is_a_fresh_processs_first_call(device):
    """Device arrays and streams discover the backends themselves: no build needs to come first."""
    import subprocess
    import sys

    _target_or_skip(device)
    code = (f"import numpy as np, polykern as pk\ns = pk.Stream(device={device!r})\n"
            f"x = pk.zeros(3, np.float32, device={device!r})\nprint(s.device, x.numpy().tolist())")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-3:] == ["[0.0,", "0.0,", "0.0]"], proc.stdout


def test_with_discovery_off_an_unknown_kind_says_why():
    """POLYKERN_BACKEND_AUTOLOAD=0: nothing discovers the backends, so a device of theirs is an unknown kind; the
    error said only "no such device kind", as for a misspelt one."""
    import os
    import subprocess
    import sys

    code = ("import polykern as pk\nfrom polykern.errors import DeviceStringError\ntry:\n"
            "    pk.Stream(device='vulkan')\nexcept DeviceStringError as e:\n    print(e)\n")
    env = {**os.environ, "POLYKERN_BACKEND_AUTOLOAD": "0"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("device 'vulkan': no such device kind (known: cpu") and proc.stdout.rstrip().endswith(
        "; POLYKERN_BACKEND_AUTOLOAD=0 turned backend discovery off: declare the backend yourself (its "
        "register_backend())"), proc.stdout
