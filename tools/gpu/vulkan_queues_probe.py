"""Two pk.Streams on one Vulkan device (docs/runtime.md "Streams and events"): do their launches overlap, each
stream on its own VkQueue of the compute family?

    python tools/gpu/vulkan_queues_probe.py [--rounds R] [--target-ms T] [--groups G] [--repeats K]

(on the GPU machine, from the repository root with .whl/ and .gl/ carried: ``. tools/gpu/other_env.sh`` first,
for NVIDIA's Vulkan driver through the carried loaders; here, lavapipe. ``POLYKERN_VULKAN_QUEUES=1`` in front
puts both streams on one queue: the serialized baseline). Prints the device, its compute family's queueCount and how many
queues polykern uses (POLYKERN_VULKAN_QUEUES caps it, default 8), the queue of each stream, then one long
launch (G workgroups of 64 items, each ``rounds`` steps of a 32-bit LCG: a small grid that leaves the GPU
room for the other stream; ``rounds`` calibrated to about T ms unless given) on each stream alone and on
both at once (median of K), whether they overlapped (both at once < 1.5 x the faster alone, and both had
started before either finished: two_gpu_probe.overlapped), and whether every result is exact. Where the
streams share one queue (lavapipe: queueCount 1) no overlap is expected and it says so. Exit status 1 if a
result is wrong.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import polykern as pk
from two_gpu_probe import overlapped, run_both  # tools/gpu: this script's directory

BLOCK = 64
A, C = 1664525, 1013904223  # the LCG v -> A v + C (mod 2^32)
MASK = (1 << 32) - 1


@pk.kernel
def lcg(n: pk.i32, rounds: pk.i32, x: pk.Buffer[pk.u32]):
    """x[i] after ``rounds`` dependent multiply-adds (mod 2^32): a launch that takes a while."""
    i = pk.global_id(0)
    if i < n:
        v = x[i]
        for _ in range(rounds):
            v = v * 1664525 + 1013904223
        x[i] = v


def lcg_power(rounds: int):
    """(a, c) with lcg applied ``rounds`` times = v -> a v + c (mod 2^32): affine maps composed by squaring."""
    a, c = 1, 0  # the identity
    pa, pc = A, C  # the map applied 2^bit times
    while rounds:
        if rounds & 1:
            a, c = (pa * a) & MASK, (pa * c + pc) & MASK
        pa, pc = (pa * pa) & MASK, (pa * pc + pc) & MASK
        rounds >>= 1
    return a, c


def expected(start: np.ndarray, rounds: int, launches: int) -> np.ndarray:
    a, c = lcg_power(rounds)
    v = start.astype(np.uint64)
    for _ in range(launches):
        v = (np.uint64(a) * v + np.uint64(c)) & np.uint64(MASK)  # uint64 products wrap mod 2^64: low 32 bits exact
    return v.astype(np.uint32)


def timed(k, arrays, streams, rounds: int, n: int, repeats: int):
    """(median host seconds of ``repeats`` runs of one launch per stream at once, the spans of the median run)."""
    runs = [run_both(k, arrays, streams, rounds, n=n, block=BLOCK) for _ in range(repeats)]
    runs.sort(key=lambda r: r[0])
    return runs[len(runs) // 2]


def calibrate(k, x, s, n: int, target_s: float) -> int:
    """Rounds for which one launch takes about ``target_s`` (host time, one stream): grown 4x until a launch
    takes an eighth of it, then scaled to it (a few times: the launch's fixed cost makes that inexact)."""
    rounds, took = 1000, 0.0
    while rounds < 1 << 28:
        took, _ = run_both(k, [x], [s], rounds, n=n, block=BLOCK)
        if took >= target_s / 8:
            break
        rounds *= 4
    for _ in range(3):
        if 0.8 * target_s <= took <= 1.25 * target_s:
            break
        rounds = max(1, min(int(rounds * target_s / took), (1 << 31) - 1))
        took, _ = run_both(k, [x], [s], rounds, n=n, block=BLOCK)
    return rounds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=0, help="LCG steps per item (default: calibrated)")
    ap.add_argument("--target-ms", type=float, default=30.0, help="length of one launch when calibrating")
    ap.add_argument("--groups", type=int, default=32, help="workgroups (of 64 items) per launch")
    ap.add_argument("--repeats", type=int, default=5, help="runs per measurement (the median is shown)")
    args = ap.parse_args()
    from polykern_vulkan.runtime import device

    dev = device.get()
    print(f"device: {dev.description}")
    print(f"compute family {dev.family}: queueCount {dev.family_queue_count}; polykern uses {len(dev.queues)} "
          f"queue(s) (queue 0: the default stream)")
    k = pk.build([lcg], ["vulkan"]).on("vulkan")["lcg"]
    n = args.groups * BLOCK
    streams = [pk.Stream(device="vulkan"), pk.Stream(device="vulkan")]
    queues = [s._impl.queue for s in streams]
    for name, q in zip("AB", queues):
        print(f"stream {name}: queue {q.index} (family queue {q.family_index})")
    separate = queues[0].handle != queues[1].handle
    start = [np.arange(n, dtype=np.uint32) * np.uint32(2 + i) for i in range(2)]
    xs = [pk.to_device(v, device="vulkan") for v in start]
    run_both(k, xs, streams, 1, n=n, block=BLOCK)  # warm-up: pipeline creation, command buffers kept
    rounds = args.rounds or calibrate(k, xs[0], streams[0], n, args.target_ms * 1e-3)
    # the warm-up and the calibration changed the arrays: restart both from known values
    for x, v in zip(xs, start):
        x.copy_from_host(v)
    print(f"launch: {args.groups} workgroups x {BLOCK} items, {rounds} LCG steps each")
    alone = []
    for i, name in enumerate("AB"):
        took, _ = timed(k, xs[i:i + 1], streams[i:i + 1], rounds, n, args.repeats)
        alone.append(took)
        print(f"stream {name} alone:  {took * 1e3:8.1f} ms")
    both, spans = timed(k, xs, streams, rounds, n, args.repeats)
    single = min(alone)  # the conservative base: overlap is claimed only against the faster of the two
    fast_enough = both < 1.5 * single
    spans_txt = ", ".join(f"{name} {a * 1e3:.1f}..{b * 1e3:.1f} ms" for name, (a, b) in zip("AB", spans))
    print(f"both at once:    {both * 1e3:8.1f} ms  ({both / single:.2f} x the faster alone; spans: {spans_txt})")
    launches = 2 * args.repeats  # on each array: its runs alone, then the runs of both at once
    t0 = time.perf_counter()
    ok = all(np.array_equal(x.numpy(), expected(v, rounds, launches)) for x, v in zip(xs, start))
    print(f"results: {'exact' if ok else 'WRONG'} (checked in {time.perf_counter() - t0:.2f} s)")
    did = fast_enough and overlapped(spans)
    if separate:
        verdict = "overlapped" if did else "did NOT overlap (two queues, yet serialized: the driver or the GPU)"
    else:
        verdict = (f"{'overlapped?!' if did else 'no overlap'}: both streams share one queue (the family has "
                   f"{dev.family_queue_count}), none expected")
    print(f"verdict: {verdict} (both at once < 1.5 x alone: {fast_enough}; spans overlap: {overlapped(spans)})")
    for s in streams:
        s.close()
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
