"""Host and device time of the row kernels' launches (benchmarks/tuned_kernels.py layernorm_rows and softmax_rows at
4096 x 4096 f32, built for cuda -arch=sm_90), run ON the GPU machine with CuPy, in the environment
tools/gpu/run_gpu_hopper.sh sets: whether each launch takes the fast path, the host microseconds per launch of
back-to-back calls, the GPU time per kernel (CUDA events around one launch, after warm-up), and the top of a cProfile
of the launches. Where host time per launch exceeds GPU time, a benchmark of back-to-back calls measures the host.

    python3 tools/gpu/row_launch_probe.py
"""
from __future__ import annotations

import cProfile
import io
import os
import pstats
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "benchmarks")]


def main() -> int:
    import cupy as cp
    import numpy as np

    import common  # noqa: F401  (paths)
    import polykern as pk
    import tuned_problems as tp

    r = c = 4096
    x = cp.asarray(np.random.default_rng(0).standard_normal((r, c), dtype=np.float32))
    w, b = cp.ones(c, cp.float32), cp.zeros(c, cp.float32)
    y, mean, rstd = cp.empty(r * c, cp.float32), cp.empty(r, cp.float32), cp.empty(r, cp.float32)
    cases = {}
    k_ln = tp._layernorm_kernel((r, c))
    k_sm = tp._softmax_kernel((r, c))
    mod = pk.build([k_ln, k_sm], "cuda -arch=sm_90")
    dev = mod.on("cuda")
    for name, kern, args in (("layernorm", k_ln, (c, tp.LN_EPS, x, w, b, y, mean, rstd)),
                             ("softmax", k_sm, (c, x, y))):
        block = tp.ROW_VARIANTS[""]
        launch = mod[kern.name]
        raw = dev._get_function(dev.function_info(kern.name))
        launch(*args, grid=r, block=block)
        fast = raw._fast(args, r, block)
        cp.cuda.runtime.deviceSynchronize()
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            launch(*args, grid=r, block=block)
        host_us = (time.perf_counter() - t0) / n * 1e6
        cp.cuda.runtime.deviceSynchronize()
        s, e = cp.cuda.Event(), cp.cuda.Event()
        times = []
        for _ in range(20):
            s.record()
            launch(*args, grid=r, block=block)
            e.record()
            e.synchronize()
            times.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
        gpu_us = sorted(times)[len(times) // 2]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(500):
            launch(*args, grid=r, block=block)
        prof.disable()
        cp.cuda.runtime.deviceSynchronize()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
        cases[name] = (fast, host_us, gpu_us)
        print(f"{name}: fast path {fast}; host {host_us:.1f} us per launch (back to back); GPU {gpu_us:.1f} us per "
              "launch (events around one)")
        print("\n".join(out.getvalue().splitlines()[:30]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
