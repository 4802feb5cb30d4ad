"""Asynchronous launches on the Vulkan runtime (runtime/streams.py, queues.py's timeline semaphores, kernel.py's
fast path), on the host's device (lavapipe here): a launch with only DeviceArrays submits and returns without
waiting, one with NumPy arrays waits and copies back; a repeated launch skips check_args and replays its
command buffer; the host waits for submitted work before it reads, writes or frees a DeviceArray; events
read the timeline and time with timestamp slots."""
import re

import numpy as np
import pytest

import polykern as pk
from polykern import backends
from polykern.testing import tier_skip


RUNTIME_REASON = backends.runtime_reason("vulkan")
pytestmark = tier_skip.skipif("lavapipe", RUNTIME_REASON, reason=f"no Vulkan runtime here: {RUNTIME_REASON}")
N = 1 << 12


@pytest.fixture
def dev():
    from polykern_vulkan.runtime import device

    d = device.get()
    if not d.timelines:
        pytest.skip(f"{d.name} has no timeline semaphores (Vulkan 1.1): every launch waits for its fence")
    return d


@pytest.fixture
def waits(dev, monkeypatch):
    """The timeline values of the default stream's queue (0) the host waited for."""
    seen = []
    real = dev.wait_for

    def spy(point, what="submitted work"):
        if 0 in point:
            seen.append(point[0])
        real(point, what)

    monkeypatch.setattr(dev, "wait_for", spy)
    return seen


def test_device_array_launches_return_without_waiting(saxpy, dev, waits):
    x = pk.to_device(np.ones(N, np.float32), device="vulkan")
    y = pk.zeros(N, np.float32, device="vulkan")
    q = dev.queues[0]  # the default stream's
    before = q.submitted
    saxpy(N, 2.0, x, y, grid=N // 64, block=64)
    saxpy(N, 2.0, x, y, grid=N // 64, block=64)
    assert q.submitted == before + 2 and not [v for v in waits if v > before]
    np.testing.assert_array_equal(y.numpy(), np.full(N, 4, np.float32))  # numpy() waited for both
    assert max(waits) == q.submitted and q.completed >= q.submitted


def test_host_array_launches_wait_and_copy_back(saxpy, dev, waits):
    x = pk.to_device(np.ones(N, np.float32), device="vulkan")
    y = np.zeros(N, np.float32)
    saxpy(N, 3.0, x, y, grid=N // 64, block=64)
    assert waits and waits[-1] == dev.queues[0].submitted
    np.testing.assert_array_equal(y, np.full(N, 3, np.float32))


def test_repeated_launch_takes_the_fast_path(saxpy, dev, monkeypatch):
    from polykern.runtime import staged_launch  # the full path's check_args (the staged launch)

    x = pk.to_device(np.ones(N, np.float32), device="vulkan")
    y = pk.zeros(N, np.float32, device="vulkan")
    saxpy(N, 1.0, x, y, grid=N // 64, block=64)  # the full path, remembered

    def refuse(*a, **k):
        raise AssertionError("the repeated launch went through check_args")

    monkeypatch.setattr(staged_launch, "check_args", refuse)
    replayed = dev.stats["launches_replayed"]
    for _ in range(10):
        saxpy(N, 1.0, x, y, grid=N // 64, block=64)
    assert dev.stats["launches_replayed"] >= replayed + 10
    np.testing.assert_array_equal(y.numpy(), np.full(N, 11, np.float32))
    monkeypatch.undo()
    # another scalar: not this test's remembered launch, so the result must use it (a launch an earlier test
    # recorded with the same pooled buffers and scalar may replay: that one computes the same)
    saxpy(N, 2.5, x, y, grid=N // 64, block=64)
    np.testing.assert_array_equal(y.numpy(), np.full(N, 13.5, np.float32))


def test_fast_path_follows_a_new_array_in_a_reused_buffer(saxpy, dev):
    x = pk.to_device(np.ones(N, np.float32), device="vulkan")
    y = pk.zeros(N, np.float32, device="vulkan")
    saxpy(N, 1.0, x, y, grid=N // 64, block=64)
    saxpy(N, 1.0, x, y, grid=N // 64, block=64)
    buf = y.buffer
    y.free()  # waits for the launches, then the pool may hand the buffer out again
    assert all(q.completed >= q.submitted for q in dev.queues)
    n2 = N - 64  # the same size class: the pool hands out the freed buffer
    y2 = pk.to_device(np.full(n2, 7, np.float32), device="vulkan")
    assert y2.buffer is buf
    saxpy(n2, 1.0, x, y2, grid=n2 // 64, block=64)  # another binding range: not the remembered launch
    saxpy(n2, 1.0, x, y2, grid=n2 // 64, block=64)
    np.testing.assert_array_equal(y2.numpy(), np.full(n2, 9, np.float32))


def test_events_read_the_timeline_and_time(saxpy, dev):
    x = pk.to_device(np.ones(N, np.float32), device="vulkan")
    y = pk.zeros(N, np.float32, device="vulkan")
    s = pk.Stream(device="vulkan")
    start = s.record()
    with s:
        saxpy(N, 1.0, x, y, grid=N // 64, block=64)
    end = s.record()
    q = s._impl.queue
    assert s._impl.last == end._impl.point[q.index] == q.submitted
    end.synchronize()
    assert end.query() and q.completed >= s._impl.last
    assert start.elapsed_ms(end) >= 0.0


def test_threads_launching_device_arrays_stay_right(saxpy, dev):
    """Four threads, each with its own arrays and stream, launch without waiting (contexts are shared and
    their kept command buffers resubmitted while pending); every result is exact."""
    import threading

    def work(i, out):
        x = pk.to_device(np.full(N, i + 1, np.float32), device="vulkan")
        y = pk.zeros(N, np.float32, device="vulkan")
        with pk.Stream(device="vulkan") as s:
            for _ in range(50):
                saxpy(N, 1.0, x, y, grid=N // 64, block=64)
        s.synchronize()
        out[i] = y.numpy()

    out = {}
    threads = [threading.Thread(target=work, args=(i, out)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        np.testing.assert_array_equal(out[i], np.full(N, 50 * (i + 1), np.float32))


FENCE_SCRIPT = """
import numpy as np
import polykern as pk
from polykern_vulkan.runtime import device
device.V12_FEATURES = tuple(f for f in device.V12_FEATURES if f != "timelineSemaphore")
import vulkan_kernels as K
dev = device.get()
assert not dev.timelines and len(dev.queues) == 1
k = pk.build([K.saxpy], targets=["vulkan"]).on("vulkan")["saxpy"]
x = pk.to_device(np.ones(256, np.float32), device="vulkan")
y = pk.zeros(256, np.float32, device="vulkan")
s = pk.Stream(device="vulkan")
with s:
    for _ in range(3):
        k(256, 2.0, x, y, grid=4, block=64)
e = s.record()
assert e.query()
s.synchronize()
pk.synchronize("vulkan")
assert (y.numpy() == 6).all()
h = np.zeros(256, np.float32)
k(256, 1.0, x, h, grid=4, block=64)
assert (h == 1).all()
print("fence path ok")
"""


def test_without_timeline_semaphores_every_submission_waits_for_its_fence(tmp_path):
    """A Vulkan 1.1 device (no timelineSemaphore; simulated by not asking for the feature): launches, streams
    and events still work, each submission waited for with its fence."""
    run_script(tmp_path, FENCE_SCRIPT, "fence path ok")


def run_script(tmp_path, text: str, ok: str, **env) -> None:
    """Run ``text`` in a new Python process (its own Vulkan device) with vulkan_kernels importable and ``env``
    added to the environment; it must exit 0 and print ``ok``."""
    import os
    import subprocess
    import sys

    (tmp_path / "script.py").write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__)] + [p for p in sys.path if p]),
               **env)
    r = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and ok in r.stdout, r.stdout + r.stderr


# ------------------------------------------------------------------ one queue per stream (runtime/queues.py)

def test_queue_plan_takes_the_familys_queues_up_to_the_cap():
    """The device asks for min(queueCount, cap) queues of its compute family (NVIDIA: 16 -> 8; lavapipe: 1)."""
    from polykern_vulkan.runtime.queues import MAX_QUEUES, lane_queues

    assert lane_queues(16, MAX_QUEUES) == list(range(8))
    assert lane_queues(4, 8) == [0, 1, 2, 3]
    assert lane_queues(1, 8) == [0]
    assert lane_queues(16, 1) == [0]


def test_streams_take_queues_1_to_n_in_turn_and_the_default_keeps_0():
    from polykern_vulkan.runtime.queues import stream_lane

    assert [stream_lane(8, k) for k in range(9)] == [1, 2, 3, 4, 5, 6, 7, 1, 2]
    assert [stream_lane(3, k) for k in range(4)] == [1, 2, 1, 2]
    assert [stream_lane(2, k) for k in range(3)] == [1, 1, 1]
    assert [stream_lane(1, k) for k in range(3)] == [0, 0, 0]  # one queue: every stream shares it


def test_queue_cap_comes_from_the_environment(monkeypatch):
    from polykern.errors import DeviceError
    from polykern_vulkan.runtime.queues import MAX_QUEUES, QUEUES_ENV, queue_cap

    monkeypatch.delenv(QUEUES_ENV, raising=False)
    assert queue_cap() == MAX_QUEUES
    monkeypatch.setenv(QUEUES_ENV, "3")
    assert queue_cap() == 3
    for bad in ("0", "two", "-1", "1_6", "+2", "2.0"):  # "1_6" was 16 queues: int() reads Python's digit separators
        monkeypatch.setenv(QUEUES_ENV, bad)
        with pytest.raises(DeviceError, match=re.escape(f"{QUEUES_ENV}={bad!r}: expected the number of Vulkan queues")):
            queue_cap()


def test_each_stream_gets_its_own_queue_where_the_family_has_several(saxpy, dev):
    """On a device whose compute family has more than one queue (NVIDIA), two streams submit to two VkQueues
    (neither the default stream's), and work ordered by wait_event across them is right."""
    if len(dev.queues) < 3:
        pytest.skip(f"{dev.name}: its compute family has {dev.family_queue_count} queue(s), {len(dev.queues)} used: "
                    "streams share them (queues.py)")
    s1, s2 = pk.Stream(device="vulkan"), pk.Stream(device="vulkan")
    q1, q2 = s1._impl.queue, s2._impl.queue
    assert len({dev.queues[0].family_index, q1.family_index, q2.family_index}) == 3
    x = pk.to_device(np.ones(N, np.float32), device="vulkan")
    y = pk.zeros(N, np.float32, device="vulkan")
    z = pk.zeros(N, np.float32, device="vulkan")
    with s1:
        for _ in range(50):
            saxpy(N, 1.0, x, y, grid=N // 64, block=64)
    s2.wait_event(s1.record())
    with s2:
        saxpy(N, 1.0, y, z, grid=N // 64, block=64)  # reads y: only right after s1's 50 launches
    s2.synchronize()
    np.testing.assert_array_equal(z.numpy(), np.full(N, 50, np.float32))


LANES_SCRIPT = """
import threading
import numpy as np
import polykern as pk
from polykern_vulkan.runtime import device
# three lanes (timeline semaphores, locks, waits) on lavapipe's one VkQueue: every cross-queue wait is real
device.lane_queues = lambda family_count, cap: [0, 0, 0]
import vulkan_kernels as K
dev = device.get()
q0, q1, q2 = dev.queues
assert len({id(q.lock) for q in dev.queues}) == 1 and len({q.semaphore for q in dev.queues}) == 3
k = pk.build([K.saxpy], targets=["vulkan"]).on("vulkan")["saxpy"]
N = 1024
s1, s2, s3 = (pk.Stream(device="vulkan") for _ in range(3))
assert [s._impl.queue for s in (s1, s2, s3)] == [q1, q2, q1]   # in turn over queues 1..; the default keeps 0
x = pk.to_device(np.ones(N, np.float32), device="vulkan")
y = pk.zeros(N, np.float32, device="vulkan")
z = pk.zeros(N, np.float32, device="vulkan")
w = pk.zeros(N, np.float32, device="vulkan")

k(N, 1.0, x, y, grid=N // 64, block=64)                 # the default stream, queue 0: recorded, kept
replayed = dev.stats["launches_replayed"]
with s1:
    k(N, 1.0, x, y, grid=N // 64, block=64)             # queue 1 waits for the default stream's work
assert q1.seen[0] == q0.submitted and q1.submitted == s1._impl.last
with s1:
    for _ in range(9):
        k(N, 1.0, x, y, grid=N // 64, block=64)
assert dev.stats["launches_replayed"] == replayed + 10  # queue 0's kept command buffer, replayed on queue 1
assert q1.submitted == s1._impl.last == 10
e = s1.record()
assert e._impl.point == {1: q1.submitted}
s2.wait_event(e)
assert s2._impl.waits == {1: q1.submitted}
waits = dev.stats["queue_waits"]
with s2:
    k(N, 1.0, y, z, grid=N // 64, block=64)             # queue 2 carries the wait for queue 1
assert s2._impl.waits == {} and q2.seen[1] == e._impl.point[1] and dev.stats["queue_waits"] == waits + 2
with s2:
    k(N, 1.0, x, y, grid=N // 64, block=64)
    replayed = dev.stats["launches_replayed"]
    k(N, 1.0, x, y, grid=N // 64, block=64)             # replayed on queue 2
assert dev.stats["launches_replayed"] == replayed + 1 and q2.submitted == s2._impl.last
s2.synchronize()
assert q2.completed >= s2._impl.last
np.testing.assert_array_equal(z.numpy(), np.full(N, 11, np.float32))  # z read y after s1's ten launches
k(N, 1.0, y, w, grid=N // 64, block=64)                 # the default stream waits for queues 1 and 2
assert q0.seen[1] == q1.submitted and q0.seen[2] == q2.submitted
with s3:
    k(N, 1.0, x, w, grid=N // 64, block=64)             # s3 (queue 1) after that default launch
np.testing.assert_array_equal(w.numpy(), np.full(N, 14, np.float32))   # numpy() waited for every queue
assert all(q.completed >= q.submitted for q in dev.queues)
np.testing.assert_array_equal(y.numpy(), np.full(N, 13, np.float32))

# threads, one stream each (queues 1, 2, 1, 2): every result exact; pk.synchronize waits for all queues
def work(i, out):
    a = pk.to_device(np.full(N, i + 1, np.float32), device="vulkan")
    b = pk.zeros(N, np.float32, device="vulkan")
    s = pk.Stream(device="vulkan")
    with s:
        for _ in range(20):
            k(N, 1.0, a, b, grid=N // 64, block=64)
    out[i] = (s, b)
out = {}
ts = [threading.Thread(target=work, args=(i, out)) for i in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
pk.synchronize("vulkan")
assert all(q.completed >= q.submitted for q in dev.queues)
for i, (s, b) in out.items():
    assert s._impl.queue in (q1, q2)
    np.testing.assert_array_equal(b.numpy(), np.full(N, 20 * (i + 1), np.float32))
# a launch on one stream never makes the host wait for another stream's work (a command context that is
# busy on another queue is not recorded into: the one that kept the launch, or one free of that queue)
host_waits = []
real_wait_for = dev.wait_for
def spy(point, what="submitted work"):
    host_waits.append({i: v for i, v in point.items() if v > dev.queues[i].completed})
    real_wait_for(point, what)
for a in (2.0, 3.0, 4.0):                                # new keys: recorded, not replayed
    with s1:
        k(N, a, x, y, grid=N // 64, block=64)
    dev.wait_for = spy
    with s2:
        k(N, a, x, z, grid=N // 64, block=64)
    with s2:
        k(N, a, x, z, grid=N // 64, block=64)            # kept by the launch before: replayed
    dev.wait_for = real_wait_for
    assert not [p for p in host_waits if 1 in p], host_waits
pk.synchronize("vulkan")
np.testing.assert_array_equal(z.numpy(), np.full(N, 11 + 18, np.float32))
t0, t1 = s1.record(), s2.record()
assert t0.elapsed_ms(t1) == t0.elapsed_ms(t1)   # timestamps of two queues: one clock, both waited for
print("lanes ok")
"""


def test_streams_on_separate_queues_keep_every_ordering(tmp_path, dev):
    """Three queues (lanes) that share lavapipe's one VkQueue, each with its own timeline semaphore: the
    default stream's legacy ordering, wait_event across queues, replays on another stream's queue, host
    reads and pk.synchronize waiting for every queue (a wrong semaphore wait would hang: 60 s timeout)."""
    run_script(tmp_path, LANES_SCRIPT, "lanes ok", POLYKERN_VULKAN_TIMEOUT_S="60")
