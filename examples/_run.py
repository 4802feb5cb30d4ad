"""Shared command-line driver for the examples: build for targets, run on a device, check against NumPy."""
from __future__ import annotations

import argparse
import sys

import polykern as pk


def main(kernels, run_and_check, default_targets=("llvm",)):
    """``run_and_check(mod, rng) -> str`` runs the example on ``mod`` and returns a one-line summary."""
    import numpy as np

    ap = argparse.ArgumentParser()
    ap.add_argument("--target", action="append", help="target string (repeatable), default: llvm")
    ap.add_argument("--on", help="run on this module kind (default: first runnable)")
    ap.add_argument("-o", "--output", help="also export the artifact here")
    args = ap.parse_args()
    mod = pk.build(kernels, targets=args.target or list(default_targets))
    if args.output:
        mod.export(args.output)
    dev = mod.on(args.on) if args.on else mod
    print(run_and_check(dev, np.random.default_rng(0)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run one of the example files instead")
