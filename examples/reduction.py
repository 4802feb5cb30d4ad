"""Sum of a vector: a shared-memory tree reduction per workgroup with barriers, then one atomic add
per workgroup. The block size must be a power of two no larger than BLOCK. The atomic adds happen in
whatever order the work-groups finish, so the float32 total's last digits vary between runs."""
import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32

BLOCK = 256
# Float addition is not associative: the result depends on the order of the atomic adds, which the
# scheduling of the work-groups decides (it varies between runs). Any order is within this tolerance of
# the float64 sum.
RTOL = 1e-4


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
    np.testing.assert_allclose(out[0], expect, rtol=RTOL)
    groups = (n + block - 1) // block
    return (f"reduction: sum of {n} = {out[0]:.3f} OK (float64 sum {expect:.3f}, relative error "
            f"{abs(out[0] - expect) / expect:.1e} <= {RTOL:g}; float32 atomic adds of the {groups} group sums "
            "run in the order the groups finish, so the last digits vary between runs)")


if __name__ == "__main__":
    from _run import main

    raise SystemExit(main([block_sum], run))
