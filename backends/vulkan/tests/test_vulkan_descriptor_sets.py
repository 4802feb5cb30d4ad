"""Descriptor sets kept across launches (runtime/descriptor_sets.py) and launches replayed from their
recorded command buffers (CommandContext.prepare), on the host's device (lavapipe here): a loop of
launches with the same buffers writes one set and records once, results stay right, a different scalar or
grid is recorded anew (never replayed with the old values), more binding lists than a context keeps stay
right, any destroyed object drops the kept sets and command buffers (a VkBuffer handle may be reused after
its buffer is destroyed), and replayed launches still write their timestamps."""
import numpy as np
import pytest

import polykern as pk
from polykern import backends
from polykern.testing import tier_skip


RUNTIME_REASON = backends.runtime_reason("vulkan")
pytestmark = tier_skip.skipif("lavapipe", RUNTIME_REASON, reason=f"no Vulkan runtime here: {RUNTIME_REASON}")


@pytest.fixture(scope="module")
def dev():
    from polykern_vulkan.runtime import device

    return device.get()


def _pair(n, seed):
    from polykern_vulkan.runtime import device_array as da

    rng = np.random.default_rng(seed)
    xh, yh = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    return xh, yh, da.to_device(xh), da.to_device(yh)


def _written(dev):
    return dev.stats["descriptor_sets_written"]


def test_same_bindings_write_one_set_and_results_stay_right(saxpy, dev):
    n = 1000
    xh, yh, x, y = _pair(n, 0)
    saxpy(n, 1.0, x, y, grid=4, block=256)
    before = _written(dev)
    assert before >= 1  # that launch's set was written (and counted)
    for _ in range(10):
        saxpy(n, 1.0, x, y, grid=4, block=256)
    assert _written(dev) == before  # the single-threaded loop reuses its context and that context's set
    np.testing.assert_allclose(y.numpy(), yh + 11 * xh, rtol=1e-5)


def test_more_binding_lists_than_a_context_keeps(saxpy, dev):
    from polykern_vulkan.runtime.descriptor_sets import SETS

    n = 300
    pairs = [_pair(n, s) for s in range(SETS + 5)]
    for _ in range(2):
        for _, _, x, y in pairs:
            saxpy(n, 2.0, x, y, grid=2, block=256)
    for xh, yh, _, y in pairs:
        np.testing.assert_allclose(y.numpy(), yh + 4 * xh, rtol=1e-5)


def test_a_destroyed_object_drops_the_kept_sets(saxpy, dev):
    n = 500
    xh, yh, x, y = _pair(n, 7)
    saxpy(n, 1.0, x, y, grid=2, block=256)
    before = _written(dev)
    epoch = dev.release_epoch
    dev.release(dev.own(lambda: None))  # any destroy (a buffer's, a layout's) goes through release
    assert dev.release_epoch > epoch
    saxpy(n, 1.0, x, y, grid=2, block=256)
    assert _written(dev) == before + 1  # written again: the kept set may name a reused handle
    np.testing.assert_allclose(y.numpy(), yh + 2 * xh, rtol=1e-5)


def test_host_arrays_still_copy_in_and_back(saxpy):
    n = 777
    x = np.arange(n, dtype=np.float32)
    for k in range(3):
        y = np.full(n, float(k), np.float32)
        saxpy(n, 3.0, x, y, grid=4, block=256)
        np.testing.assert_allclose(y, 3 * x + k)


def _replayed(dev):
    return dev.stats["launches_replayed"]


def test_a_loop_of_identical_launches_replays_the_recorded_one(saxpy, dev):
    n = 1000
    xh, yh, x, y = _pair(n, 11)
    saxpy(n, 1.0, x, y, grid=4, block=256)
    before = _replayed(dev)
    for _ in range(10):
        saxpy(n, 1.0, x, y, grid=4, block=256)
    assert _replayed(dev) == before + 10
    np.testing.assert_allclose(y.numpy(), yh + 11 * xh, rtol=1e-5)


def test_other_scalars_or_grid_are_recorded_not_replayed_with_old_values(saxpy, dev):
    n = 1000
    xh, yh, x, y = _pair(n, 12)
    want = yh.astype(np.float64)
    for a, grid in [(1.0, 4), (2.0, 4), (1.0, 4), (2.0, 1), (2.0, 4), (2.0, 1)]:
        saxpy(n, a, x, y, grid=grid, block=256)
        want[:grid * 256] += a * xh[:grid * 256]
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-5)


def test_a_destroyed_object_drops_the_replayed_launches(saxpy, dev):
    n = 500
    xh, yh, x, y = _pair(n, 13)
    saxpy(n, 1.0, x, y, grid=2, block=256)
    saxpy(n, 1.0, x, y, grid=2, block=256)
    before = _replayed(dev)
    dev.release(dev.own(lambda: None))
    saxpy(n, 1.0, x, y, grid=2, block=256)
    assert _replayed(dev) == before  # recorded again
    saxpy(n, 1.0, x, y, grid=2, block=256)
    assert _replayed(dev) == before + 1
    np.testing.assert_allclose(y.numpy(), yh + 4 * xh, rtol=1e-5)


def test_replayed_launches_write_their_timestamps(saxpy, dev):
    n = 1 << 16
    xh, yh, x, y = _pair(n, 14)
    dev.set_timestamps(True)
    try:
        saxpy(n, 1.0, x, y, grid=n // 256, block=256)
        before, g0 = _replayed(dev), dev.gpu_seconds
        for _ in range(3):
            saxpy(n, 1.0, x, y, grid=n // 256, block=256)
            assert dev.last_gpu_seconds > 0
        assert _replayed(dev) == before + 3 and dev.gpu_seconds > g0
    finally:
        dev.set_timestamps(False)
    saxpy(n, 1.0, x, y, grid=n // 256, block=256)  # timestamps off: recorded without them
    np.testing.assert_allclose(y.numpy(), yh + 5 * xh, rtol=1e-5)


def test_threads_replaying_their_own_launches(saxpy, dev):
    import threading

    n, rounds = 2000, 25
    pairs = [_pair(n, 20 + t) for t in range(4)]
    errors = []

    def work(t):
        try:
            _, _, x, y = pairs[t]
            for _ in range(rounds):
                saxpy(n, float(t + 1), x, y, grid=8, block=256)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for t, (xh, yh, _, y) in enumerate(pairs):
        np.testing.assert_allclose(y.numpy(), yh + rounds * (t + 1) * xh, rtol=1e-5)
