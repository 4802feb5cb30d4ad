"""The matrix-engine benchmark: an f16 GEMM with f32 accumulation on the matrix engine, polykern vs cuBLAS.

    python benchmarks/gpu_matrix.py --out OUT [--size 4096] [--rounds 7] [--arch 90]
    python benchmarks/gpu_matrix.py --dry-run --out OUT     # any host: builds + a small CPU check, no GPU

Contenders (C = A @ B, A and B f16 row-major, size^3):
- polykern ``examples/gemm_f16.py`` (fragments: 128 x 128 x 32 group tiles, eight 32 x 64 subgroup
  tiles) built for ``cuda -arch=sm_XX`` (CUDA C, mma.sync), ``nvptx -arch=sm_XX`` (LLVM, mma.sync) and
  ``vulkan`` (SPV_KHR_cooperative_matrix on NVIDIA's driver); C in f32. Each in several variants
  (``--variants``, ``gemm_f16.VARIANTS``): ``polykern-<target>`` is ``STAGES=1`` (staging through
  registers, the measured baseline), ``polykern-<target>-async`` a 2-stage shared ring filled by
  ``pk.copy_async`` (cp.async on sm_80+, plain copies on Vulkan), ``-async4`` a 4-stage one at
  BK = 16 and ``-async64`` the 2-stage ring with 64 x 64 subgroup tiles (4 subgroups); on cuda and
  nvptx also rings in dynamic shared memory (over CUDA's 48 KiB static limit): ``-dyn3`` / ``-dyn4``
  (3 / 4 stages at BK = 32), ``-dyn3bk64`` (3 stages at BK = 64) and ``-dyn4wide`` (4 stages at BK = 32,
  128 x 256 group tiles);
- cuBLAS through CuPy (``cupy.matmul`` of f16 arrays: f16 out, f32 compute) and through torch
  (``torch.matmul``, f16 out) where torch is importable;
- Triton's matmul tutorial (benchmarks/peers_triton.py, autotuned) on f16 inputs, C in f32.

Every contender is checked before timing (64 sampled rows against a float64 product: polykern within
``numerics.mma_error_bound``, f16-output peers within 2^-9 relative to the row's |A| @ |B|); a wrong
one is reported and not timed. Timing: ``--rounds`` rounds over all contenders, interleaved; per
round a batch of back-to-back calls, CUDA events on the legacy default stream (CUDA contenders), the
host clock for Vulkan (each launch submitted and waited for; the empty-launch time is reported).
Reported: median seconds and TFLOP/s per contender, polykern / cuBLAS time ratios (median of the
per-round ratios, spread = min-max), the issue's targets (CUDA >= 60% of cuBLAS's throughput, Vulkan
within 1.5x of CUDA). Writes OUT/gpu_matrix.json.

``--dry-run`` needs no GPU: it builds the full-size kernel for cuda (NVRTC/nvcc; ptxas -v:
registers, shared memory), nvptx (ptxas) and vulkan (spirv-val; POLYKERN_SPIRV_VAL names a
SPIRV-Tools 2023.4+ spirv-val where the system's predates SPV_KHR_cooperative_matrix), runs the GEMM
on llvm at 256^3 against NumPy, and goes through the timing and reporting code with NumPy's matmul
as the peer.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import common  # noqa: E402,F401  (puts python/, examples/ and the backends on sys.path)
import gemm_f16 as G  # noqa: E402
import matrix_bench as MB  # noqa: E402
from gpu_timing import (Contender, CupyPlace, HostPlace, VulkanPlace, device_info, log, med, short,  # noqa: E402
                       time_rounds, to_host)

CUDA_TARGET = 0.60  # polykern cuda throughput / cuBLAS's
VULKAN_LIMIT = 1.5  # polykern vulkan time / polykern cuda time
CHECK_ROWS = 64

RESULTS = {"contenders": {}, "errors": {}, "ratios": {}, "targets": [], "dry_run": {}}


def variants_for(label: str, variants) -> tuple:
    """The variants ``label``'s module runs: Vulkan leaves out the dynamic-shared rings (its copies are
    plain, and NVIDIA's Vulkan offers 48 KiB of shared memory, less than their 55-80 KiB)."""
    return tuple(v for v in variants if label != "polykern-vulkan" or not G.VARIANTS[v].dynamic)


def build(targets, tiles, variants=tuple(G.VARIANTS)):
    return MB.build(targets, lambda label: G.kernels(tiles, variants_for(label, variants)), RESULTS)


def check_rows(c, a, b, rows, f16_out: bool) -> float:
    """Worst error in units of what is allowed (<= 1 passes)."""
    if not f16_out:
        return G.check(c, a, b, rows)
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a[rows].astype(np.float64)) @ np.abs(b.astype(np.float64)) + 1e-30
    return float((np.abs(c[rows].astype(np.float64) - ref) / (scale * 2.0 ** -9)).max())


def variant_label(label: str, variant: str) -> str:
    """The contender of ``variant`` of the module ``label``: "polykern-cuda", "polykern-cuda-async"."""
    return label if variant == "sync" else f"{label}-{variant}"


def contenders(size, a, b, mods, places, sg_sizes, dry, peers=True, variants=tuple(G.VARIANTS)):
    """[(Contender, read C back as an (n, n) host array, f16 output?)]; ``peers``: cuBLAS, Triton too."""
    out = []
    n = size
    tiles = G.GPU_TILES if not dry else G.SMALL_TILES
    for label, mod in mods.items():
        place = places[label]
        for v in variants_for(label, variants):
            da, db, dc = place.put(a), place.put(b), place.empty(n * n)
            sg = sg_sizes[label]

            def fn(mod=mod, da=da, db=db, dc=dc, sg=sg, v=v):
                G.launch(mod, da, db, dc, n, n, n, tiles, sg, v)
                return [dc]

            clock = "events" if label in ("polykern-cuda", "polykern-nvptx") else "host"
            c = Contender(variant_label(label, v), fn, clock, place, "polykern")
            out.append((c, lambda dc=dc: to_host(dc).reshape(n, n), False))
    if dry:
        place = places["numpy"]
        c = Contender("numpy matmul (f32)", lambda: [a.astype(np.float32) @ b.astype(np.float32)], "host", place, "peer")
        out.append((c, lambda: (a.astype(np.float32) @ b.astype(np.float32)), False))
        return out
    if not peers:
        return out
    cp = places["cupy"].cp
    ga, gb = cp.asarray(a), cp.asarray(b)
    gc = cp.empty((n, n), cp.float16)
    out.append((Contender("cuBLAS via cupy.matmul (f16 out, f32 compute)", lambda: [cp.matmul(ga, gb, out=gc)],
                          "events", places["cupy"], "peer"), lambda: cp.asnumpy(gc), True))
    try:
        import torch

        ta, tb = torch.as_tensor(ga, device="cuda"), torch.as_tensor(gb, device="cuda")
        tc = torch.empty((n, n), dtype=torch.float16, device="cuda")
        out.append((Contender("cuBLAS via torch.matmul (f16 out)", lambda: [torch.matmul(ta, tb, out=tc)], "events",
                              places["cupy"], "peer"), lambda: tc.float().cpu().numpy(), True))
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["torch"] = f"missing: {short(e)}"
    try:
        import peers_triton
        import torch

        mm = peers_triton.tutorial_defs()["matmul"]
        ta, tb = torch.as_tensor(ga, device="cuda"), torch.as_tensor(gb, device="cuda")
        tc32 = torch.empty((n, n), dtype=torch.float32, device="cuda")

        def triton_fn():
            grid = lambda meta: (((n + meta["BLOCK_SIZE_M"] - 1) // meta["BLOCK_SIZE_M"])  # noqa: E731
                                 * ((n + meta["BLOCK_SIZE_N"] - 1) // meta["BLOCK_SIZE_N"]),)
            mm[grid](ta, tb, tc32, n, n, n, ta.stride(0), ta.stride(1), tb.stride(0), tb.stride(1),
                     tc32.stride(0), tc32.stride(1))
            return [tc32]

        out.append((Contender("Triton matmul tutorial (f16 in, f32 out)", triton_fn, "events", places["cupy"], "peer"),
                    lambda: tc32.cpu().numpy(), False))
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["triton"] = f"missing: {short(e)}"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--target-s", type=float, default=0.05, help="seconds per contender per round (batch size)")
    ap.add_argument("--only", default="cuda,nvptx,vulkan", help="polykern targets to run")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--no-peers", action="store_true", help="polykern only (e.g. under a profiler)")
    ap.add_argument("--variants", default=",".join(G.VARIANTS),
                    help="gemm_f16 variants (gemm_f16.VARIANTS): sync (STAGES=1, the baseline), async (a 2-stage "
                    "pk.copy_async ring), async4 (4 stages, BK=16), async64 (the 2-stage ring, 64x64 subgroup "
                    "tiles), dyn3/dyn4 (3/4 stages, BK=32, dynamic shared memory), dyn3bk64 (3 stages, BK=64), "
                    "dyn4wide (dyn4 at 128x256)")
    args = ap.parse_args(argv)
    variants = tuple(args.variants.split(","))
    common.output_folder(args.out)
    dry = args.dry_run
    RESULTS["device"] = device_info(dry)
    RESULTS["config"] = {"size": args.size, "rounds": args.rounds, "arch": args.arch, "tiles": G.GPU_TILES,
                         "variants": {v: G.config(G.GPU_TILES, v) for v in variants}, "dry_run": dry}
    want = set(args.only.split(","))
    targets = {f"polykern-{k}": t for k, t in (("cuda", f"cuda -arch=sm_{args.arch}"),
                                               ("nvptx", f"nvptx -arch=sm_{args.arch}"), ("vulkan", "vulkan"))
               if k in want}
    mods = build(targets, G.GPU_TILES, variants)
    if dry:
        MB.validate_all(mods, args.arch, RESULTS)
        size = 256
        run_mods = build({"polykern-llvm": "llvm"}, G.SMALL_TILES, variants)
        places = {"polykern-llvm": HostPlace(), "numpy": HostPlace()}
    else:
        size = args.size
        run_mods = mods
        places = {"cupy": CupyPlace()}
        for label in run_mods:
            places[label] = VulkanPlace() if label == "polykern-vulkan" else places["cupy"]
    sg_sizes = MB.subgroup_sizes(run_mods, G.device_subgroup_size, RESULTS)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float16)
    b = rng.standard_normal((size, size)).astype(np.float16)
    rows = np.sort(rng.choice(size, min(CHECK_ROWS, size), replace=False))
    items = contenders(size, a, b, run_mods, places, sg_sizes, dry, not args.no_peers, variants)
    good = MB.checked([(c, lambda read=read, f16_out=f16_out: check_rows(read(), a, b, rows, f16_out), 1.0)
                       for c, read, f16_out in items], RESULTS["contenders"])
    times = time_rounds(good, args.rounds, args.target_s) if good else {}
    flop = 2.0 * size ** 3
    for c in good:
        ts = times[c.label]
        RESULTS["contenders"][c.label].update(median_s=med(ts), tflops=flop / med(ts) / 1e12, rounds_s=ts)
    summarize(times, dry)
    path = os.path.join(args.out, "gpu_matrix.json")
    common.write_output(path, json.dumps(RESULTS, indent=1, default=str))
    log(table())
    log(f"wrote {path}")
    bad = [k for k, v in RESULTS["contenders"].items() if k.startswith("polykern") and v.get("check") != "ok"]
    bad += [k for k in RESULTS["errors"] if k.startswith("polykern")]
    return 1 if bad else 0  # 0: every polykern kernel built and checked correct


def summarize(times: dict, dry: bool) -> None:
    labels = list(times)
    pk_labels = [k for k in labels if k.startswith("polykern")]
    peers = [k for k in labels if not k.startswith("polykern")]
    for p in pk_labels:
        for q in peers:
            RESULTS["ratios"][f"{p} / {q}"] = MB.ratio(times[p], times[q])
    for p in pk_labels:  # what a variant gains: its time / the baseline's ("polykern-cuda-dyn4" / "polykern-cuda")
        base = p.rsplit("-", 1)[0]
        if base in times:
            RESULTS["ratios"][f"{p} / {base}"] = MB.ratio(times[p], times[base])
    blas = [q for q in peers if "cuBLAS" in q]
    for p in [k for k in pk_labels if k.startswith(("polykern-cuda", "polykern-nvptx"))]:
        if blas:
            best = min(blas, key=lambda q: med(times[q]))
            r = MB.ratio(times[best], times[p])  # throughput ratio = time(cuBLAS) / time(polykern)
            RESULTS["targets"].append({"what": f"{p} throughput / {best}", "value": r, "target": f">= {CUDA_TARGET}",
                                       "met": bool(r) and r["median"] >= CUDA_TARGET})
    if "polykern-vulkan" in times and "polykern-cuda" in times:
        r = MB.ratio(times["polykern-vulkan"], times["polykern-cuda"])
        RESULTS["targets"].append({"what": "polykern-vulkan time / polykern-cuda time", "value": r,
                                   "target": f"<= {VULKAN_LIMIT}", "met": r["median"] <= VULKAN_LIMIT})


def table() -> str:
    lines = [f"{'contender':58s} {'check':8s} {'median ms':>10s} {'TFLOP/s':>9s}"]
    for label, r in RESULTS["contenders"].items():
        lines.append(f"{label:58s} {str(r.get('check'))[:8]:8s} {MB.time_cells(r)}")
    return "\n".join(lines + MB.closing_lines(RESULTS))


if __name__ == "__main__":
    raise SystemExit(main())
