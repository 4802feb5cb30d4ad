"""A kernel as a JAX function (docs/frameworks.md): a row-wise softmax, one ``polykern.jax.kernel_function``
call, run inside ``jax.jit`` and ``jax.vmap`` and checked against ``jax.nn.softmax``.
``python jax_op.py``. On the CPU the kernel is an XLA FFI custom call (polykern/xla_ffi.py)."""
import numpy as np

import polykern as pk
import polykern.jax as pkj
from polykern import Buffer, f32, i32

import jax
import jax.numpy as jnp


@pk.kernel
def softmax_rows(rows: i32, cols: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    r = pk.global_id(0)
    if r < rows:
        base = r * cols
        top = x[base]
        for c in range(1, cols):
            top = pk.max(top, x[base + c])
        total = f32(0.0)
        for c in range(cols):
            e = pk.exp(x[base + c] - top)
            y[base + c] = e
            total += e
        for c in range(cols):
            y[base + c] = y[base + c] / total


def _rows(x):
    return x.size // x.shape[-1]


SOFTMAX = pkj.kernel_function(softmax_rows, outputs="y", shape_rule=lambda x: x.shape,
                              scalars={"rows": _rows, "cols": lambda x: x.shape[-1]},
                              grid=lambda x: (_rows(x) + 63) // 64, block=64)


def main() -> None:
    x = jnp.asarray(np.random.default_rng(0).standard_normal((128, 80)), jnp.float32)
    step = jax.jit(lambda x: SOFTMAX(2.0 * x) @ jnp.ones((80, 4), jnp.float32))
    np.testing.assert_allclose(step(x), jax.nn.softmax(2.0 * x, axis=-1) @ jnp.ones((80, 4)), rtol=1e-5, atol=1e-6)
    print(f"[jax {jax.default_backend()}] softmax_rows inside jax.jit matches jax.nn.softmax")
    batched = jax.jit(jax.vmap(SOFTMAX))(x.reshape(4, 32, 80))
    np.testing.assert_allclose(batched, jax.nn.softmax(x, axis=-1).reshape(4, 32, 80), rtol=1e-5, atol=1e-6)
    print(f"[jax {jax.default_backend()}] jax.vmap runs the kernel once per batch element")


if __name__ == "__main__":
    main()
