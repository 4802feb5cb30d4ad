"""PNG figures from a results.json of run.py; every figure is a ratio against a reference measured
in the same run (the reference is named on the axis).

    python benchmarks/plots.py OUT_DIR        (reads OUT_DIR/results.json)
"""
from __future__ import annotations

import json
import os
import sys
from typing import Dict, List, Optional

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BUDGET_S = 0.050  # compile time budget per kernel per backend


def _bars(ax, groups: List[str], series: Dict[str, List[Optional[float]]], ylabel: str, log: bool = False,
          line: Optional[float] = None, line_label: str = ""):
    n = max(1, len(series))
    width = 0.8 / n
    for k, (label, vals) in enumerate(series.items()):
        xs = [i + (k - (n - 1) / 2) * width for i in range(len(groups))]
        ys = [v if v is not None else 0 for v in vals]
        bars = ax.bar(xs, ys, width, label=label)
        for b, v in zip(bars, vals):
            if v is not None:
                ax.annotate(f"{v:.2g}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                            fontsize=6, rotation=90)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    if line is not None:
        ax.axhline(line, color="k", lw=0.8, ls="--", label=line_label or None)
    ax.legend(fontsize=7)


def _row(rows, tool, kernel, target=None):
    for r in rows:
        if r.get("tool") == tool and r.get("kernel") == kernel and (target is None or r.get("target") == target):
            if "error" not in r:
                return r
    return None


def _ratio(a, b, key):
    if a is None or b is None or not a.get(key) or not b.get(key):
        return None
    return a[key] / b[key]


PAIRS = [("tvm", None, "llvm", "TVM llvm / polykern llvm"), ("numba", None, "llvm", "Numba / polykern llvm"),
         ("triton", None, "nvptx -arch=sm_90", "Triton sm_90 / polykern nvptx"),
         ("triton", None, "cuda -arch=sm_90", "Triton sm_90 / polykern cuda")]


def compile_figures(res: dict, out: str) -> List[str]:
    ct = res.get("compile")
    if not ct:
        return []
    rows, kernels = ct["rows"], ct["kernels"]
    written = []
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    for ax, key, title in ((axes[0], "warm_cpu_s", "warm (in-process) compile, CPU time"),
                           (axes[1], "cold_s", "cold process: first compile after import")):
        series = {}
        for tool, _, target, label in PAIRS:
            series[label] = [_ratio(_row(rows, tool, k), _row(rows, "polykern", k, target), key) for k in kernels]
        series = {k: v for k, v in series.items() if any(x is not None for x in v)}
        _bars(ax, kernels, series, "peer time / polykern time (>1: polykern faster)", log=True, line=1.0)
        ax.set_title(title, fontsize=9)
    targets = ct["targets"]
    series = {t: [(_row(rows, "polykern", k, t) or {}).get("warm_cpu_s") for k in kernels] for t in targets}
    series = {t: [None if v is None else v / BUDGET_S for v in vals] for t, vals in series.items()
              if any(v is not None for v in vals)}
    _bars(axes[2], kernels, series, "polykern warm compile CPU time / 50 ms budget", log=True, line=1.0,
          line_label="budget")
    axes[2].set_title("polykern per backend (vendor tools excluded)", fontsize=9)
    fig.tight_layout()
    path = os.path.join(out, "compile_time.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    size_pairs = [("tvm", "llvm", "TVM .so / polykern llvm .kbin"), ("numba", "llvm", "Numba cache / polykern llvm .kbin"),
                  ("triton", "nvptx -arch=sm_90", "Triton cubin / polykern nvptx .kbin"),
                  ("triton", "cuda -arch=sm_90", "Triton cubin / polykern cuda .kbin")]
    series = {}
    for tool, target, label in size_pairs:
        vals = []
        for k in kernels:
            peer, pk_ = _row(rows, tool, k), _row(rows, "polykern", k, target)
            vals.append(peer["bytes"] / pk_["bytes_stripped"] if peer and pk_ and peer.get("bytes") else None)
        if any(v is not None for v in vals):
            series[label] = vals
    _bars(axes[0], kernels, series, "peer bytes / polykern bytes (sources stripped)", log=True, line=1.0)
    axes[0].set_title("artifact size", fontsize=9)
    load_pairs = [("tvm", "load_s", "load_s", "TVM load_module / polykern load+link (in-process)"),
                  ("numba", "cold_load_s", "cold_load_s", "Numba cache load / polykern load+link (fresh process)")]
    series = {}
    for tool, pkey, key, label in load_pairs:
        vals = []
        for k in kernels:
            peer, pk_ = _row(rows, tool, k), _row(rows, "polykern", k, "llvm")
            vals.append(peer[pkey] / pk_[key] if peer and pk_ and peer.get(pkey) and pk_.get(key) else None)
        if any(v is not None for v in vals):
            series[label] = vals
    _bars(axes[1], kernels, series, "peer load time / polykern load time", log=True, line=1.0)
    axes[1].set_title("load time (CPU artifacts)", fontsize=9)
    fig.tight_layout()
    path = os.path.join(out, "artifact_size_load.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)
    return written


def cpu_figures(res: dict, out: str) -> List[str]:
    cpu = res.get("cpu")
    if not cpu:
        return []
    rows = cpu["rows"]
    kernels = [r["kernel"] for r in rows]
    who = [w for w in ("polykern", "polykern-native", "numba") if any(w in r["seconds"] for r in rows)]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    _bars(axes[0], kernels, {w: [r["speedup_vs_numpy"].get(w) for r in rows] for w in who},
          "NumPy time / time (>1: faster than NumPy)", log=True, line=1.0)
    axes[0].set_title("CPU kernel time vs NumPy (same run)", fontsize=9)
    mem = [r for r in rows if r.get("fraction_of_copy_bandwidth")]
    _bars(axes[1], [r["kernel"] for r in mem],
          {w: [r["fraction_of_copy_bandwidth"].get(w) for r in mem] for w in who + ["numpy"]},
          "bytes/s / np.copyto bytes/s", line=0.7, line_label="70% target (elementwise)")
    axes[1].set_title("memory-bound kernels: fraction of copy bandwidth", fontsize=9)
    lo = cpu.get("launch_overhead") or {}
    if lo.get("polykern"):
        names = [k for k in lo if k != "polykern"]
        _bars(axes[2], ["tiny launch"], {k: [lo["polykern"] / lo[k]] for k in names},
              "polykern time per call / peer time per call", log=True, line=1.0)
        axes[2].set_title(f"launch overhead (polykern {lo['polykern'] * 1e6:.1f} us/call)", fontsize=9)
    fig.tight_layout()
    path = os.path.join(out, "cpu_kernels.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]


def all_figures(out: str) -> List[str]:
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    return compile_figures(res, out) + cpu_figures(res, out)


if __name__ == "__main__":
    for p in all_figures(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out")):
        print(p)
