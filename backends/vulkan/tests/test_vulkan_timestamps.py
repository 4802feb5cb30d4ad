"""GPU time of Vulkan launches with timestamp queries (runtime/timestamps.py), on the host's device
(lavapipe here): opt-in (the default path records no query), results unchanged when timing, device
time that grows with the work and stays below the host's submit-and-wait time, the environment switch."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import polykern as pk
from polykern import backends
from polykern.testing import tier_skip


RUNTIME_REASON = backends.runtime_reason("vulkan")
pytestmark = tier_skip.skipif("lavapipe", RUNTIME_REASON, reason=f"no Vulkan runtime here: {RUNTIME_REASON}")


@pytest.fixture
def dev():
    from polykern_vulkan.runtime import device

    d = device.get()
    was = d.timestamps
    yield d
    d.set_timestamps(was)


def _arrays(n, seed=0):
    from polykern_vulkan.runtime import device_array as da

    rng = np.random.default_rng(seed)
    xh, yh = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    return xh, yh, da.to_device(xh), da.to_device(yh)


def test_default_launch_records_no_timestamps(saxpy, dev):
    dev.set_timestamps(False)
    xh, yh, x, y = _arrays(1000)
    before = dev.gpu_seconds
    saxpy(1000, 2.0, x, y, grid=4, block=256)
    assert dev.gpu_seconds == before
    np.testing.assert_allclose(y.numpy(), 2 * xh + yh, rtol=1e-6)


def test_timed_launches_are_right_and_their_device_time_grows_with_the_work(saxpy, dev):
    dev.set_timestamps(True)
    assert dev.timestamp_bits > 0 and dev.timestamp_period_ns > 0
    n = 1 << 22
    xh, yh, x, y = _arrays(n, 1)
    g0 = dev.gpu_seconds
    t0 = time.perf_counter()
    saxpy(n, 2.0, x, y, grid=(n + 255) // 256, block=256)
    host = time.perf_counter() - t0
    big = dev.gpu_seconds - g0
    assert dev.last_gpu_seconds == pytest.approx(big)
    g0 = dev.gpu_seconds
    saxpy(0, 2.0, x, y, grid=1, block=64)
    empty = dev.gpu_seconds - g0
    assert 0 <= empty < big <= host  # device time: within the host's submit + wait, more for 4M elements
    dev.set_timestamps(False)
    out = y.numpy()
    np.testing.assert_allclose(out, 2 * xh + yh, rtol=1e-6)


def test_environment_switch_turns_timing_on():
    code = ("import numpy as np, polykern as pk, sys; sys.path.insert(0, sys.argv[1]); import vulkan_kernels as K; "
            "from polykern import backends; backends.load_all(); "
            "from polykern_vulkan.runtime import device; "
            "k = pk.build([K.saxpy], targets=['vulkan']).on('vulkan')['saxpy']; "
            "x = np.ones(4096, np.float32); y = np.ones(4096, np.float32); k(4096, 2.0, x, y, grid=16, block=256); "
            "d = device.get(); assert d.timestamps and d.gpu_seconds > 0, d.gpu_seconds; "
            "assert (y == 3).all(); print('timed', d.gpu_seconds)")
    env = dict(os.environ, POLYKERN_VK_TIMESTAMPS="1")
    r = subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__))], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("timed")


def test_unsupported_queue_is_refused_with_its_reason():
    from polykern_vulkan.runtime.timestamps import support_problem

    assert support_problem("dev", 64, 1.0) == ""
    assert "timestampValidBits = 0" in support_problem("dev", 0, 1.0)
