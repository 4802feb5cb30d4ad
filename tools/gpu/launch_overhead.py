"""Host cost of one kernel launch with device arrays, per runtime present here (docs/runtime.md).

    python tools/gpu/launch_overhead.py [--launches N] [--runtimes vulkan,opencl,...]

(on the GPU machine with PYTHONPATH as tools/gpu/run_gpu_suite.sh sets it).

For each runtime: a tiny kernel (``y[i] += 1`` over 256 elements) on arrays that stay on the device,
warmed up, then ``N`` launches each timed on the host clock (``time.perf_counter_ns`` around the call:
what the caller pays, not the GPU time); the median and the 10th/90th percentiles are printed in
microseconds, and the result is checked after a synchronize. Where installed, CuPy (a RawKernel) and
Triton (a ``@triton.jit`` kernel) are timed the same way for comparison. One line per runtime; a
runtime that is absent or finds no device prints why.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import polykern as pk
from polykern import Buffer, i32

N = 256
DEVICES = {"llvm": "cpu", "cuda": "cuda", "opencl": "opencl", "vulkan": "vulkan", "webgpu": "webgpu"}


@pk.kernel
def bump(n: i32, y: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = y[i] + 1


def _time(launch, launches: int):
    for _ in range(20):
        launch()
    times = []
    for _ in range(launches):
        t0 = time.perf_counter_ns()
        launch()
        times.append(time.perf_counter_ns() - t0)
    times.sort()
    q = lambda f: times[min(len(times) - 1, int(f * len(times)))] / 1e3  # noqa: E731
    return statistics.median(times) / 1e3, q(0.1), q(0.9)


def _report(name: str, stats, note: str = "") -> None:
    med, lo, hi = stats
    print(f"{name:<12} median {med:8.1f} us   p10 {lo:8.1f}   p90 {hi:8.1f}{note}")


def polykern_runtime(target: str, launches: int) -> None:
    if target not in pk.backends.runnable_kinds():
        print(f"{target:<12} skipped: no {target} runtime or device here")
        return
    device = DEVICES[target]
    k = pk.build([bump], [target])["bump"]
    y = pk.zeros(N, np.int32, device=device)
    stats = _time(lambda: k(N, y, grid=N // 64, block=64), launches)
    pk.synchronize(device)
    got = y.numpy()
    expect = 20 + launches
    ok = "" if (got == expect).all() else f"   WRONG RESULT: {got[:4]} != {expect}"
    _report(target, stats, ok)


def cupy_raw(launches: int) -> None:
    try:
        import cupy as cp
    except ImportError:
        print("cupy         skipped: not installed")
        return
    k = cp.RawKernel(r'extern "C" __global__ void bump(int n, int* y) { int i = blockIdx.x * blockDim.x + '
                     r'threadIdx.x; if (i < n) y[i] += 1; }', "bump")
    y = cp.zeros(N, cp.int32)
    _report("cupy", _time(lambda: k((N // 64,), (64,), (np.int32(N), y)), launches))
    cp.cuda.get_current_stream().synchronize()


def triton_jit(launches: int) -> None:
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        print("triton       skipped: torch or triton not installed")
        return
    if not torch.cuda.is_available():
        print("triton       skipped: torch sees no CUDA device")
        return

    @triton.jit
    def tbump(y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=m) + 1, mask=m)

    y = torch.zeros(N, dtype=torch.int32, device="cuda")
    _report("triton", _time(lambda: tbump[(N // 64,)](y, N, BLOCK=64), launches))
    torch.cuda.synchronize()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launches", type=int, default=2000)
    p.add_argument("--runtimes", default=",".join(DEVICES))
    args = p.parse_args(argv)
    for target in args.runtimes.split(","):
        polykern_runtime(target.strip(), args.launches)
    cupy_raw(args.launches)
    triton_jit(args.launches)
    return 0


if __name__ == "__main__":
    sys.exit(main())
