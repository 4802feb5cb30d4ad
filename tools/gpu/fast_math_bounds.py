"""ON the GPU machine: measure fast math on the CUDA targets (docs/correctness.md "Fast math").

Runs every ``pk.fast_<op>`` of ``polykern.numerics.FAST_MATH_OPS`` over many f32 inputs (random over every
binade, plus specials: polykern.testing.fast_math_sweep) on ``cuda`` (CUDA C through NVRTC) and ``nvptx``
(LLVM's NVPTX backend), and prints, per op, the largest error in ulps of the correctly rounded result,
where it occurred, the largest fraction of ``numerics.FAST_MATH``'s promise any result used, and the
results outside the promise. The figures go into FAST_MATH (its ``source`` says "measured on ...").

    python tools/gpu/fast_math_bounds.py                 # cuda and nvptx, 2**22 inputs per op
    python tools/gpu/fast_math_bounds.py -n 1000000 --targets "cuda -arch=sm_90" nvptx

Needs polykern with its CUDA backend and runtime (cuda-bindings) and a GPU; no pytest. Exit status 1 when
a result is outside its promise (the table must then be loosened, or the lowering fixed).
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", nargs="+", default=["cuda", "nvptx"], help="target strings (default: cuda nvptx)")
    ap.add_argument("-n", type=int, default=1 << 22, help="random inputs per op (default 2**22)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    from polykern.testing.fast_math_sweep import run_sweeps

    outside = 0
    for target in args.targets:
        print(f"# {target}: fast math, {args.n} random inputs per op, seed {args.seed}", flush=True)
        for sweep in run_sweeps(target, n=args.n, seed=args.seed).values():
            print(sweep.line(), flush=True)
            outside += sweep.failures
    print("ALL WITHIN THE PROMISES" if not outside else f"{outside} RESULTS OUTSIDE THE PROMISES", flush=True)
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
