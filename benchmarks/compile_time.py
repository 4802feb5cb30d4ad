"""Compile time per kernel per backend, cold (a fresh process: imports, backend loading, first build)
and warm (the same build repeated in-process). Vendor tools are timed separately where a backend
calls one (NVRTC/ptxas, ld.lld), so the figure polykern controls is visible.

    python benchmarks/compile_time.py [--json out.json] [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

COLD_SNIPPET = r"""
import sys, time, os
t0 = time.perf_counter()
sys.path.insert(0, {tests!r})
import polykern as pk
from conformance import ALL_CASES
case = [c for c in ALL_CASES if c.name == {case!r}][0]
pk.build(case.kernels, targets=[{target!r}])
print(time.perf_counter() - t0)
"""


def main():
    import polykern as pk
    from conformance import ALL_CASES
    from runtimes import all_target_kinds

    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cases", default="example_saxpy,example_matmul,example_prefix_sum,control_flow")
    args = ap.parse_args()
    wanted = args.cases.split(",")
    cases = [c for c in ALL_CASES if c.name in wanted]
    rows = []
    print(f"{'case':24} {'target':10} {'cold s':>8} {'warm ms':>9} {'per kernel ms':>14}")
    for case in cases:
        for kind in all_target_kinds():
            try:
                pk.build(case.kernels, targets=[kind])
            except pk.errors.PolykernError as e:
                print(f"{case.name:24} {kind:10} refused: {str(e).splitlines()[0][:60]}")
                continue
            warm = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                pk.build(case.kernels, targets=[kind])
                warm.append(time.perf_counter() - t0)
            out = subprocess.run([sys.executable, "-c", COLD_SNIPPET.format(
                tests=os.path.join(HERE, "..", "tests"), case=case.name, target=kind)],
                capture_output=True, text=True, check=True)
            cold = float(out.stdout.strip().splitlines()[-1])
            w = statistics.median(warm)
            row = {"case": case.name, "target": kind, "kernels": len(case.kernels), "cold_s": cold,
                   "warm_s": w, "warm_per_kernel_ms": 1e3 * w / len(case.kernels)}
            rows.append(row)
            print(f"{case.name:24} {kind:10} {cold:8.3f} {1e3 * w:9.2f} {row['warm_per_kernel_ms']:14.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "python": sys.version.split()[0]}, f, indent=1)


if __name__ == "__main__":
    main()
