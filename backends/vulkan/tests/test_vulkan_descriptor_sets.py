"""Descriptor sets kept across launches (runtime/descriptor_sets.py), on the host's device (lavapipe here):
a loop of launches with the same buffers writes one set, results stay right, more binding lists than a
context keeps (pool reset) stay right, and any destroyed object drops the kept sets (a VkBuffer handle
may be reused after its buffer is destroyed)."""
import numpy as np
import pytest

import polykern as pk
from polykern import backends

import vulkan_kernels as K

RUNTIME_REASON = backends.runtime_reason("vulkan")
pytestmark = pytest.mark.skipif(bool(RUNTIME_REASON), reason=f"no Vulkan runtime here: {RUNTIME_REASON}")


@pytest.fixture(scope="module")
def saxpy():
    return pk.build([K.saxpy], targets=["vulkan"]).on("vulkan")["saxpy"]


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
