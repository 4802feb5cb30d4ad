"""CPU kernel time: polykern (``llvm`` target, default ``-mcpu=generic``, and ``-mcpu=native``)
against NumPy and Numba (``parallel=True``, ``prange``) on the four benchmark kernels, plus
memory-bound kernels as a fraction of the copy bandwidth (``np.copyto`` on large arrays)
measured in the same run, and launch overhead per call on a tiny launch.

    python benchmarks/cpu.py [--quick] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from common import interleaved, log, machine, median, versions
from kernels import PROBLEMS

TARGETS = {"polykern": "llvm", "polykern-native": "llvm -mcpu=native"}


def run(quick: bool = False, repeat: int = 15, with_numba: bool = True, problems=None) -> dict:
    import polykern as pk

    rng = np.random.default_rng(0)
    rows = []
    for p in PROBLEMS:
        if problems and p.name not in problems:
            continue
        d = p.make(rng, quick)
        fns = {"numpy": lambda d=d, p=p: p.numpy(d)}
        for label, target in TARGETS.items():
            k = pk.build([p.kernel], targets=[target])[p.kernel.name]
            chk = dict(p.make(np.random.default_rng(1), True), _k=k)
            p.check(chk)  # correct before timed
            fns[label] = lambda k=k, d=d, p=p: p.launch(k, d)
        if with_numba:
            try:
                import peers_numba

                disp, _ = peers_numba.compiled(p.name, d)
                args = peers_numba.ARGS[p.name](d)
                fns["numba"] = lambda disp=disp, args=args: disp(*args)
            except ImportError as e:
                log(f"numba not available: {e}")
        copies = _copies(d, with_numba, quick)
        fns.update(copies)
        times = interleaved(fns, repeat, warmup=2, min_time=0.02)
        med = {k: median(v) for k, v in times.items()}
        nbytes = p.nbytes(d)
        src, _ = d["_copy"]
        bw = {k: 2 * src.nbytes / med[k] for k in copies}
        runs = {k: v for k, v in med.items() if k not in copies}
        row = {"kernel": p.name, "memory_bound": p.memory_bound, "bytes": nbytes, "seconds": med,
               "speedup_vs_numpy": {k: med["numpy"] / v for k, v in runs.items()},
               "copy_bandwidth_GBps": {k: v / 1e9 for k, v in bw.items()}}
        if "numba" in med:
            row["speedup_vs_numba"] = {k: med["numba"] / v for k, v in runs.items()}
        if p.memory_bound:
            row["fraction_of_copy_bandwidth"] = {k: nbytes / v / bw["copy"] for k, v in runs.items()}
            if "copy-parallel" in bw:
                row["fraction_of_parallel_copy_bandwidth"] = {k: nbytes / v / bw["copy-parallel"]
                                                              for k, v in runs.items()}
        rows.append(row)
        log(f"cpu {p.name:10} " + "  ".join(f"{k} {v * 1e3:8.3f}ms" for k, v in med.items())
            + ("  | of np.copyto bw: " + " ".join(f"{k} {v:.2f}" for k, v in row["fraction_of_copy_bandwidth"].items())
               if p.memory_bound else ""))
    return {"rows": rows, "launch_overhead": launch_overhead(repeat)}


def _copies(d, with_numba: bool, quick: bool = False):
    """Same-run bandwidth references: ``np.copyto`` (one thread, the reference the targets use)
    and, with Numba, a ``prange`` copy on every core, of 256 MiB (far beyond the caches; quick: of
    the kernel's largest array)."""
    big = max((v for v in d.values() if isinstance(v, np.ndarray)), key=lambda a: a.nbytes)
    src = np.ones(big.size if quick else 1 << 26, np.float32)
    dst = np.empty_like(src)
    d["_copy"] = (src, dst)
    out = {"copy": lambda: np.copyto(dst, src)}
    if with_numba:
        try:
            import peers_numba

            par, _ = peers_numba.compiled("copy", {"src": src, "dst": dst})
            out["copy-parallel"] = lambda: par(src, dst)
        except ImportError:
            pass
    return out


def launch_overhead(repeat: int) -> dict:
    """Seconds per call of a one-group saxpy on 256 elements: polykern vs a Numba function of the
    same work (parallel=False: prange's thread launch would dominate) and a NumPy call."""
    import polykern as pk
    from saxpy import saxpy

    n = 256
    x = np.ones(n, np.float32)
    y = np.ones(n, np.float32)
    k = pk.build([saxpy], targets=["llvm"])["saxpy"]
    fns = {"polykern": lambda: k(n, 2.0, x, y, grid=1, block=n),
           "numpy": lambda: np.add(x, y, out=y)}
    try:
        import peers_numba

        d = {"a": np.float32(2.0), "x": x, "y": y}
        seq, _ = peers_numba.compiled("saxpy", d, parallel=False)
        par, _ = peers_numba.compiled("saxpy", d, parallel=True)
        fns["numba"] = lambda: seq(np.float32(2.0), x, y)
        fns["numba-parallel"] = lambda: par(np.float32(2.0), x, y)
    except ImportError:
        pass
    times = interleaved(fns, repeat, warmup=50, min_time=0.05)
    return {k: median(v) for k, v in times.items()}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--only", help="comma-separated kernel names")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    res = run(args.quick, args.repeat, problems=args.only.split(",") if args.only else None)
    res["machine"] = machine()
    res["versions"] = versions("numpy", "numba", "llvmlite")
    lo = res["launch_overhead"]
    log("launch overhead per call: " + "  ".join(f"{k} {v * 1e6:.1f}us" for k, v in lo.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
