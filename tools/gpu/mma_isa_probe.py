"""What each f16 GEMM runs on the tensor cores, read from its PTX (the matrix path's gap to cuBLAS, by measurement).

Run ON the GPU machine (CUDA, torch, Triton), from the repository root, in the environment of
tools/gpu/run_gpu_matrix.sh (GPU_EXTRA_CMD there, or by hand):

    python3 tools/gpu/mma_isa_probe.py [--variants dyn3bk64,async] [--size 4096]

For polykern's gemm_f16 variants (nvptx, sm_90) and for the Triton matmul tutorial's kernel as its
autotuner picks it at SIZE^3 (benchmarks/peers_triton.py), prints one line each: the instruction
counts that say which matrix path it takes (warpgroup ``wgmma.mma_async`` fed from shared memory, or
warp-level ``mma.sync`` fed from registers, with ``ldmatrix``; ``cp.async.bulk.tensor`` = TMA;
``cp.async`` = per-thread async copies; ``bar.sync`` barriers), and registers / shared bytes per block
where the toolchain reports them. Counts are static (in the PTX text), not executed instructions.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "examples"), os.path.join(ROOT, "benchmarks")]

#: label -> the PTX instruction prefix it counts
PATTERNS = {
    "wgmma": r"\bwgmma\.mma_async\b",
    "mma.sync": r"\bmma\.sync\b",
    "ldmatrix": r"\bldmatrix\b",
    "tma": r"\bcp\.async\.bulk\.tensor\b",
    "cp.async": r"\bcp\.async\.(?:ca|cg)\b",
    "bar.sync": r"\b(?:bar\.sync|barrier\.sync)\b",
}


def counts(ptx: str) -> str:
    return "  ".join(f"{k} {len(re.findall(p, ptx))}" for k, p in PATTERNS.items())


def polykern_lines(variants, arch):
    import gemm_f16 as G

    import polykern as pk

    for v in variants:
        kern = G.specialized(G.GPU_TILES, v)
        mod = pk.build([kern], targets=[f"nvptx -arch=sm_{arch}"]).on("cuda")
        ptx = mod.sources["ptx"]
        extra = ""
        try:
            f = mod[kern.name]
            extra = f"  registers {f.num_regs}" if getattr(f, "num_regs", None) else ""
        except Exception as e:  # noqa: BLE001 - report and go on
            extra = f"  (no function attributes: {type(e).__name__})"
        yield f"polykern nvptx {v:10s} {counts(ptx)}{extra}"


def triton_line(n):
    import peers_triton
    import torch

    mm = peers_triton.tutorial_defs()["matmul"]
    a = torch.randn((n, n), device="cuda", dtype=torch.float16)
    b = torch.randn((n, n), device="cuda", dtype=torch.float16)
    c = torch.empty((n, n), device="cuda", dtype=torch.float32)
    grid = lambda meta: (((n + meta["BLOCK_SIZE_M"] - 1) // meta["BLOCK_SIZE_M"])  # noqa: E731
                         * ((n + meta["BLOCK_SIZE_N"] - 1) // meta["BLOCK_SIZE_N"]),)
    mm[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    torch.cuda.synchronize()
    best = getattr(mm, "best_config", None)
    kern = mm[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    ptx = kern.asm["ptx"] if kern is not None and hasattr(kern, "asm") else ""
    if not ptx:  # an autotuner that returns nothing: the newest cached compile of the kernel
        caches = getattr(getattr(mm, "fn", None), "device_caches", None) or {}
        for cache in caches.values():
            for k in (cache[0].values() if isinstance(cache, tuple) else cache.values()):
                ptx = k.asm.get("ptx", "")
    regs = getattr(kern, "n_regs", None)
    shared = getattr(getattr(kern, "metadata", None), "shared", None)
    return (f"triton tutorial {counts(ptx)}  registers {regs}  shared {shared} B  config {best}"
            if ptx else f"triton tutorial: no PTX found (config {best})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="sync,async,dyn3bk64")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--arch", type=int, default=90)
    args = ap.parse_args(argv)
    for line in polykern_lines(args.variants.split(","), args.arch):
        print(line, flush=True)
    try:
        print(triton_line(args.size), flush=True)
    except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
        print(f"triton tutorial: unavailable ({type(e).__name__}: {e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
