"""Hopper attention forward (examples/attention_hopper.py, cuda -arch=sm_90a) against torch's
scaled_dot_product_attention (its fastest backend on the device: flash / cuDNN / efficient, recorded) and the
Triton attention of benchmarks/peers_triton_attention.py, on the GPU machine: every contender checked against
float64 on two heads first, then interleaved timing rounds (CUDA events), median ratio with its spread.

    python benchmarks/gpu_attention_hopper.py --out DIR [--batch 4 --heads 16] [--seqs 4096 8192] [--dims 64 128]
                                              [--causal both|no|yes] [--rounds 5]
"""
import argparse
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

import common  # noqa: E402
import attention_hopper as AT  # noqa: E402
from gpu_hopper import device_log, rounds_timing  # noqa: E402

import polykern as pk  # noqa: E402

TARGET = "cuda -arch=sm_90a"
#: The issue's targets: polykern / torch SDPA throughput, polykern / Triton.
SDPA_TARGET, TRITON_TARGET = 0.70, 1.0


def run_case(b, h, seq, d, causal, rounds, bn, stages, triton_attn, log):
    import torch

    bh = b * h
    g = torch.Generator(device="cuda").manual_seed(seq + d)
    q, k, v = (torch.randn(bh * seq, d, device="cuda", generator=g, dtype=torch.float16) for _ in range(3))
    outs = {n: torch.empty(bh * seq, d, device="cuda", dtype=torch.float16) for n in ("polykern", "triton")}
    kern = pk.build(AT.make_attention(d, causal, bn, stages), TARGET)["attention_hopper"]
    args = AT.launch_args(q, k, v, outs["polykern"], bh, seq, d)
    shared = AT.shared_elems(d, bn, stages)
    fns = {"polykern": lambda: kern(*args, grid=(seq // AT.BM, bh, 1), block=(384, 1, 1), shared_size=shared)}
    q4, k4, v4 = (x.view(b, h, seq, d) for x in (q, k, v))
    sdpa_out = {}

    def sdpa():
        sdpa_out["o"] = torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=causal)
        return sdpa_out["o"]
    fns["torch-sdpa"] = sdpa
    if triton_attn is not None:
        scale = math.log2(math.e) / math.sqrt(d)
        fns["triton"] = lambda: triton_attn.launch(q.view(bh, seq, d), k.view(bh, seq, d), v.view(bh, seq, d),
                                                   outs["triton"].view(bh, seq, d), bh, seq, d, scale, causal)
    # check on two heads (the first and the last) against float64
    errs = {}
    for name, f in fns.items():
        f()
    torch.cuda.synchronize()
    for hd in (0, bh - 1):
        sl = slice(hd * seq, (hd + 1) * seq)
        s = (q[sl].double() @ k[sl].double().t()) / math.sqrt(d)
        if causal:
            s = s.masked_fill(torch.ones(seq, seq, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
        ref = torch.softmax(s, -1) @ v[sl].double()
        for name in fns:
            got = outs[name][sl] if name in outs else sdpa_out["o"].reshape(bh * seq, d)[sl]
            errs[name] = max(errs.get(name, 0.0), float((got.double() - ref).abs().max()))
    ok = errs["polykern"] <= max(4 * errs["torch-sdpa"], 4e-3)
    log(f"check b{b} h{h} seq {seq} d {d}{' causal' if causal else ''}: max |O - float64| "
        + ", ".join(f"{k} {v:.3g}" for k, v in errs.items()) + f" -> {'OK' if ok else 'WRONG'}")
    if not ok:
        return {"case": [b, h, seq, d, causal], "ok": False, "errors": errs}
    times = rounds_timing(fns, rounds)
    flop = 4.0 * bh * seq * seq * d * (0.5 if causal else 1.0)
    res = {"case": [b, h, seq, d, causal], "ok": True, "errors": errs, "bn": bn, "stages": stages,
           "tflops": {k: flop / statistics.median(v) / 1e12 for k, v in times.items()}, "ratios": {}}
    for ref_name, target in (("torch-sdpa", SDPA_TARGET), ("triton", TRITON_TARGET)):
        if ref_name in times:
            r = sorted(times[ref_name][i] / times["polykern"][i] for i in range(rounds))
            res["ratios"][f"polykern/{ref_name}"] = {"median": statistics.median(r), "min": r[0], "max": r[-1],
                                                     "target": target, "met": statistics.median(r) >= target}
    log(f"b{b} h{h} seq {seq} d {d}{' causal' if causal else ''} BN={bn}: "
        + ", ".join(f"{k} {v:.0f}" for k, v in res["tflops"].items()) + " TFLOP/s; "
        + ", ".join(f"{k} {v['median']:.3f} ({v['min']:.3f}-{v['max']:.3f}, target {v['target']})"
                    for k, v in res["ratios"].items()))
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seqs", nargs="*", type=int, default=[4096, 8192])
    ap.add_argument("--dims", nargs="*", type=int, default=[64, 128])
    ap.add_argument("--causal", default="both", choices=("both", "no", "yes"))
    ap.add_argument("--bn", type=int, default=128)
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-triton", action="store_true")
    a = ap.parse_args(argv)
    log, lines = device_log()
    triton_attn = None
    if not a.no_triton:
        try:
            import peers_triton_attention as triton_attn
            triton_attn.kernel()
        except Exception as e:  # noqa: BLE001
            triton_attn = None
            log(f"triton unavailable: {type(e).__name__}: {e}")
    causals = {"both": (False, True), "no": (False,), "yes": (True,)}[a.causal]
    results = []
    for d in a.dims:
        for seq in a.seqs:
            for causal in causals:
                try:
                    results.append(run_case(a.batch, a.heads, seq, d, causal, a.rounds, a.bn, a.stages, triton_attn,
                                            log))
                except Exception as e:  # noqa: BLE001
                    log(f"d {d} seq {seq} causal {causal}: FAILED {type(e).__name__}: {str(e)[:800]}")
                    results.append({"case": [a.batch, a.heads, seq, d, causal], "failed": f"{type(e).__name__}: {e}"})
    if a.out:
        common.write_output(os.path.join(common.output_folder(a.out), "gpu_attention_hopper.json"),
                            json.dumps({"results": results, "log": lines}, indent=1))
    return 0 if all(r.get("ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
