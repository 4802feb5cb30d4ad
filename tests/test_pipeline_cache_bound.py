"""Per-launch-shape caches are bounded: Vulkan and WebGPU keep one compute pipeline
per (block, shared_size), which grew forever (+50 MB of host memory per 400 shared sizes on lavapipe).
``polykern.runtime.lazy.BoundedLazyMap`` keeps at most ``PIPELINES_PER_KERNEL`` per kernel, least recently
used first out; Vulkan destroys an evicted pipeline once no launch uses it. Results stay right when
an evicted shape is launched again."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import polykern as pk
from polykern.runtime.lazy import PIPELINES_PER_KERNEL, BoundedLazyMap
from polykern.testing import tier_skip
from dynamic_shared_kernels import rev_tile
from runtimes import runnable_targets

_HAVE = {kind for _, kind, _ in runnable_targets()}


# ------------------------------------------------------------------ the map itself

def _counting(bound):
    made, disposed = [], []
    m = BoundedLazyMap(lambda k: made.append(k) or f"v{k}", bound, disposed.append)
    return m, made, disposed


def test_it_keeps_at_most_its_bound_least_recently_used_first_out():
    m, made, disposed = _counting(3)
    for k in (1, 2, 3):
        m.get(k)
    m.get(1)  # 1 is now the most recent: 2 goes first
    m.get(4)
    assert len(m) == 3 and disposed == ["v2"] and m.evictions == 1
    assert 1 in m and 2 not in m
    m.get(2)  # made again
    assert made == [1, 2, 3, 4, 2] and disposed == ["v2", "v3"]


def test_a_value_in_use_is_disposed_when_its_last_user_releases_it():
    m, _, disposed = _counting(1)
    value, lease = m.acquire("a")
    m.get("b")  # evicts "a", which a launch still uses
    assert disposed == [] and len(m) == 1
    m.release(lease)
    assert disposed == [value]


def test_an_abandoned_value_is_never_disposed_and_clear_disposes_the_rest():
    m, _, disposed = _counting(1)
    _, lease = m.acquire("a")
    m.abandon(lease)  # e.g. a launch that timed out after submission: the device may still use it
    m.get("b")
    m.get("c")
    assert disposed == ["vb"]
    m.clear()
    assert disposed == ["vb", "vc"] and len(m) == 0


def test_a_failed_creation_is_not_kept_and_is_retried():
    calls = []

    def factory(k):
        calls.append(k)
        if len(calls) == 1:
            raise RuntimeError("first attempt fails")
        return k
    m = BoundedLazyMap(factory, 2)
    with pytest.raises(RuntimeError):
        m.get("x")
    assert m.get("x") == "x" and calls == ["x", "x"]


def test_many_threads_share_one_value_per_key():
    m, made, _ = _counting(8)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: [m.get(k % 4) for k in range(200)], range(8)))
    assert sorted(made) == [0, 1, 2, 3]


# ------------------------------------------------------------------ on the runtimes

_N = 64


def _launch_sizes(k, sizes):
    x = np.arange(_N, dtype=np.float32)
    for s in sizes:
        y = np.zeros(_N, np.float32)
        k(_N, x, y, grid=1, block=_N, shared_size=s)
        np.testing.assert_array_equal(y, x[::-1], err_msg=f"shared_size={s}")


@tier_skip.skipif("lavapipe", "vulkan" not in _HAVE, reason="no Vulkan runtime here")
def test_vulkan_keeps_a_bounded_number_of_live_pipelines():
    root = pk.build([rev_tile], targets=["vulkan"])
    k = root["rev_tile"]
    mod = root.on("vulkan")
    dev = mod.device
    before = dict(dev.stats)
    sizes = list(range(_N, _N + PIPELINES_PER_KERNEL + 24))
    _launch_sizes(k, sizes)
    program = mod._programs.get("rev_tile")
    created = dev.stats["pipelines_created"] - before.get("pipelines_created", 0)
    destroyed = dev.stats["pipelines_destroyed"] - before.get("pipelines_destroyed", 0)
    assert created == len(sizes)
    assert len(program.pipelines) == PIPELINES_PER_KERNEL  # was: one per size, forever
    assert created - destroyed == PIPELINES_PER_KERNEL  # the evicted ones were destroyed, not only forgotten
    _launch_sizes(k, sizes[:8])  # evicted shapes: made again, right results
    assert dev.stats["pipelines_created"] - before.get("pipelines_created", 0) == len(sizes) + 8
    _launch_sizes(k, sizes[-8:])  # still cached
    assert dev.stats["pipelines_created"] - before.get("pipelines_created", 0) == len(sizes) + 8


@tier_skip.skipif("wgpu", "webgpu" not in _HAVE, reason="no WebGPU runtime here")
def test_webgpu_keeps_a_bounded_number_of_pipelines():
    root = pk.build([rev_tile], targets=["webgpu"])
    k = root["rev_tile"]
    mod = root.on("webgpu")
    sizes = list(range(_N, _N + PIPELINES_PER_KERNEL + 24))
    _launch_sizes(k, sizes)
    assert mod.pipelines_built == len(sizes)
    assert len(mod._pipelines.get("rev_tile")) == PIPELINES_PER_KERNEL  # was: one per size, forever
    _launch_sizes(k, sizes[:8])  # evicted shapes: made again, right results
    assert mod.pipelines_built == len(sizes) + 8


@tier_skip.skipif("lavapipe", "vulkan" not in _HAVE, reason="no Vulkan runtime here")
def test_vulkan_evicts_safely_while_other_threads_launch(monkeypatch):
    from polykern_vulkan.runtime import program as vulkan_program
    monkeypatch.setattr(vulkan_program, "PIPELINES_PER_KERNEL", 2)  # evictions on nearly every launch
    root = pk.build([rev_tile], targets=["vulkan"])
    k = root["rev_tile"]
    with ThreadPoolExecutor(4) as pool:  # a failed launch re-raises here
        list(pool.map(lambda t: _launch_sizes(k, [_N + (t + j) % 6 for j in range(12)]), range(4)))
    program = root.on("vulkan")._programs.get("rev_tile")
    assert len(program.pipelines) == 2 and program.pipelines.evictions > 0
