"""This tree against a git revision of it (default HEAD), on the CPU backend: warm compile time
per kernel (CPU time), kernel time (the four benchmark kernels at full size) and launch overhead.
The baseline is extracted with ``git archive`` (read-only) into a temporary directory; both trees
are measured in alternating fresh processes (only the llvm backend loaded), medians.

    python benchmarks/before_after.py [--rev HEAD] [--rounds 3] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORKER = r"""
import json, os, sys, time
os.environ["POLYKERN_BACKEND_AUTOLOAD"] = "0"
tree, bench = sys.argv[1], sys.argv[2]
sys.path[:0] = [os.path.join(tree, "python"), os.path.join(tree, "backends", "llvm"), os.path.join(bench, "..", "examples")]
# an editable install maps 'polykern' to the working tree through a meta path finder: drop it
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()
                    and "editable" not in getattr(f, "__name__", "").lower()]
import numpy as np
import polykern as pk
import polykern_llvm
assert pk.__file__.startswith(tree) and polykern_llvm.__file__.startswith(tree), (pk.__file__, tree)
polykern_llvm.register_backend()
sys.path.insert(0, bench)
from kernels import PROBLEMS
from common import check_output, interleaved, median, write_output
out = {"compile_cpu_s": {}, "run_s": {}}
for p in PROBLEMS:
    pk.build([p.kernel], targets=["llvm"])
    ts = []
    for _ in range(5):
        t0 = time.thread_time(); k = pk.build([p.kernel], targets=["llvm"])[p.kernel.name]; ts.append(time.thread_time() - t0)
    out["compile_cpu_s"][p.name] = sorted(ts)[2]
    d = p.make(np.random.default_rng(0), False)
    out["run_s"][p.name] = median(interleaved({"k": lambda: p.launch(k, d)}, 7, 2)["k"])
from saxpy import saxpy
k = pk.build([saxpy], targets=["llvm"])["saxpy"]
x = np.ones(256, np.float32); y = np.ones(256, np.float32)
out["launch_s"] = median(interleaved({"k": lambda: k(256, 2.0, x, y, grid=1, block=256)}, 9, 50, 0.05)["k"])
print(json.dumps(out))
"""


def measure(tree: str) -> dict:
    r = subprocess.run([sys.executable, "-c", WORKER, tree, HERE], capture_output=True, text=True, timeout=1800)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.json:
        check_output(args.json)
    tmp = tempfile.mkdtemp(prefix="pk-baseline-")
    try:
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.rev, "python", "backends/llvm"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        runs = {"baseline": [], "current": []}
        for _ in range(args.rounds):
            runs["baseline"].append(measure(tmp))
            runs["current"].append(measure(ROOT))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {}
    for who, rs in runs.items():
        med[who] = {sec: {k: statistics.median(r[sec][k] for r in rs) for k in rs[0][sec]}
                    for sec in ("compile_cpu_s", "run_s")}
        med[who]["launch_s"] = statistics.median(r["launch_s"] for r in rs)
    b, c = med["baseline"], med["current"]
    print(f"{'':12} {'compile ms (base -> now)':>28} {'kernel ms (base -> now)':>28}")
    for k in b["run_s"]:
        print(f"{k:12} {b['compile_cpu_s'][k] * 1e3:12.1f} -> {c['compile_cpu_s'][k] * 1e3:8.1f}   "
              f"{b['run_s'][k] * 1e3:12.2f} -> {c['run_s'][k] * 1e3:8.2f}  ({b['run_s'][k] / c['run_s'][k]:.1f}x)")
    print(f"launch overhead: {b['launch_s'] * 1e6:.1f} us -> {c['launch_s'] * 1e6:.1f} us")
    if args.json:
        write_output(args.json, json.dumps({"rev": args.rev, "median": med, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
