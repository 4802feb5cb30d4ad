"""The matrix-engine attention benchmark: a fused attention forward (f16) on the matrix engine, polykern vs
torch's scaled_dot_product_attention and a Triton kernel.

    python benchmarks/gpu_attention.py --out OUT [--batch 4 --heads 16 --seq 4096 --dims 64,128] [--rounds 5]
    python benchmarks/gpu_attention.py --dry-run --out OUT     # any host: builds + a small CPU check, no GPU

Contenders (O = softmax(Q K^T / sqrt(d)) V, non-causal unless ``--causal``, Q, K, V, O f16 of shape
(batch * heads, seq, d)):
- polykern ``examples/attention_f16.py`` (online softmax through shared memory, K and V staged by
  pk.copy_async, see its docstring) built for ``cuda -arch=sm_XX`` (CUDA C, mma.sync, cp.async),
  ``nvptx -arch=sm_XX`` (LLVM, mma.sync, cp.async) and ``vulkan`` (SPV_KHR_cooperative_matrix on
  NVIDIA's driver; plain copies); on cuda also the variant staging with loads and stores
  ("polykern-cuda [sync staging]": what cp.async is worth, and a fallback figure);
- ``torch.nn.functional.scaled_dot_product_attention`` on (batch, heads, seq, d) f16 views of the same
  memory (torch picks its backend: flash, cuDNN or memory-efficient; recorded);
- a Triton attention forward written for this benchmark (benchmarks/peers_triton_attention.py).

Every contender is checked before timing on a sample (``--check-heads`` heads x 64 query rows) against
the float64 reference of examples/attention_f16.py: polykern within ``attention_f16.error_bound``
(f16 rounding of P and O, the scores' mma error), the peers within 4 times it (their rounding is
theirs); a wrong one is reported and not timed. Timing: ``--rounds`` rounds over all contenders,
interleaved; per round a batch of back-to-back calls, CUDA events on the legacy default stream (CUDA
contenders), Vulkan timestamp queries (or the host clock where the queue has none). Reported: median
seconds and TFLOP/s (4 * batch * heads * seq^2 * d flops, half that if causal) per contender and head
dim, the per-round time ratios polykern / peer (median, spread = min-max) and the issue's target
(polykern >= 50% of torch SDPA's throughput). Writes OUT/gpu_attention.json.

``--dry-run`` needs no GPU and no torch: it builds the GPU kernels for cuda (ptxas -v: registers,
shared memory, spills), nvptx (ptxas) and vulkan (spirv-val; POLYKERN_SPIRV_VAL names a SPIRV-Tools
2023.4+ spirv-val where the system's predates SPV_KHR_cooperative_matrix), compiles the Triton kernel
ahead of time where Triton is importable, runs the kernel on llvm at (2, 80, d) against the reference
and goes through the timing and reporting code with NumPy as the peer.
"""
import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import common  # noqa: E402,F401  (puts python/, examples/ and the backends on sys.path)
import attention_f16 as A  # noqa: E402
import matrix_bench as MB  # noqa: E402
from gpu_timing import (Contender, CupyPlace, HostPlace, VulkanPlace, device_info, log, med, short,  # noqa: E402
                       time_rounds, to_host)

SDPA_TARGET = 0.50  # polykern throughput / torch SDPA's
PEER_SLACK = 4.0  # peers are checked against 4 x the bound polykern is held to
CHECK_ROWS = 64

RESULTS = {"contenders": {}, "errors": {}, "ratios": {}, "targets": [], "dry_run": {}}


def flops(b, h, s, d, causal=False) -> float:
    """Of the two products (causal: half of them are skipped, as every contender skips them)."""
    return 4.0 * b * h * s * s * d / (2.0 if causal else 1.0)


def build(targets, subgroup, causal=False, tiles=None):
    """label -> module; cuda also gets the "sync" staging variant (timed as "polykern-cuda [sync staging]")."""
    return MB.build(targets, lambda label: A.kernels(
        subgroups=(subgroup,), stagings=A.STAGINGS if label == "polykern-cuda" else ("async",), causal=(causal,),
        tiles=tiles), RESULTS)


def sample(bh, seq, rng, heads):
    """(head indices, query rows) the check looks at."""
    hs = np.sort(rng.choice(bh, min(heads, bh), replace=False))
    rows = np.sort(rng.choice(seq, min(CHECK_ROWS, seq), replace=False))
    return hs, rows


def check(out, q, k, v, hs, rows, causal=False) -> float:
    """Worst error of ``out`` (bh, seq, d) on the sample, in units of attention_f16.error_bound."""
    sub = np.asarray(out).reshape(q.shape)[hs][:, rows]
    ref, bound = A.error_bound(q[hs][:, rows], k[hs], v[hs], causal, rows=rows)
    return float((np.abs(sub.astype(np.float64) - ref) / bound).max())


def contenders(shape, host, mods, places, sg_sizes, dry, peers=True, causal=False, tiles=None):
    """[(Contender, read O back as a flat host array, the error allowed in units of the bound)]."""
    b, h, s, d = shape
    bh = b * h
    q, k, v = host
    out = []
    for label, mod in mods.items():
        place = places[label]
        dq, dk, dv = (place.put(x) for x in host)
        sg = sg_sizes[label]
        clock = "events" if label in ("polykern-cuda", "polykern-nvptx") else (
            place.clock if isinstance(place, VulkanPlace) else "host")
        for staging in (A.STAGINGS if label == "polykern-cuda" and not dry else ("async",)):
            do = place.put(np.zeros(bh * s * d, np.float16))

            def fn(mod=mod, dq=dq, dk=dk, dv=dv, do=do, sg=sg, staging=staging):
                A.launch(mod, dq, dk, dv, do, bh, s, d, sg, causal, staging, (tiles or {}).get(d))
                return [do]

            name = label if staging == "async" else f"{label} [{staging} staging]"
            out.append((Contender(name, fn, clock, place, "polykern"), lambda do=do: to_host(do), 1.0))
    if dry:
        def numpy_attention():
            x = q.astype(np.float32) @ k.astype(np.float32).transpose(0, 2, 1) / np.float32(math.sqrt(d))
            if causal:
                x = np.where(np.tril(np.ones((s, s), bool)), x, -np.inf)
            p = np.exp(x - x.max(-1, keepdims=True))
            return [(p / p.sum(-1, keepdims=True)) @ v.astype(np.float32)]
        res = []
        c = Contender("numpy softmax(q k^T) v (f32)", lambda: (res.clear(), res.extend(numpy_attention()), res)[2],
                      "host", places["numpy"], "peer")
        out.append((c, lambda: res[0], PEER_SLACK))
        return out
    if not peers:
        return out
    cp = places["cupy"].cp
    try:
        import torch

        tq, tk, tv = (torch.as_tensor(cp.asarray(x.reshape(b, h, s, d)), device="cuda") for x in host)
        t_out = {}

        def sdpa():
            t_out["o"] = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
            return [t_out["o"]]
        RESULTS["torch_sdpa_backends"] = {
            name: bool(getattr(torch.backends.cuda, f"{name}_sdp_enabled", lambda: None)())
            for name in ("flash", "mem_efficient", "cudnn", "math")}
        out.append((Contender("torch SDPA (f16)", sdpa, "events", places["cupy"], "peer"),
                    lambda: t_out["o"].float().cpu().numpy().ravel(), PEER_SLACK))
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["torch"] = f"missing: {short(e)}"
        return out
    try:
        import peers_triton_attention as TA

        to = torch.empty((bh, s, d), dtype=torch.float16, device="cuda")
        xq, xk, xv = (x.view(bh, s, d) for x in (tq, tk, tv))

        def triton_fn():
            TA.launch(xq, xk, xv, to, bh, s, d, A.LOG2E / math.sqrt(d), causal)
            return [to]
        out.append((Contender("Triton attention fwd (benchmarks/peers_triton_attention.py)", triton_fn, "events",
                              places["cupy"], "peer"), lambda: to.float().cpu().numpy().ravel(), PEER_SLACK))
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["triton"] = f"missing: {short(e)}"
    return out


def run_dim(shape, mods, places, sg_sizes, args, rng) -> None:
    b, h, s, d = shape
    key = f"d{d}"
    row = RESULTS["contenders"].setdefault(key, {})
    q, k, v = (rng.standard_normal((b * h, s, d), dtype=np.float32).astype(np.float16) for _ in range(3))
    hs, rows = sample(b * h, s, rng, args.check_heads)
    items = contenders(shape, (q, k, v), mods, places, sg_sizes, args.dry_run, not args.no_peers, args.causal,
                       args.tiles)
    good = MB.checked([(c, lambda read=read: check(read(), q, k, v, hs, rows, args.causal), slack)
                       for c, read, slack in items], row, f"d={d} ")
    failed = {}
    times = time_rounds(good, args.rounds, args.target_s, status=failed) if good else {}
    for label, why in failed.items():  # checked, then failed while timed
        row[label]["timing"] = why
    for c in good:
        ts = times.get(c.label)
        if ts:
            row[c.label].update(median_s=med(ts), tflops=flops(b, h, s, d, args.causal) / med(ts) / 1e12, rounds_s=ts)
    summarize(key, times)


def summarize(key: str, times: dict) -> None:
    pk_labels = [k for k in times if k.startswith("polykern")]
    peers = [k for k in times if not k.startswith("polykern")]
    for p in pk_labels:
        for q in peers:
            RESULTS["ratios"][f"{key}: {p} / {q}"] = MB.ratio(times[p], times[q])
    sdpa = [q for q in peers if "SDPA" in q]
    for p in pk_labels:
        if sdpa:
            r = MB.ratio(times[sdpa[0]], times[p])  # throughput ratio = time(SDPA) / time(polykern)
            RESULTS["targets"].append({"what": f"{key}: {p} throughput / {sdpa[0]}", "value": r,
                                       "target": f">= {SDPA_TARGET}", "met": bool(r) and r["median"] >= SDPA_TARGET})


def table() -> str:
    lines = [f"{'head dim':8s} {'contender':62s} {'check':8s} {'median ms':>10s} {'TFLOP/s':>9s}"]
    for key, row in RESULTS["contenders"].items():
        for label, r in row.items():
            lines.append(f"{key:8s} {label:62s} {str(r.get('check'))[:8]:8s} {MB.time_cells(r)}")
    return "\n".join(lines + MB.closing_lines(RESULTS))


def parse_tiles(text: str) -> dict:
    """"64=32x32,128=32x32" -> {64: (32, 32), 128: (32, 32)}."""
    out = {}
    for part in filter(None, text.split(",")):
        d, _, bm_bn = part.partition("=")
        bm, _, bn = bm_bn.partition("x")
        try:
            out[int(d)] = (int(bm), int(bn))
        except ValueError:
            raise argparse.ArgumentTypeError(f"--tiles takes d=BMxBN[,...], e.g. 64=32x32; got {part!r}") from None
    return out


def dry_triton(arch: int, dims) -> None:
    try:
        import peers_triton_attention as TA

        for d in dims:
            TA.compile_for(d, arch)
        RESULTS["dry_run"]["triton"] = "compiled"
    except ModuleNotFoundError as e:
        RESULTS["dry_run"]["triton"] = f"missing: {short(e)}"
    except Exception as e:  # noqa: BLE001
        RESULTS["dry_run"]["triton"] = f"FAILED: {short(e)}"
    log(f"triton: {RESULTS['dry_run']['triton']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--target-s", type=float, default=0.04, help="seconds per contender per round (batch size)")
    ap.add_argument("--check-heads", type=int, default=2)
    ap.add_argument("--only", default="cuda,nvptx,vulkan", help="polykern targets to run")
    ap.add_argument("--causal", action="store_true", help="causal attention (all contenders)")
    ap.add_argument("--tiles", type=parse_tiles, default={},
                    help="polykern tiles other than attention_f16.CONFIGS', e.g. 64=32x32,128=32x32 (d=BMxBN)")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--no-peers", action="store_true", help="polykern only (e.g. under a profiler)")
    args = ap.parse_args(argv)
    common.output_folder(args.out)
    dry = args.dry_run
    dims = [int(x) for x in args.dims.split(",")]
    RESULTS["device"] = device_info(dry)
    RESULTS["config"] = {"batch": args.batch, "heads": args.heads, "seq": args.seq, "dims": dims,
                         "causal": args.causal, "rounds": args.rounds, "arch": args.arch,
                         "tiles": {d: args.tiles.get(d, A.CONFIGS[d]) for d in dims}, "dry_run": dry}
    want = set(args.only.split(","))
    targets = {f"polykern-{k}": t for k, t in (("cuda", f"cuda -arch=sm_{args.arch}"),
                                               ("nvptx", f"nvptx -arch=sm_{args.arch}"), ("vulkan", "vulkan"))
               if k in want}
    mods = build(targets, 32, args.causal, args.tiles)
    # registers, shared memory, spills (ptxas -v) also on the GPU host: what the occupancy is
    MB.validate_all(mods if dry else {k: m for k, m in mods.items() if k != "polykern-vulkan"}, args.arch, RESULTS)
    if dry:
        dry_triton(args.arch, dims)
        run_mods = build({"polykern-llvm": "llvm"}, 8, args.causal, args.tiles)
        places = {"polykern-llvm": HostPlace(), "numpy": HostPlace()}
        shape = (1, 2, 80)
    else:
        run_mods = mods
        places = {"cupy": CupyPlace()}
        for label in run_mods:
            places[label] = VulkanPlace() if label == "polykern-vulkan" else places["cupy"]
        shape = (args.batch, args.heads, args.seq)
    sg_sizes = MB.subgroup_sizes(run_mods, A.device_subgroup_size, RESULTS)
    rng = np.random.default_rng(0)
    for d in dims:
        run_dim(shape + (d,), run_mods, places, sg_sizes, args, rng)
    path = os.path.join(args.out, "gpu_attention.json")
    common.write_output(path, json.dumps(RESULTS, indent=1, default=str))
    log(table())
    log(f"wrote {path}")
    bad = [f"{key}: {k}" for key, row in RESULTS["contenders"].items() for k, v in row.items()
           if k.startswith("polykern") and v.get("check") != "ok"]
    bad += [k for k in RESULTS["errors"] if k.startswith("polykern")]
    return 1 if bad else 0  # 0: every polykern kernel built and checked correct


if __name__ == "__main__":
    raise SystemExit(main())
