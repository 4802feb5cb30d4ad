"""Shared command-line driver for the examples: build for targets, run on a device, check against NumPy.

``python saxpy.py`` builds for the CPU (``llvm``) and runs there; ``--target`` picks other targets and
``--on`` the module kind to run on; ``--every-runtime`` builds for every runtime this host has
(``polykern.backends.runnable_kinds()``: ``polykern backends`` lists them, with the reason for each
missing one) and runs and checks the example on each, one line per backend.
"""
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
    ap.add_argument("--every-runtime", action="store_true",
                    help="build for every runtime present on this host and run on each")
    ap.add_argument("-o", "--output", help="also export the artifact here")
    args = ap.parse_args()
    if args.every_runtime:
        if args.target or args.on:
            ap.error("--every-runtime picks the targets itself: no --target or --on with it")
        kinds = pk.backends.runnable_kinds()
        mod = pk.build(kernels, targets=kinds)
    else:
        kinds = []
        mod = pk.build(kernels, targets=args.target or list(default_targets))
    if args.output:
        mod.export(args.output)
    for kind in kinds:
        print(f"[{pk.backends.display_name(kind)}: {kind}] {run_and_check(mod.on(kind), np.random.default_rng(0))}")
    if not kinds:
        dev = mod.on(args.on) if args.on else mod
        print(run_and_check(dev, np.random.default_rng(0)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run one of the example files instead")
