"""A 5-point Jacobi stencil on a 2-D grid (2-D launch; edges copied unchanged)."""
import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32


@pk.kernel
def jacobi(h: i32, w: i32, src: Buffer[f32, "readonly"], dst: Buffer[f32]):
    x = pk.global_id(0)
    y = pk.global_id(1)
    if x >= w or y >= h:
        return
    i = y * w + x
    if x == 0 or y == 0 or x == w - 1 or y == h - 1:
        dst[i] = src[i]
        return
    dst[i] = 0.2 * (src[i] + src[i - 1] + src[i + 1] + src[i - w] + src[i + w])


def reference(a):
    out = a.copy()
    out[1:-1, 1:-1] = np.float32(0.2) * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
    return out


def run(mod, rng, h=131, w=257):
    a = rng.random((h, w), dtype=np.float32)
    out = np.zeros_like(a)
    mod["jacobi"](h, w, a.ravel(), out.ravel(), grid=((w + 15) // 16, (h + 15) // 16), block=(16, 16))
    np.testing.assert_allclose(out, reference(a), rtol=1e-5, atol=1e-6)
    return f"stencil: {h}x{w} grid OK"


if __name__ == "__main__":
    from _run import main

    raise SystemExit(main([jacobi], run))
