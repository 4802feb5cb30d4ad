"""CPU row softmax with and without fast math (docs/language.md 7.2 "Fast math"): tuned_kernels.
softmax_row_loops (one work-item per row; ``pk.exp2`` in the loop that also sums, which LLVM cannot
vectorize without reassociating the sum) and :func:`softmax_row_passes` below (the same with the exp in
a loop of its own, which the fast exp lets LLVM vectorize), built for ``llvm`` and ``llvm -mcpu=native``
with ``pk.build(..., fast_math=True)`` and without, each checked against NumPy in float64, then timed in
interleaved rounds. The host's load average is logged before and after: on a shared host the figures
move with it.

    python benchmarks/cpu_fast_math.py [--rows 2048] [--cols 2048] [--repeat 9] [--json out.json]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32

from common import check_output, interleaved, log, machine, median, write_output

LOG2E = 1.4426950408889634


@pk.kernel
def softmax_row_passes(nrows: i32, ncols: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    """tuned_kernels.softmax_row_loops with the exp in a loop of its own (no sum in it)."""
    r = pk.global_id(0)
    if r < nrows:
        base = r * ncols
        m = x[base]
        for j in range(1, ncols):
            m = pk.max(m, x[base + j])
        for j in range(ncols):
            out[base + j] = pk.exp2((x[base + j] - m) * LOG2E)
        s = 0.0
        for j in range(ncols):
            s += out[base + j]
        inv = 1.0 / s
        for j in range(ncols):
            out[base + j] = out[base + j] * inv


def run(rows: int, cols: int, repeat: int) -> dict:
    import tuned_kernels as tk

    x = np.random.default_rng(3).standard_normal((rows, cols)).astype(np.float32) * 4
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    want = (e / e.sum(axis=1, keepdims=True)).reshape(-1)
    flat = x.reshape(-1)
    fns, err = {}, {}
    builds = [(kernel, target, fast) for kernel in (tk.softmax_row_loops, softmax_row_passes)
              for target in ("llvm", "llvm -mcpu=native") for fast in (False, True)]
    for kernel, target, fast in builds:
        k = pk.build([kernel], [target], fast_math=fast)[kernel.name]
        out = np.zeros(rows * cols, np.float32)
        label = f"{kernel.name} {target}{' fast_math' if fast else ''}"
        fns[label] = lambda k=k, out=out: k(rows, cols, flat, out, grid=-(-rows // 64), block=64)
        fns[label]()
        err[label] = float(np.max(np.abs(out - want) / want))
        if err[label] > (cols + 8) * 2.0 ** -24:  # an f32 sum of cols terms, plus the exp2 and the scaling
            raise SystemExit(f"{label}: relative error {err[label]:.3g} against NumPy in float64")
    load_before = os.getloadavg()
    times = interleaved(fns, repeat, warmup=2)
    load_after = os.getloadavg()
    rows_out = [{"build": k, "median_ms": median(v) * 1e3, "min_ms": min(v) * 1e3, "max_rel_err": err[k]}
                for k, v in times.items()]
    return {"machine": machine(), "rows": rows, "cols": cols, "repeat": repeat,
            "loadavg_before": load_before, "loadavg_after": load_after, "results": rows_out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if a.json:
        check_output(a.json)
    res = run(a.rows, a.cols, a.repeat)
    log(f"load average {res['loadavg_before']} before, {res['loadavg_after']} after; {os.cpu_count()} CPUs")
    base = {r["build"]: r["median_ms"] for r in res["results"]}
    for r in res["results"]:
        plain = base[r["build"].replace(" fast_math", "")]
        log(f"{r['build']:50} {r['median_ms']:8.2f} ms (min {r['min_ms']:.2f})  x{plain / r['median_ms']:.2f} "
            f"of the default build  max rel err {r['max_rel_err']:.2g}")
    if a.json:
        write_output(a.json, res)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
