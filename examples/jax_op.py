"""A kernel as a JAX function (docs/frameworks.md): an RMS norm over rows, one ``polykern.jax.kernel_function``
call, run inside ``jax.jit`` and ``jax.vmap`` and checked against the same in ``jax.numpy``.
``python jax_op.py``. On the CPU and on a CUDA GPU the kernel is an XLA FFI custom call (polykern/xla_ffi.py); on
a GPU it runs on XLA's stream."""
import numpy as np

import polykern as pk
import polykern.jax as pkj
from polykern import Buffer, f32, i32

import jax
import jax.numpy as jnp


NOT_NATIVE = "a JAX function (polykern.jax): tests/test_framework_jax.py runs this example"

@pk.kernel
def rms_norm(rows: i32, cols: i32, x: Buffer[f32, "readonly"], w: Buffer[f32, "readonly"], eps: f32,
             y: Buffer[f32]):
    r = pk.global_id(0)
    if r < rows:
        sum_sq = f32(0.0)
        for c in range(cols):
            v = x[r * cols + c]
            sum_sq += v * v
        inv = pk.rsqrt(sum_sq / f32(cols) + eps)
        for c in range(cols):
            y[r * cols + c] = x[r * cols + c] * inv * w[c]


def _rows(x, *rest):
    return x.size // x.shape[-1]


# f(x, w, eps): the kernel's parameters less the output (y) and the sizes computed from x
RMS_NORM = pkj.kernel_function(rms_norm, outputs="y", shape_rule=lambda x, w, eps: x.shape,
                               scalars={"rows": _rows, "cols": lambda x, w, eps: x.shape[-1]},
                               grid=lambda x, w, eps: (_rows(x) + 63) // 64, block=64)


def reference(x, w, eps):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w


def main() -> None:
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((128, 80)), jnp.float32)
    w = jnp.asarray(rng.standard_normal(80), jnp.float32)
    step = jax.jit(lambda x: RMS_NORM(2.0 * x, w, 1e-6) @ jnp.ones((80, 4), jnp.float32))
    np.testing.assert_allclose(step(x), reference(2.0 * x, w, 1e-6) @ jnp.ones((80, 4)), rtol=1e-4, atol=1e-4)
    print(f"[jax {jax.default_backend()}] rms_norm inside jax.jit matches jax.numpy's")
    batched = jax.jit(jax.vmap(lambda x: RMS_NORM(x, w, 1e-6)))(x.reshape(4, 32, 80))
    np.testing.assert_allclose(batched, reference(x, w, 1e-6).reshape(4, 32, 80), rtol=1e-5, atol=1e-5)
    print(f"[jax {jax.default_backend()}] jax.vmap runs the kernel once per batch element")


if __name__ == "__main__":
    main()
