"""GPU check of pk.subgroup_*: the conformance cases of tests/conformance/kernels_subgroups.py on
every GPU target given (default: cuda, nvptx, vulkan, webgpu and 'opencl -subgroups'), plus the subgroup
size each device reports. Prints one line per (case, target): ok, FAIL (the assertion), or refused (why).

    python tools/gpu/subgroups_probe.py [target ...]
"""
from __future__ import annotations

import os
import sys
import traceback

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))

import polykern as pk  # noqa: E402
from conformance.kernels_subgroups import CASES, device_subgroups  # noqa: E402

DEFAULT = ["cuda -arch=sm_90", "nvptx -arch=sm_90", "vulkan", "webgpu", "opencl -subgroups"]


def main(targets) -> int:
    bad = 0
    for target in targets:
        kind = target.split()[0]
        kind = "cuda" if kind == "nvptx" else kind
        try:
            size, groups = device_subgroups(pk.build([c.kernels[0] for c in CASES[:1]], targets=[target]).on(kind))
            print(f"{target}: subgroup size {size}, {len(groups)} subgroups in 2 groups of 48")
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"{target}: refused/unavailable: {type(e).__name__}: {str(e).splitlines()[0]}")
            continue
        for case in CASES:
            try:
                mod = pk.build(case.kernels, targets=[target]).on(kind)
                case.run(mod, np.random.default_rng(1234))
                print(f"  {case.name}: ok")
            except AssertionError:
                bad += 1
                print(f"  {case.name}: FAIL\n" + traceback.format_exc(limit=3))
            except Exception as e:  # noqa: BLE001
                print(f"  {case.name}: refused: {type(e).__name__}: {str(e).splitlines()[0]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or DEFAULT))
