"""Kernels the framework tests share (tests/test_framework_torch.py, tests/test_framework_jax.py)."""
import polykern as pk
from polykern import Buffer, bf16, f32, i32


@pk.kernel
def square_and_count(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32], positive: Buffer[i32]):
    """Two outputs: y = x * x, and the count of positive elements (an atomic sum: the output starts at zero)."""
    i = pk.global_id(0)
    if i < n:
        y[i] = x[i] * x[i]
        if x[i] > 0.0:
            pk.atomic_add(positive, 0, 1)


@pk.kernel
def double_bf16(n: i32, x: Buffer[bf16, "readonly"], y: Buffer[bf16]):
    """bf16 in and out (host DLPack tensors NumPy cannot import)."""
    i = pk.global_id(0)
    if i < n:
        y[i] = bf16(2.0 * f32(x[i]))
