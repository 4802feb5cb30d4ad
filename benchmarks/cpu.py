"""CPU kernel time: polykern (``llvm`` target, default ``-mcpu=generic``, and ``-mcpu=native``)
against NumPy and Numba (``parallel=True``, ``prange``) on the four benchmark kernels, plus
memory-bound kernels as a fraction of the copy bandwidth (``np.copyto`` on large arrays)
measured in the same run, and launch overhead per call on a tiny launch.

    python benchmarks/cpu.py [--quick] [--json out.json]
    python benchmarks/cpu.py --tuned [--repeat 9] [--json out.json]   # tuned_kernels.py vs Numba/NumPy
    python benchmarks/cpu.py --safety [--repeat 15] [--json out.json]  # default (safe) build vs bounds_check=False

Every figure comes with the host's load average before and after its rounds (host_load.py); a ratio
counts against a target only on a quiet host ("loaded host (load X): ratio not counted" otherwise).
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

import host_load
from common import check_output, interleaved, log, machine, median, versions, write_output
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
        load = [host_load.sample()]
        times = interleaved(fns, repeat, warmup=2, min_time=0.02)
        load.append(host_load.sample())
        med = {k: median(v) for k, v in times.items()}
        nbytes = p.nbytes(d)
        src, _ = d["_copy"]
        bw = {k: 2 * src.nbytes / med[k] for k in copies}
        runs = {k: v for k, v in med.items() if k not in copies}
        row = {"kernel": p.name, "memory_bound": p.memory_bound, "bytes": nbytes, "seconds": med, "loadavg": load,
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
               if p.memory_bound else "") + f"  ({host_load.describe(load)})")
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


TUNED_SIZES = {"saxpy": 1 << 24, "sum": 1 << 24, "softmax": (4096, 4096)}
#: The issue's CPU targets: (problem, peer) -> the highest ratio time polykern / time peer that meets it
#: (the best polykern contender of the problem counts).
TUNED_TARGETS = {("saxpy", "numba parallel"): 1.0, ("sum", "numba parallel"): 1.0, ("sum", "numpy"): 1.0,
                 ("softmax", "numba parallel"): 1.0, ("softmax", "numpy"): 1.0}
CHUNK_BLOCK = 64  # work-items per group of sum_chunks on the CPU (one group per core)


def _numpy_tuned(name: str, d: dict):
    """The NumPy a user writes for the issue-15 CPU problems (in place where the problem is)."""
    if name == "saxpy":
        t = np.empty_like(d["y"])

        def saxpy():
            np.multiply(d["x"], d["a"], out=t)
            return [np.add(t, d["y"], out=d["y"])]
        return saxpy
    if name == "sum":
        return lambda: [d["x"].sum()]

    def softmax():
        e = np.exp(d["x"] - d["x"].max(axis=1, keepdims=True))
        e /= e.sum(axis=1, keepdims=True)
        return [e]
    return softmax


def _numba_tuned(name: str, d: dict):
    import peers_numba

    if name == "saxpy":
        disp, _ = peers_numba.compiled("saxpy", d)
        return lambda: (disp(d["a"], d["x"], d["y"]), [d["y"]])[1]
    if name == "sum":
        disp, _ = peers_numba.compiled("reduction", d)
        return lambda: [disp(d["x"])]
    d["out"] = np.empty_like(d["x"])
    disp, _ = peers_numba.compiled("softmax", d)
    return lambda: (disp(d["x"], d["out"]), [d["out"]])[1]


def tuned(repeat: int = 9, quick: bool = False, with_numba: bool = True) -> dict:
    """The tuned kernels on the CPU: those of tuned_kernels.py (saxpy with float4 groups in a grid-stride
    loop; the 2-pass sum with subgroup reductions; row softmax with the row in registers) on the llvm
    runtime, and the examples' saxpy, against NumPy and Numba ``parallel=True``. Each contender is checked
    against NumPy in float64 first (a wrong one is reported, not timed); then ``repeat`` interleaved
    rounds; per-round ratios polykern / peer, their median and spread (min-max)."""
    import os

    import polykern as pk
    import tuned_kernels as tk
    import tuned_problems as tp
    from kernels import BY_NAME

    units = os.cpu_count() or 1
    rows = []
    for name in ("saxpy", "sum", "softmax"):
        size = tp.TINY[name] if quick else TUNED_SIZES[name]
        p = tp.PROBLEMS[name]
        host = p.make(np.random.default_rng(15), size)
        want = p.reference(host)
        place = tp.Place()
        fns, state = {}, {}

        def fresh():
            return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in host.items()}
        for label, target in TARGETS.items():
            mod = pk.build(p.kernels(size), targets=[target])
            d = {k: (place.put(v) if isinstance(v, np.ndarray) else v) for k, v in host.items()}
            fns[f"{label} tuned"], state[f"{label} tuned"] = p.run(mod, place, d, {"size": size, "units": units}), d
        if name == "sum":  # the CPU's layout: a contiguous chunk per work-item (tuned_kernels.sum_chunks)
            ks = [tk.sum_chunks.specialize(BLOCK=CHUNK_BLOCK), tk.sum_finish.specialize(BLOCK=CHUNK_BLOCK)]
            for label, target in TARGETS.items():
                mod = pk.build(ks, targets=[target])
                d = fresh()
                d["part"], d["out"] = np.zeros(units, np.float32), np.zeros(1, np.float32)
                fns[f"{label} chunks"], state[f"{label} chunks"] = (
                    lambda c=mod[ks[0].name], f=mod[ks[1].name], d=d: (
                        c(size, d["x"], d["part"], grid=units, block=CHUNK_BLOCK),
                        f(units, d["part"], d["out"], 0, 1.0, grid=1, block=CHUNK_BLOCK), [d["out"]])[2]), d
        if name == "softmax":  # the CPU's layout: a work-item per row (tuned_kernels.softmax_row_loops)
            r, c = size
            for label, target in TARGETS.items():
                k = pk.build([tk.softmax_row_loops], targets=[target])["softmax_row_loops"]
                d = fresh()
                d["out"] = np.zeros(r * c, np.float32)
                fns[f"{label} row loops"], state[f"{label} row loops"] = (
                    lambda k=k, d=d: (k(r, c, d["x"], d["out"], grid=-(-r // 64), block=64), [d["out"]])[1]), d
        if name == "saxpy":
            k = pk.build([BY_NAME["saxpy"].kernel], targets=["llvm"])["saxpy"]
            d = dict(fresh(), n=size)
            fns["polykern example saxpy"], state["polykern example saxpy"] = (
                lambda k=k, d=d: (BY_NAME["saxpy"].launch(k, d), [d["y"]])[1]), d
        d = fresh()
        fns["numpy"], state["numpy"] = _numpy_tuned(name, d), d
        if with_numba:
            try:
                d = fresh()
                fns["numba parallel"], state["numba parallel"] = _numba_tuned(name, d), d
            except ImportError as e:
                log(f"numba not available: {e}")
        status = {}
        for label, f in list(fns.items()):
            for r in p.resets:
                state[label][r][...] = host[r].ravel() if state[label][r].ndim == 1 else host[r]
            err = tp.check(name, host, [np.asarray(o) for o in f()], want)
            status[label] = err or "ok"
            if err:
                log(f"cpu {name}: {label}: {err}")
                del fns[label]
        load = [host_load.sample()]
        times = interleaved(fns, repeat, warmup=1, min_time=0.05)
        load.append(host_load.sample())
        med = {k: median(v) for k, v in times.items()}
        ratios = {}
        for peer in ("numba parallel", "numpy"):
            if peer not in times:
                continue
            for label in times:
                if label.startswith("polykern"):
                    r = [a / b for a, b in zip(times[label], times[peer])]
                    ratios[f"{label} / {peer}"] = {"median": median(r), "min": min(r), "max": max(r)}
        row = {"problem": name, "size": size, "status": status, "seconds": med, "rounds": times,
               "ratios": ratios, "loadavg": load}
        row["targets"] = target_verdicts(row)
        rows.append(row)
        log(f"cpu {name:8} " + "  ".join(f"{k} {v * 1e3:.3f}ms" for k, v in med.items())
            + f"  ({host_load.describe(load)})")
        for k, v in ratios.items():
            log(f"    {k}: {v['median']:.3f} ({v['min']:.3f}-{v['max']:.3f})")
        for t in row["targets"]:
            log(f"    target {name} / {t['peer']} <= {t['target']}: {t['contender']} {t['ratio']:.3f}: {t['verdict']}")
    return {"rows": rows, "repeat": repeat}


def target_verdicts(row: dict, cores=None) -> list:
    """The row's :data:`TUNED_TARGETS`: per peer, the best polykern contender's median ratio and its verdict
    (host_load.verdict: not counted when the host was loaded during the row's rounds)."""
    out = []
    for (problem, peer), target in TUNED_TARGETS.items():
        if problem != row["problem"]:
            continue
        mine = {k.rsplit(" / ", 1)[0]: v["median"] for k, v in row["ratios"].items() if k.endswith(" / " + peer)}
        if not mine:
            continue
        best = min(mine, key=mine.get)
        out.append({"peer": peer, "target": target, "contender": best, "ratio": mine[best],
                    "verdict": host_load.verdict(mine[best], target, row["loadavg"], cores)})
    return out


def tuned_table(res: dict) -> str:
    """Markdown: per problem, each contender's median ms and its ratios to Numba parallel and NumPy."""
    lines = ["| problem (size) | contender | ms | / Numba parallel (spread) | / NumPy (spread) |", "|---|---|---|---|---|"]
    for row in res["rows"]:
        size = "x".join(map(str, row["size"])) if isinstance(row["size"], (list, tuple)) else f"2^{row['size'].bit_length() - 1}"
        for label, sec in row["seconds"].items():
            cells = []
            for peer in ("numba parallel", "numpy"):
                r = row["ratios"].get(f"{label} / {peer}")
                cells.append(f"{r['median']:.2f} ({r['min']:.2f}–{r['max']:.2f})" if r else "—")
            lines.append(f"| {row['problem']} ({size}) | {label} | {sec * 1e3:.2f} | {cells[0]} | {cells[1]} |")
        for label, st in row["status"].items():
            if st != "ok":
                lines.append(f"| {row['problem']} | {label} | {st} | | |")
    for row in res["rows"]:
        lines.append("")
        lines.append(f"{row['problem']}: {host_load.describe(row['loadavg'])}; " + "; ".join(
            f"<= {t['target']} vs {t['peer']}: {t['contender']} {t['ratio']:.2f}, {t['verdict']}" for t in row["targets"]))
    return "\n".join(lines)


def safety(repeat: int = 15, quick: bool = False) -> dict:
    """The CPU runtimes' default build: the four benchmark kernels built by default (the safe build: accesses
    proven under launch-time conditions, the rest checked) against ``bounds_check=False`` (the raw
    kernels, the build before the safe default), both checked first, interleaved rounds; per kernel the
    median of the per-round ratios default / raw and their spread, and the load average around."""
    import polykern as pk

    load = [host_load.sample()]
    rows = []
    for p in PROBLEMS:
        d = p.make(np.random.default_rng(0), quick)
        fns = {}
        for label, flag in (("default", None), ("raw", False)):
            k = pk.build([p.kernel], targets=["llvm"], bounds_check=flag)[p.kernel.name]
            p.check(dict(p.make(np.random.default_rng(1), True), _k=k))
            fns[label] = lambda k=k, d=d, p=p: p.launch(k, d)
        times = interleaved(fns, repeat, warmup=2, min_time=0.02)
        r = [a / b for a, b in zip(times["default"], times["raw"])]
        rows.append({"kernel": p.name, "seconds": {k: median(v) for k, v in times.items()},
                     "ratio": {"median": median(r), "min": min(r), "max": max(r)}, "rounds": times})
        log(f"cpu {p.name:10} default {median(times['default']) * 1e3:.3f}ms raw {median(times['raw']) * 1e3:.3f}ms "
            f"default/raw {median(r):.3f} ({min(r):.3f}-{max(r):.3f})")
    from saxpy import saxpy  # launch overhead: a one-group saxpy on 256 elements, per call

    x, y = np.ones(256, np.float32), np.ones(256, np.float32)
    tiny = {label: (lambda k=pk.build([saxpy], bounds_check=flag)["saxpy"]: k(256, 2.0, x, y, grid=1, block=256))
            for label, flag in (("default", None), ("raw", False))}
    t = interleaved(tiny, repeat, warmup=50, min_time=0.05)
    overhead = {k: median(v) for k, v in t.items()}
    log("launch per call: " + "  ".join(f"{k} {v * 1e6:.1f}us" for k, v in overhead.items()))
    load.append(host_load.sample())
    log(f"load average (1, 5, 15 min) before {load[0]}, after {load[1]}")
    return {"rows": rows, "repeat": repeat, "loadavg": load, "launch_seconds": overhead}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--only", help="comma-separated kernel names")
    ap.add_argument("--json")
    ap.add_argument("--tuned", action="store_true", help="the tuned kernels (saxpy, sum, row softmax) "
                    "against NumPy and Numba parallel, interleaved rounds (--repeat, at least 9)")
    ap.add_argument("--safety", action="store_true", help="the default (safe) build against bounds_check=False")
    args = ap.parse_args(argv)
    if args.json:
        check_output(args.json)
    if args.safety:
        res = {"issue21": safety(args.repeat, args.quick), "machine": machine()}
        if args.json:
            write_output(args.json, json.dumps(res, indent=1))
        return 0
    if args.tuned:
        res = {"issue15": tuned(max(9, args.repeat), args.quick), "machine": machine(),
               "versions": versions("numpy", "numba", "llvmlite")}
        print(tuned_table(res["issue15"]))
        if args.json:
            write_output(args.json, json.dumps(res, indent=1))
        return 0
    res = run(args.quick, args.repeat, problems=args.only.split(",") if args.only else None)
    res["loadavg_end"] = host_load.sample()
    res["machine"] = machine()
    res["versions"] = versions("numpy", "numba", "llvmlite")
    lo = res["launch_overhead"]
    log("launch overhead per call: " + "  ".join(f"{k} {v * 1e6:.1f}us" for k, v in lo.items()))
    if args.json:
        write_output(args.json, json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
