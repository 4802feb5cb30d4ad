"""One cold measurement in a fresh process (run by compile_time.py; prints one JSON line):

    python benchmarks/cold.py polykern KERNEL TARGET    import polykern, build, export
    python benchmarks/cold.py polykern-load KERNEL FILE import polykern, load a .kbin, get the kernel
    python benchmarks/cold.py tvm KERNEL                 import tvm, compile
    python benchmarks/cold.py numba KERNEL [CACHE_DIR]   import numba, compile (from CACHE_DIR's cache if given)
    python benchmarks/cold.py triton KERNEL              import triton, compile (uncached) for sm_90
    python benchmarks/cold.py triton-warm KERNEL N       ... then the same compile N times (medians)

Triton runs in its own process always: its bundled LLVM cannot share a process with llvmlite's
and TVM's (its command-line option registry collides; the import crashes).

Times: ``import_s`` (the framework's import), ``discover_s`` (polykern: backend plugin discovery,
which the first build would otherwise do), ``compile_s``/``load_s`` wall seconds of the first
build in the process, ``*_cpu_s`` the thread's CPU seconds and ``child_cpu_s`` the CPU seconds of
subprocesses (vendor tools: ptxas, the linker) during it.
"""
from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("POLYKERN_CACHE", "0")  # a cold build measures the compiler (benchmarks/common.py)


def _clock():
    t = os.times()
    return time.perf_counter(), time.thread_time(), t.children_user + t.children_system


def _since(start, prefix):
    w, c, ch = _clock()
    return {f"{prefix}_s": w - start[0], f"{prefix}_cpu_s": c - start[1], "child_cpu_s": ch - start[2]}


def main(argv):
    tool, kernel = argv[0], argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.join(here, "..", "examples")]
    out = {"tool": tool, "kernel": kernel}
    t0 = time.perf_counter()
    if tool in ("polykern", "polykern-load"):
        import polykern as pk

        out["import_s"] = time.perf_counter() - t0
        from kernels import BY_NAME

        k = BY_NAME[kernel].kernel
        s = _clock()
        pk.backends.load_all()  # plugin discovery: imports every backend's runtime binding, lists devices
        out["discover_s"] = _since(s, "d")["d_s"]
        s = _clock()
        if tool == "polykern":
            mod = pk.build([k], targets=[argv[2]])
            out.update(_since(s, "compile"))
            s = _clock()
            out["bytes"] = len(mod.export())
            out.update({"export_s": _since(s, "x")["x_s"]})
        else:
            with open(argv[2], "rb") as f:
                mod = pk.load(f.read())
            mod[k.name].resolve()
            out.update(_since(s, "load"))
    elif tool == "tvm":
        import tvm  # noqa: F401

        out["import_s"] = time.perf_counter() - t0
        import peers_tvm

        s = _clock()
        peers_tvm.compile_kernel(kernel)
        out.update(_since(s, "compile"))
    elif tool == "numba":
        import numba  # noqa: F401

        out["import_s"] = time.perf_counter() - t0
        import peers_numba

        d = peers_numba.small_inputs(kernel)
        s = _clock()
        if len(argv) > 2:  # the cached module written by compile_time.numba_cache()
            sys.path.insert(0, argv[2])
            import nbk

            disp = getattr(nbk, kernel)
            disp.compile(tuple(numba.typeof(a) for a in peers_numba.ARGS[kernel](d)))
            out.update(_since(s, "load"))
            out["cache_hits"] = int(sum(disp.stats.cache_hits.values()))
        else:
            peers_numba.compiled(kernel, d)
            out.update(_since(s, "compile"))
    elif tool in ("triton", "triton-warm"):
        os.environ["TRITON_ALWAYS_COMPILE"] = "1"  # measure compiles, not Triton's cache
        os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
        import triton  # noqa: F401

        out["import_s"] = time.perf_counter() - t0
        import peers_triton

        s = _clock()
        ck = peers_triton.compile_kernel(kernel)
        out.update(_since(s, "compile"))
        out["bytes"] = len(ck.asm["cubin"])
        if tool == "triton-warm":  # then the same compile repeated in this process
            rows = []
            for _ in range(int(argv[2])):
                s = _clock()
                peers_triton.compile_kernel(kernel)
                rows.append(_since(s, "warm"))
            for key in ("warm_s", "warm_cpu_s", "child_cpu_s"):
                vals = sorted(r[key] for r in rows)
                out[key if key != "child_cpu_s" else "warm_child_cpu_s"] = vals[len(vals) // 2]
    else:
        raise SystemExit(f"unknown tool {tool!r}")
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
