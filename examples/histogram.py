"""A 64-bin histogram: per-workgroup bins in shared memory (atomics on shared), merged into the global
histogram with one atomic add per bin per workgroup."""
import numpy as np

import polykern as pk
from polykern import Buffer, i32, u32

BINS = 64


@pk.kernel
def histogram(n: i32, data: Buffer[u32, "readonly"], hist: Buffer[u32]):
    local_bins = pk.shared(u32, BINS)
    lid = pk.local_id(0)
    j = lid
    while j < BINS:
        local_bins[j] = 0
        j += pk.local_size(0)
    pk.barrier()
    i = pk.global_id(0)
    stride = pk.local_size(0) * pk.num_groups(0)
    while i < n:
        pk.atomic_add(local_bins, i32(data[i] % BINS), 1)
        i += stride
    pk.barrier()
    j = lid
    while j < BINS:
        pk.atomic_add(hist, j, local_bins[j])
        j += pk.local_size(0)


def run(mod, rng, n=250_007):
    data = rng.integers(0, 1 << 20, n, dtype=np.uint32)
    hist = np.zeros(BINS, np.uint32)
    mod["histogram"](n, data, hist, grid=40, block=128)
    np.testing.assert_array_equal(hist, np.bincount(data % BINS, minlength=BINS).astype(np.uint32))
    return f"histogram: {n} values into {BINS} bins OK"


if __name__ == "__main__":
    from _run import main

    raise SystemExit(main([histogram], run))
