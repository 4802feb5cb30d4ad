"""The consumer's kernels: compiled by polykern_kbin (BUILD.bazel), never run by CPython."""
import polykern as pk
from polykern import Buffer, f32, i32


@pk.kernel
def vec_add(n: i32, a: Buffer[f32, "readonly"], b: Buffer[f32, "readonly"], out: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        out[i] = a[i] + b[i]
