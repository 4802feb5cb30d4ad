"""Matrix fragments declared inside a @pk.func (docs/language.md "Device functions"): the inliner gives
each call site fresh fragments and renames the fragment operations' fragments and memory like every
other reference. Before, such a function failed at build with an internal error ("matrix operation on
undeclared or mistyped fragment 'c'"), and a frag_load from a Shared parameter named unlike the caller's
array would have kept the parameter's name. examples/gemm_f16.py's two kernels share their body this way."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, i32
from polykern.errors import KernelTypeError
from polykern.testing.interp import interpret


@pk.func
def _tile_product(tile: pk.Shared[f16], b: Buffer[f16, "readonly"], out: Buffer[f32], off: i32):
    """out[off:off + 256] (16 x 16, row-major) = tile's 16 x 16 @ b's 16 x 16 + 1."""
    fa = pk.frag_a(f16, 16, 16, 16)
    fb = pk.frag_b(f16, 16, 16, 16)
    acc = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_fill(acc, 1.0)
    pk.frag_load(fa, tile, 0, 16)
    pk.frag_load(fb, b, 0, 16)
    d = pk.mma(fa, fb, acc)  # a fragment declared by mma inside the function
    pk.frag_store(out, off, 16, d)


@pk.kernel
def two_products(a: Buffer[f16, "readonly"], b: Buffer[f16, "readonly"], out: Buffer[f32]):
    """out = [a0 @ b + 1, a1 @ b + 1]: the function called twice, with two shared arrays."""
    s0 = pk.shared(f16, 256)
    s1 = pk.shared(f16, 256)
    e = pk.local_id(0)
    while e < 256:
        s0[e] = a[e]
        s1[e] = a[256 + e]
        e += pk.local_size(0)
    pk.barrier()
    _tile_product(s0, b, out, 0)
    _tile_product(s1, b, out, 256)


def _inputs():
    rng = np.random.default_rng(5)
    a = rng.integers(-4, 5, 512).astype(np.float16)  # small integers: every sum exact, one right answer
    b = rng.integers(-4, 5, 256).astype(np.float16)
    want = np.concatenate([(a[:256].reshape(16, 16).astype(np.float64) @ b.reshape(16, 16) + 1).ravel(),
                           (a[256:].reshape(16, 16).astype(np.float64) @ b.reshape(16, 16) + 1).ravel()])
    return a, b, want.astype(np.float32)


def test_fragments_declared_in_a_function_on_the_cpu_and_the_oracle():
    a, b, want = _inputs()
    out = np.zeros(512, np.float32)
    sg = 8
    pk.build([two_products], ["llvm"])["two_products"](a, b, out, grid=1, block=sg)
    np.testing.assert_array_equal(out, want)
    res = interpret(two_products, [a, b, np.zeros(512, np.float32)], 1, sg, subgroup_size=sg)
    np.testing.assert_array_equal(res.buffers["out"], want)
    frags = two_products.ir.fragments
    assert len(frags) == 8 and all(name.startswith("_tile_product__") for name in frags)  # 4 per call site


def test_fragment_operation_in_a_function_under_a_divergent_condition_names_the_call():
    @pk.kernel
    def divergent(a: Buffer[f16, "readonly"], b: Buffer[f16, "readonly"], out: Buffer[f32]):
        s = pk.shared(f16, 256)
        if pk.local_id(0) < 4:
            _tile_product(s, b, out, 0)

    with pytest.raises(KernelTypeError, match=r"pk\.frag_fill\(\) is reached only by some work-items.*called at "):
        divergent.ir
