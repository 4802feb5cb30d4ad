"""Host memory of one kernel launched with many ``shared_size`` values (one pipeline per size on Vulkan
and WebGPU; at most ``polykern.runtime.lazy.PIPELINES_PER_KERNEL`` are kept, docs/correctness.md 5.7):

    python benchmarks/pipeline_rss.py TARGET [SIZES]     e.g. vulkan 400

Prints the resident set size (VmRSS, after gc and malloc_trim) every 200 sizes, relative to the
start (after 20 warm-up launches), and checks every launch's result.
"""
from __future__ import annotations

import ctypes
import gc
import os
import sys

import numpy as np

import polykern as pk

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from dynamic_shared_kernels import rev_tile  # noqa: E402  (tests/ holds the kernel)


def _rss_mib() -> float:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # not glibc
        pass
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def main() -> None:
    target, sizes = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 400
    k = pk.build([rev_tile], targets=[target])["rev_tile"]
    n = 64
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    for s in range(n, n + 20):
        k(n, x, y, grid=1, block=n, shared_size=s)
    start, steps = _rss_mib(), []
    for j, s in enumerate(range(100, 100 + sizes)):
        y[:] = 0
        k(n, x, y, grid=1, block=n, shared_size=s)
        assert (y == x[::-1]).all(), f"wrong result at shared_size={s}"
        if j % 200 == 199 or j == sizes - 1:
            steps.append(f"{j + 1}: {_rss_mib() - start:+.1f}")
    print(f"{target}: RSS {start:.1f} MiB at the start; MiB added after N sizes: {', '.join(steps)}")


if __name__ == "__main__":
    main()
