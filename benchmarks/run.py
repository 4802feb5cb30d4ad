"""polykern against its peers, in one command: compile time (cold and warm), artifact size and
load time against TVM, Numba and Triton; CPU kernel time against NumPy and Numba, memory-bound
kernels as a fraction of copy bandwidth, launch overhead. Writes OUT/results.json, OUT/summary.md
and PNG figures (every figure a ratio against a reference measured in the same run).

    python benchmarks/run.py --out benchmarks/out [--quick] [--sections compile,cpu]

GPU figures come from benchmarks/gpu.py, run on a GPU host.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from common import HERE, log, machine, output_folder, versions, write_output


def _fmt(v, scale=1e3, digits=1):
    return "—" if v is None else f"{v * scale:.{digits}f}"


def summary(res: dict) -> str:
    """Markdown tables of the headline numbers (docs/performance.md quotes them)."""
    m = res["machine"]
    lines = [f"Machine: {m.get('cpu', '?')} ({m.get('cpus')} CPUs, LLVM host CPU {m.get('llvm_host_cpu')}), "
             f"Python {m.get('python')}, load average at start {m.get('loadavg_start', '?')}; {m.get('date')}, "
             f"git {m.get('git', '?')}.", ""]
    lines.append("Versions: " + ", ".join(f"{k} {v}" for k, v in res.get("versions", {}).items() if v) + ".")
    ct = res.get("compile")
    if ct:
        rows = ct["rows"]
        lines += ["", "### Compile time (ms): warm = in-process median, CPU time of the compiling thread; "
                      "cold = first build in a fresh process after import (wall)", "",
                  "| kernel | backend | warm CPU | warm wall | tools (subprocess CPU) | cold | cold import (+ plugin "
                  "discovery) | .kbin bytes (stripped) | load+link |", "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            if r.get("tool") != "polykern":
                continue
            if "error" in r:
                lines.append(f"| {r['kernel']} | {r['target']} | refused: {r['error'][:60]} | | | | | | |")
                continue
            lines.append(f"| {r['kernel']} | {r['target']} | {_fmt(r.get('warm_cpu_s'))} | {_fmt(r.get('warm_s'))} | "
                         f"{_fmt(r.get('child_cpu_s'))} | {_fmt(r.get('cold_s'))} | {_fmt(r.get('cold_import_s'), 1, 2)} s"
                         f" (+{_fmt(r.get('cold_discover_s'), 1, 2)} s) | {r.get('bytes')} ({r.get('bytes_stripped')}) | "
                         f"{_fmt(r.get('load_s'), 1e3, 2)} |")
        lines += ["", "### Peers (ms; bytes)", "",
                  "| kernel | peer | warm CPU | warm wall | tools | cold | cold import | artifact bytes | load |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            if r.get("tool") == "polykern":
                continue
            if "error" in r:
                lines.append(f"| {r.get('kernel', '')} | {r['tool']} | error: {r['error'][:80]} | | | | | | |")
                continue
            load = r.get("load_s") or r.get("cold_load_s")
            lines.append(f"| {r['kernel']} | {r['tool']} ({r['target']}) | {_fmt(r.get('warm_cpu_s'))} | "
                         f"{_fmt(r.get('warm_s'))} | {_fmt(r.get('child_cpu_s'))} | {_fmt(r.get('cold_s'))} | "
                         f"{_fmt(r.get('cold_import_s'), 1, 2)} s | {r.get('bytes')} | {_fmt(load, 1e3, 2)} |")
    cpu = res.get("cpu")
    if cpu:
        lines += ["", "### CPU kernels (ms, medians of interleaved runs; speed-up = NumPy time / time)", "",
                  "| kernel | NumPy | polykern (generic) | polykern -mcpu=native | Numba parallel | "
                  "polykern vs NumPy | polykern vs Numba | of np.copyto bw | of parallel copy bw |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in cpu["rows"]:
            s = r["seconds"]
            fr = r.get("fraction_of_copy_bandwidth", {})
            fp = r.get("fraction_of_parallel_copy_bandwidth", {})
            lines.append(
                f"| {r['kernel']} | {_fmt(s.get('numpy'), 1e3, 2)} | {_fmt(s.get('polykern'), 1e3, 2)} | "
                f"{_fmt(s.get('polykern-native'), 1e3, 2)} | {_fmt(s.get('numba'), 1e3, 2)} | "
                f"{r['speedup_vs_numpy'].get('polykern', 0):.2f}x | "
                f"{r.get('speedup_vs_numba', {}).get('polykern', float('nan')):.2f}x | "
                + (f"{fr.get('polykern', 0):.2f} (native {fr.get('polykern-native', 0):.2f}, Numba "
                   f"{fr.get('numba', 0):.2f}, NumPy {fr.get('numpy', 0):.2f})" if fr else "—") + " | "
                + (f"{fp.get('polykern', 0):.2f}" if fp else "—") + " |")
        lo = cpu.get("launch_overhead", {})
        if lo:
            lines += ["", "Launch overhead per call (one 256-element group): "
                      + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in lo.items()) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats, no cold processes")
    ap.add_argument("--sections", default="compile,cpu")
    ap.add_argument("--repeat", type=int, default=0, help="override the repeat counts")
    args = ap.parse_args(argv)
    output_folder(args.out)
    sections = set(args.sections.split(","))
    res = {"machine": machine(), "versions": versions("polykern", "numpy", "llvmlite", "numba", "tvm", "matplotlib"),
           "command": " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:])}
    t0 = time.perf_counter()
    if "compile" in sections:
        import compile_time

        res["compile"] = compile_time.run(args.quick, args.repeat or (2 if args.quick else 5), not args.quick)
    if "cpu" in sections:
        import cpu

        res["cpu"] = cpu.run(args.quick, args.repeat or (5 if args.quick else 21))
    res["seconds"] = time.perf_counter() - t0
    try:
        import subprocess

        res["versions"]["triton"] = subprocess.run(
            [sys.executable, "-c", "import triton; print(triton.__version__)"], capture_output=True, text=True,
            timeout=120).stdout.strip() or None
    except Exception:  # noqa: BLE001
        pass
    write_output(os.path.join(args.out, "results.json"), json.dumps(res, indent=1))
    write_output(os.path.join(args.out, "summary.md"), summary(res))
    import plots

    for p in plots.all_figures(args.out):
        log(f"wrote {p}")
    log(f"wrote {os.path.join(args.out, 'results.json')} and summary.md in {res['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
