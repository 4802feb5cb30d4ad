"""Compile time per kernel per backend (cold: a fresh process; warm: the same build repeated
in-process), artifact size and load time, for polykern and its peers on the four benchmark
kernels: Apache TVM (TE, ``target="llvm"``), Numba (``parallel=True``) and Triton (ahead of time
for sm_90: no GPU needed to compile).

Times are wall seconds (medians) and the building thread's CPU seconds (``*_cpu_s``: robust on a
busy host); ``child_cpu_s`` is CPU time of subprocesses (vendor tools: ptxas, the C linker),
which polykern's budget excludes. In-process vendor libraries (NVRTC) count as the compiler's.

    python benchmarks/compile_time.py [--quick] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from common import HERE, check_output, log, machine, median, versions, write_output
from kernels import PROBLEMS

TARGETS = ["llvm", "cuda -arch=sm_90", "nvptx -arch=sm_90", "rocm -mcpu=gfx90a", "opencl", "vulkan", "metal",
           "webgpu", "hexagon"]
KERNELS = [p.name for p in PROBLEMS]


def _clock():
    t = os.times()
    return time.perf_counter(), time.thread_time(), t.children_user + t.children_system


def _timed(fn, repeat: int):
    """Medians of (wall, thread CPU, children CPU) over ``repeat`` calls, and the last result."""
    rows, out = [], None
    for _ in range(repeat):
        a = _clock()
        out = fn()
        b = _clock()
        rows.append(tuple(y - x for x, y in zip(a, b)))
    return tuple(median([r[i] for r in rows]) for i in range(3)) + (out,)


def _cold(*args, timeout=600) -> dict:
    r = subprocess.run([sys.executable, os.path.join(HERE, "cold.py"), *args], capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1] if (r.stderr or r.stdout) else "failed")
    return json.loads(r.stdout.strip().splitlines()[-1])


def polykern_rows(repeat: int, cold: bool) -> list:
    import polykern as pk

    by = {p.name: p for p in PROBLEMS}
    rows = []
    for name in KERNELS:
        k = by[name].kernel
        for target in TARGETS:
            row = {"tool": "polykern", "kernel": name, "target": target}
            try:
                pk.build([k], targets=[target])
            except Exception as e:  # noqa: BLE001 - a backend refusing a kernel is a result
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                rows.append(row)
                log(f"compile polykern {name:9} {target:20} refused: {row['error']}")
                continue
            w, c, ch, mod = _timed(lambda: pk.build([k], targets=[target]), repeat)
            row.update(warm_s=w, warm_cpu_s=c, child_cpu_s=ch)
            ew, _, _, data = _timed(lambda: pk.build([k], targets=[target]).export(), 1)
            row["export_s"] = ew - w  # the first export of a fresh build (renders lazy sources)
            row["bytes"] = len(data)
            row["bytes_stripped"] = len(mod.export(strip_sources=True))
            dev = mod.imports[0]
            row["payload_bytes"] = len(dev.payload) if isinstance(dev.payload, bytes) else sum(
                len(v) for v in dev.payload.values())
            if dev.is_runnable:
                lw, lc, _, _ = _timed(lambda: pk.load(data)[k.name].resolve(), repeat)
                row.update(load_s=lw, load_cpu_s=lc)
            if cold:
                try:
                    c1 = _cold("polykern", name, target)
                    row.update(cold_import_s=c1["import_s"], cold_discover_s=c1.get("discover_s"), cold_s=c1["compile_s"],
                               cold_cpu_s=c1["compile_cpu_s"], cold_child_cpu_s=c1["child_cpu_s"])
                    if dev.is_runnable:
                        with tempfile.NamedTemporaryFile(suffix=".kbin", delete=False) as f:
                            f.write(data)
                        try:
                            c2 = _cold("polykern-load", name, f.name)
                        finally:
                            os.unlink(f.name)
                        row.update(cold_load_s=c2["load_s"])
                except Exception as e:  # noqa: BLE001
                    row["cold_error"] = str(e)[:200]
            rows.append(row)
            log(f"compile polykern {name:9} {target:20} warm {w * 1e3:7.1f} ms (cpu {c * 1e3:6.1f}, tools "
                f"{ch * 1e3:5.1f})  cold {row.get('cold_s', float('nan')) * 1e3:7.1f} ms  {row['bytes']:7d} B"
                + (f"  load {row['load_s'] * 1e3:.2f} ms" if "load_s" in row else ""))
    return rows


def tvm_rows(repeat: int, cold: bool) -> list:
    try:
        import peers_tvm
    except ImportError as e:
        return [{"tool": "tvm", "error": f"not installed: {e}"}]
    rows = []
    tmp = tempfile.mkdtemp(prefix="pk-bench-tvm-")
    try:
        for name in KERNELS:
            row = {"tool": "tvm", "kernel": name, "target": "llvm"}
            try:
                peers_tvm.compile_kernel(name)
                w, c, ch, mod = _timed(lambda: peers_tvm.compile_kernel(name), repeat)
                row.update(warm_s=w, warm_cpu_s=c, child_cpu_s=ch)
                path = os.path.join(tmp, f"{name}.so")
                ew, ec, ech, _ = _timed(lambda: mod.export_library(path), 1)
                row.update(export_s=ew, export_child_cpu_s=ech, bytes=os.path.getsize(path))
                import tvm

                paths = []
                for i in range(repeat):  # a fresh file each time: dlopen caches by path
                    p = os.path.join(tmp, f"{name}.{i}.so")
                    shutil.copy(path, p)
                    paths.append(p)
                it = iter(paths)
                lw, lc, _, _ = _timed(lambda: tvm.runtime.load_module(next(it)), repeat)
                row.update(load_s=lw, load_cpu_s=lc)
                if cold:
                    c1 = _cold("tvm", name)
                    row.update(cold_import_s=c1["import_s"], cold_s=c1["compile_s"], cold_cpu_s=c1["compile_cpu_s"])
            except Exception as e:  # noqa: BLE001
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            rows.append(row)
            log(f"compile tvm      {name:9} " + (row.get("error") or f"warm {row['warm_s'] * 1e3:7.1f} ms  "
                                                f"{row['bytes']} B  load {row['load_s'] * 1e3:.2f} ms"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def numba_rows(repeat: int, cold: bool) -> list:
    try:
        import numba

        import peers_numba
    except ImportError as e:
        return [{"tool": "numba", "error": f"not installed: {e}"}]
    rows = []
    tmp = tempfile.mkdtemp(prefix="pk-bench-numba-")
    try:
        peers_numba.write_cache_module(tmp)
        for name in KERNELS:
            row = {"tool": "numba", "kernel": name, "target": "host cpu"}
            try:
                d = peers_numba.small_inputs(name)
                w, c, ch, _ = _timed(lambda: peers_numba.compiled(name, d), repeat)
                row.update(warm_s=w, warm_cpu_s=c, child_cpu_s=ch)
                if cold:
                    c1 = _cold("numba", name)
                    row.update(cold_import_s=c1["import_s"], cold_s=c1["compile_s"], cold_cpu_s=c1["compile_cpu_s"])
                    _cold("numba", name, tmp)  # first run in the directory writes the cache
                    c2 = _cold("numba", name, tmp)
                    if c2.get("cache_hits"):
                        row.update(cold_load_s=c2["load_s"], load_s=c2["load_s"])
                    row["bytes"] = peers_numba.cache_bytes(tmp, name)
            except Exception as e:  # noqa: BLE001
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            rows.append(row)
            log(f"compile numba    {name:9} " + (row.get("error") or f"warm {row['warm_s'] * 1e3:7.1f} ms  "
                                                f"cache {row.get('bytes')} B  load {row.get('load_s', 0) * 1e3:.1f} ms"))
        del numba
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def triton_rows(repeat: int, cold: bool) -> list:
    """Triton in subprocesses only (see cold.py: its LLVM cannot share a process with llvmlite)."""
    rows = []
    for name in KERNELS:
        row = {"tool": "triton", "kernel": name, "target": "cuda sm_90 (cubin)"}
        try:
            w = _cold("triton-warm", name, str(repeat))
            row.update(warm_s=w["warm_s"], warm_cpu_s=w["warm_cpu_s"], child_cpu_s=w["warm_child_cpu_s"],
                       bytes=w["bytes"])
            if cold:
                c1 = _cold("triton", name)
                row.update(cold_import_s=c1["import_s"], cold_s=c1["compile_s"], cold_cpu_s=c1["compile_cpu_s"],
                           cold_child_cpu_s=c1["child_cpu_s"])
        except Exception as e:  # noqa: BLE001 - e.g. Triton not installed, or no ptxas in this build
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        rows.append(row)
        log(f"compile triton   {name:9} " + (row.get("error") or f"warm {row['warm_s'] * 1e3:7.1f} ms (ptxas "
                                            f"{row['child_cpu_s'] * 1e3:.1f})  cubin {row['bytes']} B"))
    return rows


def run(quick: bool = False, repeat: int = 5, cold: bool = True, peers=("tvm", "numba", "triton")) -> dict:
    rows = polykern_rows(repeat, cold)
    if "tvm" in peers:
        rows += tvm_rows(repeat, cold)
    if "numba" in peers:
        rows += numba_rows(repeat, cold)
    if "triton" in peers:
        rows += triton_rows(repeat, cold)
    return {"rows": rows, "targets": TARGETS, "kernels": KERNELS}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats, no cold processes")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--peers", default="tvm,numba,triton")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.json:
        check_output(args.json)
    res = run(args.quick, 2 if args.quick else args.repeat, not args.quick, tuple(filter(None, args.peers.split(","))))
    res["machine"] = machine()
    res["versions"] = versions("llvmlite", "tvm", "numba", "triton")
    if args.json:
        write_output(args.json, json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
