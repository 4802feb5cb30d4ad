"""y = a*x + y: the hello-world of kernels (one work-item per element, bounds-checked)."""
import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32


@pk.kernel
def saxpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


def run(mod, rng, n=1_000_003, block=256):
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    expect = np.float32(2.5) * x + y
    mod["saxpy"](n, 2.5, x, y, grid=(n + block - 1) // block, block=block)
    np.testing.assert_allclose(y, expect, rtol=1e-6, atol=1e-6)
    return f"saxpy: {n} elements OK"


if __name__ == "__main__":
    from _run import main

    raise SystemExit(main([saxpy], run))
