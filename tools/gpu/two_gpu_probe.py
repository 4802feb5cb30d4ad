"""Two CUDA GPUs in one process (docs/runtime.md "Several devices"): does a kernel on each run at once, and
how fast is a peer copy.

    python tools/gpu/two_gpu_probe.py [--rounds R] [--mib M]

(on a machine with two GPUs, PYTHONPATH as tools/gpu/run_gpu_suite.sh sets it). Prints each GPU's time for
one long kernel alone, the time for both at once (each on its own pk.Stream of its device), whether they
overlapped (both had started before either finished: host times at which each stream's events completed),
and the bandwidth of a ``DeviceArray.to`` copy between the two (cuMemcpyPeerAsync timed with events).
backends/cuda/tests/test_cuda_multidevice.py uses :func:`run_both` and :func:`overlapped`.
"""
from __future__ import annotations

import argparse
import time
from typing import List, Sequence, Tuple

import numpy as np

import polykern as pk

N = 1 << 22  # threads per launch: enough to fill an H200 several times over
BLOCK = 256


@pk.kernel
def spin(n: pk.i32, rounds: pk.i32, x: pk.Buffer[pk.f32]):
    """x[i] += 1 after ``rounds`` dependent multiplications (a launch that takes a while)."""
    i = pk.global_id(0)
    if i < n:
        acc = x[i]
        for _ in range(rounds):
            acc = acc * 1.0000001
        x[i] = acc - acc + x[i] + 1.0


def run_both(k, arrays: Sequence, streams: Sequence, rounds: int, n: int = N,
             block: int = BLOCK) -> Tuple[float, List[Tuple[float, float]]]:
    """Launch ``k(n, rounds, x)`` on each array x on its stream, then poll the streams' events: (host seconds
    until all finished, [(time its start event completed, time its end event completed)] per launch)."""
    t0 = time.perf_counter()
    marks = []
    for x, s in zip(arrays, streams):
        start = s.record()
        with s:
            k(n, rounds, x, grid=n // block, block=block)
        marks.append((start, s.record()))
    seen = [[None, None] for _ in marks]
    while any(e is None for pair in seen for e in pair):
        now = time.perf_counter() - t0
        for got, pair in zip(seen, marks):
            for j in (0, 1):
                if got[j] is None and pair[j].query():
                    got[j] = now
    return time.perf_counter() - t0, [(a, b) for a, b in seen]


def overlapped(spans: Sequence[Tuple[float, float]]) -> bool:
    """Every launch had started before any finished."""
    return max(s for s, _ in spans) < min(e for _, e in spans)


def peer_gbps(nbytes: int, src: str, dst: str, reps: int = 10) -> float:
    """GB/s of ``a.to(dst)`` for an ``nbytes`` array on ``src`` (queued on a stream of ``src``, timed with its
    events)."""
    a = pk.zeros(nbytes, np.uint8, device=src)
    s = pk.Stream(device=src)
    with s:
        a.to(dst)  # warm-up: allocation, first copy
    start = s.record()
    with s:
        for _ in range(reps):
            a.to(dst)
    ms = start.elapsed_ms(s.record())
    s.close()
    return nbytes * reps / (ms * 1e-3) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200000, help="multiplications per thread (kernel length)")
    ap.add_argument("--mib", type=int, default=64, help="size of the peer copy in MiB")
    args = ap.parse_args()
    from polykern_cuda import runtime as rt

    if rt.device_count() < 2:
        raise SystemExit(f"two_gpu_probe: needs two CUDA devices; this host has {rt.device_count()}")
    for line in rt.devices()[:2]:
        print(line)
    k = pk.build([spin], ["cuda"])["spin"]
    devs = ["cuda:0", "cuda:1"]
    xs = [pk.zeros(N, np.float32, device=d) for d in devs]
    streams = [pk.Stream(device=d) for d in devs]
    run_both(k, xs, streams, 1)  # warm-up: module load on each device
    for i, d in enumerate(devs):
        alone, _ = run_both(k, xs[i:i + 1], streams[i:i + 1], args.rounds)
        print(f"{d} alone:      {alone * 1e3:8.1f} ms")
    both, spans = run_both(k, xs, streams, args.rounds)
    spans_txt = ", ".join(f"{d} {a * 1e3:.1f}..{b * 1e3:.1f} ms" for d, (a, b) in zip(devs, spans))
    print(f"both at once:   {both * 1e3:8.1f} ms  (overlapped: {overlapped(spans)}; {spans_txt})")
    nbytes = args.mib << 20
    for src, dst in ((devs[0], devs[1]), (devs[1], devs[0])):
        print(f"peer copy {src} -> {dst}: {peer_gbps(nbytes, src, dst):7.1f} GB/s ({args.mib} MiB)")


if __name__ == "__main__":
    main()
