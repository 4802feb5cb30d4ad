"""Inclusive prefix sum: each workgroup scans its block in shared memory (Hillis-Steele, two barriers
per step) and writes its total; a second pass adds the scanned block totals back.
For n up to BLOCK*BLOCK elements (block totals are scanned by one workgroup)."""
import numpy as np

import polykern as pk
from polykern import Buffer, i32

BLOCK = 256


@pk.kernel
def scan_blocks(n: i32, x: Buffer[i32, "readonly"], y: Buffer[i32], totals: Buffer[i32]):
    s = pk.shared(i32, BLOCK)
    lid = pk.local_id(0)
    i = pk.global_id(0)
    s[lid] = x[i] if i < n else 0
    pk.barrier()
    offset = 1
    while offset < pk.local_size(0):
        v = s[lid - offset] if lid >= offset else 0
        pk.barrier()
        s[lid] += v
        pk.barrier()
        offset *= 2
    if i < n:
        y[i] = s[lid]
    if lid == pk.local_size(0) - 1:
        totals[pk.group_id(0)] = s[lid]


@pk.kernel
def add_offsets(n: i32, y: Buffer[i32], scanned_totals: Buffer[i32, "readonly"]):
    g = pk.group_id(0)
    i = pk.global_id(0)
    if g > 0 and i < n:
        y[i] += scanned_totals[g - 1]


def prefix_sum(mod, x, block=BLOCK):
    n = x.size
    groups = (n + block - 1) // block
    y = np.zeros(n, np.int32)
    totals = np.zeros(groups, np.int32)
    mod["scan_blocks"](n, x, y, totals, grid=groups, block=block)
    scanned = np.zeros(groups, np.int32)
    mod["scan_blocks"](groups, totals, scanned, np.zeros(1, np.int32), grid=1, block=block)
    mod["add_offsets"](n, y, scanned, grid=groups, block=block)
    return y


def run(mod, rng, n=50_001):
    x = rng.integers(-100, 100, n, dtype=np.int32)
    y = prefix_sum(mod, x)
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int32))
    return f"prefix sum: {n} elements OK"


if __name__ == "__main__":
    from _run import main

    raise SystemExit(main([scan_blocks, add_offsets], run))
