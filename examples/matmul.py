"""C = A @ B with TILE x TILE tiles staged in shared memory (two barriers per tile step).
Works for any M, N, K: out-of-range tile elements load as zero."""
import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32

TILE = 16


@pk.kernel
def matmul(m: i32, n: i32, k: i32, a: Buffer[f32, "readonly"], b: Buffer[f32, "readonly"], c: Buffer[f32]):
    ta = pk.shared(f32, TILE * TILE)
    tb = pk.shared(f32, TILE * TILE)
    tx = pk.local_id(0)
    ty = pk.local_id(1)
    col = pk.group_id(0) * TILE + tx
    row = pk.group_id(1) * TILE + ty
    acc = 0.0
    for t in range(0, k, TILE):
        ta[ty * TILE + tx] = a[row * k + t + tx] if row < m and t + tx < k else 0.0
        tb[ty * TILE + tx] = b[(t + ty) * n + col] if t + ty < k and col < n else 0.0
        pk.barrier()
        for j in range(TILE):
            acc += ta[ty * TILE + j] * tb[j * TILE + tx]
        pk.barrier()
    if row < m and col < n:
        c[row * n + col] = acc


def run(mod, rng, m=123, n=77, k=61):
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.zeros((m, n), np.float32)
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    mod["matmul"](m, n, k, a.ravel(), b.ravel(), c.ravel(), grid=grid, block=(TILE, TILE))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    return f"matmul: {m}x{k} @ {k}x{n} OK"


if __name__ == "__main__":
    from _run import main

    raise SystemExit(main([matmul], run))
