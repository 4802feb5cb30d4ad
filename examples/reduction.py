"""Sum of a vector: a shared-memory tree reduction per workgroup with barriers, then one atomic add
per workgroup. The block size must be a power of two no larger than BLOCK."""
import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32

BLOCK = 256


@pk.kernel
def block_sum(n: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    s = pk.shared(f32, BLOCK)
    lid = pk.local_id(0)
    i = pk.global_id(0)
    s[lid] = x[i] if i < n else 0.0
    pk.barrier()
    step = pk.local_size(0) // 2
    while step > 0:
        if lid < step:
            s[lid] += s[lid + step]
        pk.barrier()
        step //= 2
    if lid == 0:
        pk.atomic_add(out, 0, s[0])


def run(mod, rng, n=100_001, block=BLOCK):
    x = rng.random(n, dtype=np.float32)
    out = np.zeros(1, np.float32)
    mod["block_sum"](n, x, out, grid=(n + block - 1) // block, block=block)
    expect = x.astype(np.float64).sum()
    np.testing.assert_allclose(out[0], expect, rtol=1e-4)
    return f"reduction: sum of {n} = {out[0]:.3f} OK"


if __name__ == "__main__":
    from _run import main

    raise SystemExit(main([block_sum], run))
