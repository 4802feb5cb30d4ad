"""The peers benchmark: "the best kernel each system's users would write", side by side in one run.

    python benchmarks/gpu_peers.py --out OUT [--rounds 7] [--arch 90] [--only sum,matmul]
    python benchmarks/gpu_peers.py --dry-run --out OUT      # any host: builds + small checks, no GPU

On a GPU host (CuPy; Triton and torch optional; polykern's CUDA runtime; Vulkan through NVIDIA's
driver where present), for each problem of benchmarks/tuned_problems.py:

- polykern (benchmarks/tuned_kernels.py: grid-stride loops, ``pk.vload``/``pk.vstore``, subgroup
  reductions in a ``@pk.func``, a second pass instead of atomics, constexpr tiles, ``pk.local``
  register tiles) built for ``cuda -arch=sm_XX`` and ``nvptx -arch=sm_XX``, and the same source for
  ``vulkan``;
- the peers: CuPy built-ins (``x.sum()``, ``x.max()``, ``x.mean()`` + ``x.var()``: CUB; CuPy's own
  two passes for the variance, ``x.mean()`` then a ``ReductionKernel`` of ``(x - m)^2``; ``a @ b``:
  cuBLAS SGEMM, TF32 off), Triton's tutorial-style kernels (benchmarks/peers_triton.py: saxpy,
  fused softmax, layer norm, matmul autotuned in IEEE f32; the stencil of benchmarks/gpu.py), torch
  (``torch.var_mean``, ``torch.softmax``, ``torch.nn.functional.layer_norm``, ``torch.mm`` with
  ``allow_tf32 = False``: cuBLAS SGEMM).

Every contender's result is checked against NumPy (float64) before timing; a wrong or failing one
is reported and never timed; a missing peer (no Triton, no torch) is reported as missing. Timing:
rounds (``--rounds``, >= 5) over all contenders, interleaved; in each round a batch of back-to-back
calls per contender, timed with CUDA events on the legacy default stream (CUDA contenders) or the
Vulkan timestamp queries (Vulkan: ``vkCmdWriteTimestamp`` around each launch's commands, the device's
``timestampPeriod``: GPU time like the CUDA events'; the host time, where each launch is submitted and
waited for, is reported beside it, with the empty launch's host and GPU time; where the queue has no
timestamps, the host clock alone). Reported: median seconds per call,
the ratio polykern / best peer (median of the per-round ratios, spread = their min-max), the
issue's targets met/missed, the Vulkan/CUDA ratio. Writes OUT/gpu_peers.json, OUT/gpu_peers.txt
(the table) and OUT/gpu_peers.png (matplotlib if present). ``--budget-s`` stops starting new
problems when the time is spent (they are recorded as skipped).

``--dry-run`` needs no GPU and no CuPy: it builds every polykern kernel (full and tiny
specializations) for cuda (CUDA C through nvcc/NVRTC), nvptx and vulkan, runs the tiny problems on
the runtimes present (llvm, and Vulkan: lavapipe on a CPU host) against NumPy, compiles the Triton
kernels ahead of time when Triton is importable, and goes through the same checking, timing,
reporting and plotting code with NumPy standing in as the peer.
"""
import argparse
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
os.environ.setdefault("CUPY_TF32", "0")  # cuBLAS SGEMM in full f32 (CuPy's default, made explicit)
os.environ.setdefault("CUPY_ACCELERATORS", "cub")  # x.sum()/max()/mean()/var() through CUB (recorded in the JSON)

import numpy as np  # noqa: E402

import common  # noqa: E402,F401  (puts python/, examples/ and the backends on sys.path)
import tuned_problems as tp  # noqa: E402
from gpu_timing import (Contender, CupyPlace, HostPlace, VulkanPlace, device_info, log, med, ptxas_info,  # noqa: E402,F401
                        short, time_rounds, to_host)

ORDER = ["sum", "max", "meanvar", "saxpy", "stencil", "softmax", "layernorm", "matmul"]
# The targets: (problem, what it compares, the peer labels it names, the limit on the time ratio).
TARGETS = [
    ("sum", "polykern / CuPy (CUB)", ("cupy",), 1.0),
    ("max", "polykern / CuPy (CUB)", ("cupy",), 1.0),
    ("meanvar", "polykern / CuPy (CUB)", ("cupy",), 1.0),
    ("saxpy", "polykern / Triton", ("triton",), 1.0),
    ("stencil", "polykern / Triton", ("triton",), 1.0),
    ("softmax", "polykern / Triton", ("triton",), 1.0),
    ("layernorm", "polykern / Triton", ("triton",), 1.0),
    ("matmul", "polykern / cuBLAS SGEMM", ("cupy", "torch.mm"), 1.1),
    ("matmul", "polykern / Triton f32 (no TF32)", ("triton",), 1.0),
]
VULKAN_LIMIT = 1.25
FEATURES = ("pk.func (block reductions), pk.constexpr + kernel.specialize (block/tile sizes, unrolled loops), "
            "pk.subgroup_add/subgroup_max/subgroup_local_id/subgroup_id, pk.vload/pk.vstore (4 x f32), "
            "pk.local register tiles, pk.shared / pk.shared_dynamic (matmul tiles) staging, pk.fma; a second pass "
            "instead of atomics; the sum's first pass in 3 shapes (tuned_problems.SUM_VARIANTS), the fastest counted.")

RESULTS: dict = {"problems": {}, "errors": {}, "skipped": [], "features": FEATURES}


# ------------------------------------------------------------------ where arrays live

# ------------------------------------------------------------------ contenders

def polykern_contenders(name, size, host, mods, env) -> list:
    p = tp.PROBLEMS[name]
    out = []
    for base, (mod, place, clock) in mods.items():
        # a problem's other shapes (tuned_problems: Problem.variants) on the CUDA targets, labelled
        # "polykern-nvptx [variant]": the best of them is polykern's figure; Vulkan runs the default shape
        for variant in p.variants if not base.endswith("vulkan") else ("",):
            label = f"{base} [{variant}]" if variant else base
            try:  # a runtime that cannot take the arrays fails this contender only
                d = _upload(host, place)
                fn = p.run(mod, place, d, dict(env, size=size, variant=variant))
            except Exception as e:  # noqa: BLE001
                RESULTS["problems"][name]["status"][label] = f"FAILED: {short(e)}"
                continue
            launches = {"sum": 2, "max": 2, "meanvar": 4}.get(name, 1)
            c = Contender(label, fn, clock, place, "polykern", launches)
            c.arrays = d
            out.append(c)
    return out


def _upload(host, place) -> dict:
    return {k: (place.put(v) if isinstance(v, np.ndarray) and v.ndim else v) for k, v in host.items()}


CUPY_PROBLEMS = ("sum", "max", "meanvar", "matmul")
TRITON_PROBLEMS = ("saxpy", "stencil", "softmax", "layernorm", "matmul")
TORCH_PROBLEMS = ("meanvar", "softmax", "layernorm", "matmul")


def _with_arrays(contenders: list, d: dict) -> list:
    """The contenders, each given the arrays ``d`` it works on (reset before checks). A function of its
    own: a ``for x in out`` loop in a peer builder rebound the name its lambdas closed over (the GPU run
    of 22:12 UTC passed a Contender to torch.softmax and as cupy.matmul's ``out``)."""
    for one in contenders:
        one.arrays = d
    return contenders


def cupy_peers(name, host, place) -> list:
    if name not in CUPY_PROBLEMS:
        return []
    cp = place.cp
    d = _upload(host, place)
    out = []
    if name in ("sum", "max", "meanvar"):
        x = d["x"]
        fn = {"sum": lambda: [x.sum()], "max": lambda: [x.max()],
              "meanvar": lambda: [x.mean(), x.var()]}[name]
        label = {"sum": "cupy x.sum() (CUB)", "max": "cupy x.max() (CUB)",
                 "meanvar": "cupy x.mean(), x.var() (CUB)"}[name]
        out.append(Contender(label, fn, "events", place, "peer"))
    if name == "meanvar":  # x.var() took 49 ms on the H100: CuPy's own two passes, each one reduction
        sqdev = cp.ReductionKernel("T x, T m", "T y", "(x - m) * (x - m)", "a + b",
                                   "y = a / (_in_ind.size() / _out_ind.size())", "0", "pk_bench_sqdev_mean")

        def two_pass():
            m = x.mean()
            return [m, sqdev(x, m)]
        out.append(Contender("cupy two-pass (x.mean(), ReductionKernel of (x - m)^2)", two_pass, "events", place,
                             "peer"))
    elif name == "matmul":
        (m, k), n = host["a"].shape, host["b"].shape[1]
        a, b = d["a"].reshape(m, k), d["b"].reshape(k, n)
        cm = cp.empty((m, n), cp.float32)
        out.append(Contender("cupy a @ b (cuBLAS SGEMM, TF32 off)", lambda: [cp.matmul(a, b, out=cm)], "events",
                             place, "peer"))
    return _with_arrays(out, d)


def triton_peers(name, host, place, tri) -> list:
    """Triton contenders on torch views of CuPy arrays (launched on torch's current stream: the legacy
    default stream, where the CUDA events are recorded)."""
    import torch

    import peers_triton

    if name not in TRITON_PROBLEMS:
        return []
    cp = place.cp
    d = _upload(host, place)
    t = {k: torch.from_dlpack(v) for k, v in d.items() if hasattr(v, "__cuda_array_interface__")}
    out = []
    if name == "saxpy":
        n, a = host["x"].size, float(host["a"])
        for blk in (1024, 256):
            g = (n + blk - 1) // blk
            out.append(Contender(f"triton saxpy (tutorial, BLOCK_SIZE={blk})",
                                 lambda g=g, blk=blk: (tri["saxpy"][(g,)](t["x"], t["y"], a, n, BLOCK_SIZE=blk),
                                                       [d["y"]])[1], "events", place, "peer"))
    elif name == "stencil":
        h, w = host["src"].shape
        st = peers_triton.kernels()["stencil"]
        for blk in (256, 1024):
            g = ((w + blk - 1) // blk, h)
            out.append(Contender(f"triton stencil (gpu.py's, BLOCK={blk})",
                                 lambda g=g, blk=blk: (st[g](t["src"], t["dst"], h, w, BLOCK=blk), [d["dst"]])[1],
                                 "events", place, "peer"))
    elif name == "softmax":
        r, c = host["x"].shape
        y = cp.empty(r * c, cp.float32)
        ty = torch.from_dlpack(y)
        row_block, warps = peers_triton.softmax_launch_shape(c)
        out.append(Contender(f"triton fused softmax (tutorial, {warps} warps)",
                             lambda: (tri["softmax"][(r,)](ty, t["x"], c, c, c, BLOCK_SIZE=row_block,
                                                           num_warps=warps), [y])[1], "events", place, "peer"))
    elif name == "layernorm":
        r, c = host["x"].shape
        y, mean, rstd = cp.empty(r * c, cp.float32), cp.empty(r, cp.float32), cp.empty(r, cp.float32)
        ty, tm, tr = torch.from_dlpack(y), torch.from_dlpack(mean), torch.from_dlpack(rstd)
        row_block, warps = peers_triton.layernorm_launch_shape(c)
        out.append(Contender(f"triton layer norm fwd (tutorial, {warps} warps)",
                             lambda: (tri["layernorm"][(r,)](t["x"], ty, t["w"], t["b"], tm, tr, c, c, tp.LN_EPS,
                                                             BLOCK_SIZE=row_block, num_warps=warps),
                                      [y, mean, rstd])[1], "events", place, "peer"))
    elif name == "matmul":
        (m, k), n = host["a"].shape, host["b"].shape[1]
        c = cp.empty(m * n, cp.float32)
        tc = torch.from_dlpack(c)
        mm = tri["matmul"]

        def grid(meta):
            return ((m + meta["BLOCK_SIZE_M"] - 1) // meta["BLOCK_SIZE_M"]
                    * ((n + meta["BLOCK_SIZE_N"] - 1) // meta["BLOCK_SIZE_N"]),)
        out.append(Contender("triton matmul (tutorial, autotuned, f32 ieee)",
                             lambda: (mm[grid](t["a"], t["b"], tc, m, n, k, k, 1, n, 1, n, 1), [c])[1], "events",
                             place, "peer"))
    return _with_arrays(out, d)


def torch_peers(name, host, place) -> list:
    import torch

    if name not in TORCH_PROBLEMS:
        return []
    d = _upload(host, place)
    out = []
    if name == "meanvar":
        xv = torch.from_dlpack(d["x"])

        def var_mean():
            v, m = torch.var_mean(xv, correction=0)
            return [m, v]
        out.append(Contender("torch.var_mean", var_mean, "events", place, "peer"))
    elif name == "matmul":
        (m, k), n = host["a"].shape, host["b"].shape[1]
        ta, tb = torch.from_dlpack(d["a"]).view(m, k), torch.from_dlpack(d["b"]).view(k, n)
        tc = torch.empty((m, n), dtype=torch.float32, device=ta.device)
        torch.backends.cuda.matmul.allow_tf32 = False  # SGEMM in full f32 (torch's default, made explicit)

        def mm():
            torch.mm(ta, tb, out=tc)
            return [tc]
        out.append(Contender("torch.mm (cuBLAS SGEMM, TF32 off)", mm, "events", place, "peer"))
    elif name == "softmax":
        r, c = host["x"].shape
        x = torch.from_dlpack(d["x"]).view(r, c)
        out.append(Contender("torch.softmax", lambda: [torch.softmax(x, dim=1)], "events", place, "peer"))
    elif name == "layernorm":
        r, c = host["x"].shape
        x = torch.from_dlpack(d["x"]).view(r, c)
        w, b = torch.from_dlpack(d["w"]), torch.from_dlpack(d["b"])
        out.append(Contender("torch layer_norm (y only)",
                             lambda: [torch.nn.functional.layer_norm(x, (c,), w, b, tp.LN_EPS)], "events", place,
                             "peer", outputs=1))
    return _with_arrays(out, d)


def numpy_peers(name, host, place) -> list:
    """The dry run's stand-in peers: NumPy as a user writes it (host clock)."""
    d = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in host.items()}
    fns = {
        "sum": lambda: [d["x"].sum()], "max": lambda: [d["x"].max()],
        "meanvar": lambda: [d["x"].mean(), d["x"].var()],
        "saxpy": lambda: [np.add(d["y"], d["a"] * d["x"], out=d["y"])],
        "stencil": lambda: [tp.stencil_reference(d["src"])],
        "softmax": lambda: [(lambda e: e / e.sum(axis=1, keepdims=True))(np.exp(d["x"] - d["x"].max(1, keepdims=True)))],
        "layernorm": lambda: [((d["x"] - d["x"].mean(1, keepdims=True))
                               / np.sqrt(d["x"].var(1, keepdims=True) + np.float32(tp.LN_EPS))) * d["w"] + d["b"]],
        "matmul": lambda: [d["a"] @ d["b"]],
    }
    c = Contender(f"numpy ({name})", fns[name], "wall", place, "peer", outputs=1 if name == "layernorm" else None)
    c.arrays = d
    return [c]


# ------------------------------------------------------------------ checking and timing

def reset(c: Contender, host: dict, names) -> None:
    for k in names:
        a = c.arrays[k]
        if isinstance(a, np.ndarray):
            a[...] = np.asarray(host[k]).reshape(a.shape)
        elif hasattr(a, "copy_from_host"):
            a.copy_from_host(np.ascontiguousarray(host[k]).ravel())
        else:
            a.set(np.ascontiguousarray(host[k]).ravel())


def check_all(name, host, want, contenders) -> list:
    """The contenders whose result matches the reference; the others' status says why not."""
    st = RESULTS["problems"][name]["status"]
    ok = []
    for c in contenders:
        try:
            reset(c, host, tp.PROBLEMS[name].resets)
            outs = c.fn()
            c.place.sync()
            err = tp.check(name, host, [to_host(o) for o in outs], want if c.outputs is None else want[:c.outputs])
        except Exception as e:  # noqa: BLE001
            err = f"FAILED: {short(e)}"
            traceback.print_exc()
        st[c.label] = err or "ok"
        if err:
            log(f"  {c.label}: {err}")
        else:
            ok.append(c)
    return ok


def summarize(name: str, times: dict, contenders: list, size) -> dict:
    """Medians, the best peer, per-round ratios polykern / best peer (and / each named peer family)."""
    row = RESULTS["problems"][name]
    kinds = {c.label: c.kind for c in contenders}
    row["seconds"] = {k: {"median": med(v), "min": min(v), "max": max(v), "rounds": v} for k, v in times.items()}
    peers = [k for k in times if kinds[k] == "peer"]
    pks = [k for k in times if kinds[k] == "polykern" and not k.endswith("vulkan")]
    p = tp.PROBLEMS[name]
    if p.flops:
        row["tflops"] = {k: p.flops(size) / med(v) / 1e12 for k, v in times.items()}
    else:
        row["GBps"] = {k: p.nbytes(size) / med(v) / 1e9 for k, v in times.items()}
        if RESULTS.get("copy_GBps"):
            row["fraction_of_copy_bandwidth"] = {k: v / RESULTS["copy_GBps"] for k, v in row["GBps"].items()}
    if not peers or not pks:
        return row
    best_peer = min(peers, key=lambda k: med(times[k]))
    best_pk = min(pks, key=lambda k: med(times[k]))
    row["best_peer"], row["best_polykern"] = best_peer, best_pk
    row["ratio_vs_best_peer"] = {k: _ratio(times[k], times[best_peer]) for k in pks}
    return row


def _ratio(a, b) -> dict:
    r = [x / y for x, y in zip(a, b)]
    return {"median": med(r), "min": min(r), "max": max(r)}


def targets() -> list:
    """The issue's targets on this run's figures (the best polykern CUDA target against each named peer)."""
    out = []
    for name, what, fams, limit in TARGETS:
        row = RESULTS["problems"].get(name, {})
        secs = row.get("seconds", {})
        peers = [k for k in secs if any(k.startswith(f) for f in fams)]
        pk = row.get("best_polykern")
        if not peers or pk is None:
            out.append({"problem": name, "target": f"{what} <= {limit}", "met": None,
                        "why": "not measured (a contender is missing or failed: see status)"})
            continue
        peer = min(peers, key=lambda k: secs[k]["median"])
        r = _ratio(secs[pk]["rounds"], secs[peer]["rounds"])
        out.append({"problem": name, "target": f"{what} <= {limit}", "polykern": pk, "peer": peer, "ratio": r,
                    "met": r["median"] <= limit})
    for name in ORDER:
        v = RESULTS["problems"].get(name, {}).get("vulkan")
        if v and "ratio_raw" in v:
            out.append({"problem": name, "target": f"polykern vulkan / {v['against']} <= {VULKAN_LIMIT}",
                        "clock": v.get("clock"), "ratio": v["ratio_raw"], "ratio_host": v.get("ratio_host"),
                        "ratio_minus_launch": v.get("ratio_minus_launch"),
                        "met": v["ratio_raw"]["median"] <= VULKAN_LIMIT})
    if RESULTS.get("mode") == "dry-run":  # tiny sizes on CPU runtimes: the report's shape, not a measurement
        for t in out:
            t["met"] = None
    return out


def vulkan_summary(name: str, times: dict, contenders: list, floor: float) -> None:
    vk = [c for c in contenders if c.label.endswith("vulkan")]
    ref = next((k for k in ("polykern-cuda", "polykern-nvptx", "polykern-llvm") if k in times), None)
    if not vk or ref is None or vk[0].label not in times:
        return
    t = times[vk[0].label]
    row = {"against": ref, "clock": vk[0].clock, "launches_per_call": vk[0].launches, "launch_floor_s": floor,
           "ratio_raw": _ratio(t, times[ref])}
    host = vk[0].host_rounds if vk[0].clock == "vk-gpu" else t
    if vk[0].clock == "vk-gpu" and host:
        row["host_seconds"] = {"median": med(host), "min": min(host), "max": max(host), "rounds": list(host)}
        row["ratio_host"] = _ratio(host, times[ref])
    if floor and host:
        adj = [max(x - vk[0].launches * floor, 1e-9) for x in host]
        row["ratio_minus_launch"] = _ratio(adj, times[ref])
    RESULTS["problems"][name]["vulkan"] = row


# ------------------------------------------------------------------ building

def build_modules(targets: dict, sizes: dict) -> dict:
    """label -> built module (or the error, recorded) of every problem's kernels at these sizes; a label
    ending in "fast-math" is built with ``fast_math=True`` (docs/language.md "Fast math")."""
    import polykern as pk

    kernels = tp.all_kernels(sizes)
    mods = {}
    for label, target in targets.items():
        t0 = time.perf_counter()
        try:
            mods[label] = pk.build(kernels, targets=[target], fast_math=label.endswith("fast-math"))
            log(f"built {len(kernels)} kernels for {label} ({target}) in {time.perf_counter() - t0:.2f} s")
        except Exception as e:  # noqa: BLE001
            RESULTS["errors"][f"build {label}"] = short(e)
            log(f"build {label} ({target}) FAILED: {short(e)}")
            traceback.print_exc()
    return mods


def copy_bandwidth(place, rounds: int) -> float:
    """GB/s (bytes read + written) of ``cupy.copyto`` on 256 MiB: the memory-bound kernels' yardstick."""
    cp = place.cp
    src = cp.ones(1 << 26, cp.float32)
    dst = cp.empty_like(src)
    c = Contender("copy", lambda: cp.copyto(dst, src), "events", place, "peer")
    return 2 * src.nbytes / med(time_rounds([c], rounds, 0.03)["copy"]) / 1e9


def vulkan_floor(mod, place, rounds: int) -> float:
    """Seconds per call of an empty Vulkan launch (one group, no work): submit + fence wait."""
    import tuned_kernels as tk

    k = mod[tk.saxpy_wide.name]
    x, y = place.empty(4), place.empty(4)
    c = Contender("vulkan empty launch", lambda: k(0, 1.0, x, y, grid=1, block=64), place.clock, place, "polykern")
    t = time_rounds([c], rounds, 0.05)["vulkan empty launch"]
    if c.clock == "vk-gpu":
        RESULTS["vulkan_empty_launch_gpu_s"] = med(t)
        return med(c.host_rounds)
    return med(t)


# ------------------------------------------------------------------ one problem

def run_problem(name, size, mods, peers_fn, env, rounds, target_s, vk_floor) -> None:
    p = tp.PROBLEMS[name]
    row = RESULTS["problems"][name] = {"size": size, "status": {}, "notes": list(p.notes)}
    t0 = time.perf_counter()
    host = p.make(np.random.default_rng(15), size)
    want = p.reference(host)
    contenders = polykern_contenders(name, size, host, mods, env)
    contenders += peers_fn(name, host)
    ok = check_all(name, host, want, contenders)
    times = time_rounds(ok, rounds, target_s, row["status"]) if ok else {}
    ok = [c for c in ok if c.label in times]
    summarize(name, times, ok, size)
    vulkan_summary(name, times, ok, vk_floor)
    row["wall_s"] = time.perf_counter() - t0
    line = f"{name:9} " + "  ".join(f"{k} {med(v) * 1e3:.4f}ms" for k, v in times.items())
    log(line)


# ------------------------------------------------------------------ report

def table() -> str:
    lines = ["| problem | polykern (best target but Vulkan) | ms | best peer | ms | ratio (spread) | vulkan / cuda "
             "(GPU time where timed; host) | of copy bw or TFLOP/s: polykern, peer |",
             "|---|---|---|---|---|---|---|---|"]
    for name in ORDER:
        row = RESULTS["problems"].get(name)
        if not row:
            continue
        secs = row.get("seconds", {})
        pk, peer = row.get("best_polykern"), row.get("best_peer")
        r = row.get("ratio_vs_best_peer", {}).get(pk) if pk else None
        vk = row.get("vulkan", {}).get("ratio_raw")
        vk_host = row.get("vulkan", {}).get("ratio_host")
        bad = {k: v for k, v in row["status"].items() if v != "ok"}
        lines.append(f"| {name} | {pk or '—'} | {secs[pk]['median'] * 1e3:.4f} |" if pk else f"| {name} | — | — |")
        lines[-1] += (f" {peer} | {secs[peer]['median'] * 1e3:.4f} |" if peer else " — | — |")
        lines[-1] += (f" {r['median']:.3f} ({r['min']:.3f}–{r['max']:.3f}) |" if r else " — |")
        lines[-1] += (f" {vk['median']:.2f} ({vk['min']:.2f}–{vk['max']:.2f})"
                      + (f"; host {vk_host['median']:.2f}" if vk_host else "") + " |" if vk else " — |")
        rate = row.get("fraction_of_copy_bandwidth") or row.get("tflops") or {}
        lines[-1] += (f" {rate[pk]:.3g}, {rate[peer]:.3g} |" if pk in rate and peer in rate else " — |")
        for k, v in bad.items():
            lines.append(f"|  | {k}: {v} | | | | | | |")
    lines += ["", "| target | ratio | met |", "|---|---|---|"]
    for t in RESULTS.get("targets", []):
        r = t.get("ratio")
        lines.append(f"| {t['problem']}: {t['target']} | {r['median']:.3f} ({r['min']:.3f}–{r['max']:.3f})"
                     if r else f"| {t['problem']}: {t['target']} | {t.get('why', '—')}")
        lines[-1] += f" | {'MET' if t['met'] else 'missed' if t['met'] is False else '—'} |"
    if RESULTS["errors"]:
        lines += ["", "Missing or failed: " + "; ".join(f"{k}: {v}" for k, v in RESULTS["errors"].items())]
    if RESULTS["skipped"]:
        lines += ["", f"Skipped (time budget): {', '.join(RESULTS['skipped'])}"]
    return "\n".join(lines)


def plot(out: str) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot (the table and the JSON have every figure)"
    names = [n for n in ORDER if RESULTS["problems"].get(n, {}).get("best_polykern")]
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.8))
    ax = axes[0]
    for j, (key, label) in enumerate((("ratio_vs_best_peer", "polykern / best peer"),)):
        rs = [RESULTS["problems"][n][key][RESULTS["problems"][n]["best_polykern"]] for n in names]
        ys = [r["median"] for r in rs]
        err = [[y - r["min"] for y, r in zip(ys, rs)], [r["max"] - y for y, r in zip(ys, rs)]]
        ax.bar(range(len(names)), ys, 0.6, yerr=err, capsize=3, label=label)
        for i, y in enumerate(ys):
            ax.annotate(f"{y:.2f}", (i, y), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=20)
    ax.set_yscale("log")  # 0.5 and 2 equally far from 1
    ax.set_ylabel("time ratio, polykern / best peer (<1: polykern faster; log scale)")
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label="target 1.0 (matmul vs cuBLAS: 1.1)")
    ax.set_title("best polykern CUDA target vs the fastest peer (bars: median; whiskers: round spread)", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1]
    vn = [n for n in ORDER if RESULTS["problems"].get(n, {}).get("vulkan")]
    timed = any(RESULTS["problems"][n]["vulkan"].get("clock") == "vk-gpu" for n in vn)
    keys = ("ratio_raw", "ratio_host", "ratio_minus_launch") if timed else ("ratio_raw", "ratio_minus_launch")
    names_ = {"ratio_raw": "GPU timestamps per call" if timed else "host clock per call",
              "ratio_host": "host clock per call", "ratio_minus_launch": "host clock minus empty-launch time"}
    wd = 0.8 / len(keys)
    for j, key in enumerate(keys):
        ys = [RESULTS["problems"][n]["vulkan"].get(key, {}).get("median", 0) for n in vn]
        ax.bar([i + (j - (len(keys) - 1) / 2) * wd for i in range(len(vn))], ys, wd, label=names_[key])
    ax.set_xticks(range(len(vn)))
    ax.set_xticklabels(vn, rotation=20)
    ax.axhline(VULKAN_LIMIT, color="k", lw=0.8, ls="--", label=f"target {VULKAN_LIMIT}")
    ax.set_ylabel("polykern vulkan time / polykern CUDA time")
    ax.set_title("the same kernels on Vulkan", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(out, "gpu_peers.png")
    common.write_output(path, common.figure_bytes(fig, dpi=110))
    plt.close(fig)
    return f"wrote {path}"


# ------------------------------------------------------------------ main

def _vulkan_place():
    try:
        place = VulkanPlace()
        RESULTS["vulkan_clock"] = place.clock_note
        if place.timestamp_error:
            RESULTS["errors"]["vulkan timestamps"] = place.timestamp_error
        return place
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["vulkan runtime"] = short(e)
        log(f"Vulkan runtime unavailable: {short(e)}")
        return None


def triton_defs():
    try:
        import torch  # noqa: F401

        import peers_triton

        return peers_triton.tutorial_defs()
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["triton"] = f"missing: {short(e)}"
        log(f"Triton peers missing: {short(e)}")
        return None


def dry_validate(label: str, mod, arch: int) -> str:
    """The dry run's check of what a GPU driver would be given: PTX through ptxas (as the driver's JIT
    would assemble it), SPIR-V through spirv-val (Vulkan 1.1 rules, subgroup operations included)."""
    import shutil
    import subprocess

    if label in ("polykern-cuda", "polykern-nvptx"):
        if not shutil.which("ptxas"):
            return "built (ptxas not found: PTX not assembled)"
        ok, info = ptxas_info(mod, arch)
        RESULTS.setdefault("ptxas", {})[label] = info
        return "ok (ptxas)" if ok else f"FAILED: ptxas: {info}"
    if not shutil.which("spirv-val"):
        return "built (spirv-val not found)"
    for name, spv in mod.on("vulkan").payload.items():
        r = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", "-"], input=spv, capture_output=True,
                           timeout=120)
        if r.returncode:
            return f"FAILED: spirv-val {name}: {r.stderr.decode()[:400]}"
    return "ok (spirv-val)"


def dry_triton(arch: int) -> None:
    """Compile the Triton peers ahead of time when Triton is importable (a typo check without a GPU)."""
    try:
        import peers_triton
    except Exception as e:  # noqa: BLE001
        RESULTS["dry_run"]["triton"] = f"missing: {short(e)}"
        return
    res = {}
    for name in peers_triton.TUTORIAL_SIGNATURES:
        try:
            peers_triton.compile_tutorial(name, arch)
            res[name] = "compiled"
        except ImportError as e:
            res = f"missing: {short(e)}"
            break
        except Exception as e:  # noqa: BLE001
            res[name] = f"FAILED: {short(e)}"
    RESULTS["dry_run"]["triton"] = res
    log(f"triton (ahead of time, sm_{arch}): {res}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="polykern kernels against CuPy/CUB, Triton, torch, cuBLAS "
                                             "(see the module docstring)")
    ap.add_argument("--out", default=os.path.join(HERE, "out-gpu-peers"), help="output folder (gpu_peers.json, "
                    "gpu_peers.txt, gpu_peers.png)")
    ap.add_argument("--arch", type=int, default=90, help="sm_XX of the cuda/nvptx targets (default 90)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds, at least 5 (default 7)")
    ap.add_argument("--batch-s", type=float, default=0.03, help="seconds per contender per round (default 0.03)")
    ap.add_argument("--only", help="comma-separated problems (default: all: " + ",".join(ORDER) + ")")
    ap.add_argument("--budget-s", type=float, default=400, help="start no new problem after this many seconds")
    ap.add_argument("--no-vulkan", action="store_true", help="skip the Vulkan runs")
    ap.add_argument("--fast-math", action="store_true", help="also time cuda/nvptx builds with fast_math=True "
                    "(labelled 'polykern-cuda fast-math'; the row problems' tolerances admit approximate exp/rsqrt)")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: build for cuda/nvptx/vulkan, check tiny "
                    "problems on the runtimes here (llvm, vulkan) against NumPy, go through the report")
    ap.add_argument("--tiny", action="store_true", help="tiny problem sizes (implied by --dry-run)")
    ap.add_argument("--dry-targets", default="cuda,nvptx,vulkan",
                    help="--dry-run: the targets to build the full-size kernels for (default cuda,nvptx,vulkan)")
    ap.add_argument("--no-triton", action="store_true", help="--dry-run: skip compiling the Triton peers")
    args = ap.parse_args(argv)
    if args.rounds < 5 and not args.dry_run:
        ap.error("--rounds must be at least 5")
    common.output_folder(args.out)
    t_start = time.perf_counter()
    names = args.only.split(",") if args.only else ORDER
    unknown = [n for n in names if n not in tp.PROBLEMS]
    if unknown:
        ap.error(f"unknown problem(s) {unknown}; choose from {ORDER}")
    sizes = dict(tp.TINY if (args.dry_run or args.tiny) else tp.FULL)
    RESULTS["mode"] = "dry-run" if args.dry_run else "gpu"
    if not args.dry_run:
        try:
            import cupy  # noqa: F401
        except Exception as e:  # noqa: BLE001
            RESULTS["errors"]["cupy"] = f"missing: {short(e)}"
            log(f"CuPy is missing ({short(e)}): the GPU run needs it; --dry-run checks the kernels without a GPU")
            common.write_output(os.path.join(args.out, "gpu_peers.json"), json.dumps(RESULTS, indent=1, default=str))
            return 2
    RESULTS["machine"] = device_info(args.dry_run)
    RESULTS["sizes"] = sizes
    log(f"machine: {RESULTS['machine']}")
    arch = args.arch
    if args.dry_run:
        RESULTS["dry_run"] = {}
        # what the GPU run builds (full sizes) must build here too
        full = {"cuda": f"cuda -arch=sm_{arch}", "nvptx": f"nvptx -arch=sm_{arch}", "vulkan": "vulkan"}
        wanted = [t for t in args.dry_targets.split(",") if t]
        bad = [t for t in wanted if t not in full]
        if bad:
            ap.error(f"--dry-targets: unknown {bad}; choose from {sorted(full)}")
        for label, mod in build_modules({f"polykern-{t}": full[t] for t in wanted}, tp.FULL).items():
            v = RESULTS["dry_run"][f"build full {label}"] = dry_validate(label, mod, arch)
            log(f"full-size {label}: {v}")
            if v.startswith("FAILED"):
                RESULTS["errors"][f"build full {label}"] = v
        if not args.no_triton:
            dry_triton(arch)
        run_targets = {"polykern-llvm": "llvm"}
        if not args.no_vulkan:
            run_targets["polykern-vulkan"] = "vulkan"
        built = build_modules(run_targets, sizes)
        host = HostPlace()
        mods = {}
        if "polykern-llvm" in built:
            mods["polykern-llvm"] = (built["polykern-llvm"], host, "wall")
        if "polykern-vulkan" in built:
            vp = _vulkan_place()
            if vp:
                mods["polykern-vulkan"] = (built["polykern-vulkan"], vp, vp.clock)
        env = {"units": 4}

        def peers_fn(name, h):
            return numpy_peers(name, h, host)
    else:
        cuda = CupyPlace()
        env = {"units": RESULTS["machine"]["sms"]}
        targets_ = {"polykern-cuda": f"cuda -arch=sm_{arch}", "polykern-nvptx": f"nvptx -arch=sm_{arch}"}
        if args.fast_math:
            targets_.update({f"{k} fast-math": v for k, v in list(targets_.items())})
        if not args.no_vulkan:
            targets_["polykern-vulkan"] = "vulkan"
        built = build_modules(targets_, sizes)
        mods = {k: (built[k], cuda, "events") for k in built if not k.endswith("vulkan")}
        for k in mods:  # registers / spills / shared memory per kernel, where ptxas is on PATH
            try:
                import shutil

                if shutil.which("ptxas"):
                    RESULTS.setdefault("ptxas", {})[k] = ptxas_info(built[k], arch)[1]
            except Exception as e:  # noqa: BLE001
                RESULTS["errors"][f"ptxas {k}"] = short(e)
        if "polykern-vulkan" in built:
            vp = _vulkan_place()
            if vp:
                mods["polykern-vulkan"] = (built["polykern-vulkan"], vp, vp.clock)
        tri = triton_defs()
        torch_ok = True
        try:
            import torch  # noqa: F401
        except Exception as e:  # noqa: BLE001
            torch_ok = False
            RESULTS["errors"]["torch"] = f"missing: {short(e)}"

        def peers_fn(name, h):
            out = []
            for fam, make in (("cupy", lambda: cupy_peers(name, h, cuda)),
                              ("triton", lambda: triton_peers(name, h, cuda, tri) if tri is not None else []),
                              ("torch", lambda: torch_peers(name, h, cuda) if torch_ok else [])):
                try:
                    out += make()
                except Exception as e:  # noqa: BLE001
                    RESULTS["problems"][name]["status"][fam] = f"FAILED: {short(e)}"
            return out
    if not args.dry_run:
        try:
            RESULTS["copy_GBps"] = copy_bandwidth(CupyPlace(), args.rounds)
            log(f"device copy (cupy.copyto, 256 MiB): {RESULTS['copy_GBps']:.0f} GB/s (read + write)")
        except Exception as e:  # noqa: BLE001
            RESULTS["errors"]["copy bandwidth"] = short(e)
    vk_floor = 0.0
    if "polykern-vulkan" in mods:
        try:
            vk_floor = vulkan_floor(mods["polykern-vulkan"][0], mods["polykern-vulkan"][1], 5)
            RESULTS["vulkan_empty_launch_s"] = vk_floor
            log(f"vulkan empty launch: {vk_floor * 1e6:.1f} us on the host"
                + (f", {RESULTS['vulkan_empty_launch_gpu_s'] * 1e6:.1f} us on the GPU"
                   if "vulkan_empty_launch_gpu_s" in RESULTS else ""))
        except Exception as e:  # noqa: BLE001
            RESULTS["errors"]["vulkan empty launch"] = short(e)
    for name in names:
        if time.perf_counter() - t_start > args.budget_s:
            RESULTS["skipped"].append(name)
            log(f"{name}: skipped (budget of {args.budget_s:.0f} s spent)")
            continue
        try:
            run_problem(name, sizes[name], mods, peers_fn, env, args.rounds, args.batch_s, vk_floor)
        except Exception as e:  # noqa: BLE001
            RESULTS["errors"][f"problem {name}"] = short(e)
            log(f"{name} FAILED: {short(e)}")
            traceback.print_exc()
    RESULTS["targets"] = targets()
    RESULTS["wall_s"] = time.perf_counter() - t_start
    txt = table()
    log(txt)
    common.write_output(os.path.join(args.out, "gpu_peers.txt"), txt + "\n")
    try:
        log(plot(args.out))
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["plot"] = short(e)
        log(f"plot failed: {short(e)}")
    common.write_output(os.path.join(args.out, "gpu_peers.json"), json.dumps(RESULTS, indent=1, default=str))
    log(f"wrote {args.out}/gpu_peers.json in {RESULTS['wall_s']:.1f} s"
        + (f"; errors: {list(RESULTS['errors'])}" if RESULTS["errors"] else ""))
    failed = [n for n in names if any(v != "ok" and k.startswith("polykern")
                                      for k, v in RESULTS["problems"].get(n, {}).get("status", {}).items())]
    return 1 if failed or any(k.startswith("build") for k in RESULTS["errors"]) else 0


if __name__ == "__main__":
    sys.exit(main())
