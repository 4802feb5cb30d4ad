"""ON the GPU machine: examples/row_reduction.py (one subgroup per row, a collective under subgroup-uniform
control flow) against torch.sum(x, 1) and a Triton one-program-per-row kernel, timed with CUDA events over
interleaved rounds; prints each contender's median and the median ratio polykern / best peer (spread).

    python tools/gpu/row_reduction_probe.py [--rows 16384] [--cols 4096] [--rounds 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))


def _triton_rows():
    import triton
    import triton.language as tl

    @triton.jit
    def row_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
        tl.store(out_ptr + row, tl.sum(acc, axis=0))

    return row_sum


def main(argv=None) -> int:
    import torch
    import polykern as pk
    from row_reduction import row_sums

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args(argv)
    x = torch.randn(a.rows, a.cols, device="cuda", dtype=torch.float32)
    want = x.double().sum(1)
    out = {}
    contenders = {}
    for t in ("cuda -arch=sm_90", "nvptx -arch=sm_90"):
        k = pk.build([row_sums], targets=[t])["row_sums"]
        o = torch.zeros(a.rows, device="cuda")
        for block in (256, 512):
            grid = max(1, a.rows // (block // 32))
            contenders[f"polykern {t.split()[0]} block {block}"] = (
                lambda k=k, o=o, block=block, grid=grid: (k(a.rows, a.cols, x, o, grid=grid, block=block), o)[1])
    contenders["torch.sum(x, 1)"] = lambda: x.sum(1)
    try:
        tri = _triton_rows()
        o_t = torch.zeros(a.rows, device="cuda")
        contenders["triton row sum (BLOCK 1024)"] = lambda: (tri[(a.rows,)](x, o_t, a.cols, BLOCK=1024), o_t)[1]
    except Exception as e:  # noqa: BLE001
        print(f"triton: {type(e).__name__}: {e}")
    for name, fn in contenders.items():
        got = fn().double()
        err = (got - want).abs().max().item()
        tol = 1e-5 * x.abs().double().sum(1).max().item()
        print(f"{name}: max error {err:.2e} (tolerance {tol:.2e}) {'ok' if err <= tol else 'WRONG'}")
        out[name] = []
    for _ in range(a.rounds):
        for name, fn in contenders.items():
            fn()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(a.reps):
                fn()
            e.record()
            e.synchronize()
            out[name].append(s.elapsed_time(e) / a.reps)
    peers = [n for n in out if not n.startswith("polykern")]
    ours = [n for n in out if n.startswith("polykern")]
    best_peer = min(peers, key=lambda n: statistics.median(out[n]))
    best = min(ours, key=lambda n: statistics.median(out[n]))
    for n, v in out.items():
        print(f"{n:40s} median {statistics.median(v) * 1e3:8.1f} us")
    r = [p / q for p, q in zip(out[best], out[best_peer])]
    print(f"{best} / {best_peer}: median {statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f}), "
          f"{a.rows} x {a.cols} f32, {a.rounds} rounds of {a.reps}, {torch.cuda.get_device_name()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
