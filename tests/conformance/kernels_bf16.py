"""Conformance kernels for bf16 (docs/language.md "bf16"): conversions at the rounding edges, arithmetic
computed in f32 and rounded once, bf16 in shared and local arrays. Expected values come from the
definition written with NumPy f32 arithmetic and polykern.ir.bfloat16's rounding."""

import numpy as np

import polykern as pk
from polykern import Buffer, bf16, f32, i32
from polykern.ir.bfloat16 import bits_to_f32, f32_to_bits

from .case import Case, launch_1d

FEATURES = frozenset(["bf16"])


def _bf16(x):
    """The definition's rounding of f32 values (an f32 array) to bf16, as f32 values."""
    return bits_to_f32(f32_to_bits(np.asarray(x, np.float32)))


@pk.kernel
def bf16_convert(n: i32, x: Buffer[f32, "readonly"], h: Buffer[bf16], back: Buffer[f32]):
    g = pk.global_id(0)
    if g < n:
        v = bf16(x[g])
        h[g] = v
        back[g] = f32(v)


# f32 bit patterns at the edges of the rounding: ties to even (down and up), a carry into the exponent,
# the overflow tie to inf, the largest finite, subnormal ties, +-0, inf, quiet and signalling NaNs
_EDGES = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0xBF818000, 0x3FFF8000, 0x7F7F7FFF, 0x7F7F8000,
                   0xFF7F8000, 0x00008000, 0x00018000, 0x807FFFFF, 0x00000000, 0x80000000, 0x7F800000,
                   0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFF0000], np.uint32)


def _run_convert(mod, rng):
    bits = np.concatenate([_EDGES, rng.integers(0, 1 << 32, 1000, dtype=np.uint64).astype(np.uint32)])
    x = bits.view(np.float32)
    n = x.size
    h, back = pk.bf16_array(np.zeros(n, np.uint16)), np.zeros(n, np.float32)
    launch_1d(mod, "bf16_convert", n, [n, x, h, back], block=64)
    want = f32_to_bits(x)
    got = h.view(np.uint16)
    bad = np.nonzero(got != want)[0]
    assert not bad.size, [(hex(int(bits[i])), hex(int(got[i])), hex(int(want[i]))) for i in bad[:8]]
    np.testing.assert_array_equal(back.view(np.uint32), want.astype(np.uint32) << 16)


@pk.kernel
def bf16_arith(n: i32, a: Buffer[bf16, "readonly"], b: Buffer[bf16, "readonly"], out: Buffer[bf16],
               idx: Buffer[i32]):
    t = pk.shared(bf16, 64)
    acc = pk.local(bf16, 2)
    g = pk.global_id(0)
    lid = pk.local_id(0)
    t[lid] = a[g]
    pk.barrier()
    if g < n:
        x = t[63 - lid]                       # a[] of the mirrored work-item, through shared memory
        y = b[g]
        acc[0] = x * y + x - y                # three roundings
        acc[1] = pk.fma(x, y, bf16(0.1))      # one rounding of the f32 fma
        out[g * 4] = acc[0]
        out[g * 4 + 1] = acc[1]
        out[g * 4 + 2] = x / y if x > y else pk.sqrt(pk.abs(y))
        out[g * 4 + 3] = bf16(g * 65537 + 3)  # i32 -> f32 -> bf16
        idx[g] = i32(x * 8.0)                 # bf16 -> f32 -> i32, truncating


def _run_arith(mod, rng):
    n = 640
    a = f32_to_bits(rng.uniform(-50, 50, n).astype(np.float32))
    b = f32_to_bits(rng.uniform(0.25, 30, n).astype(np.float32))
    out, idx = pk.bf16_array(np.zeros(4 * n, np.uint16)), np.zeros(n, np.int32)
    launch_1d(mod, "bf16_arith", n, [n, pk.bf16_array(a), pk.bf16_array(b), out, idx], block=64)
    g = np.arange(n)
    x = bits_to_f32(a)[(g // 64) * 64 + 63 - g % 64]
    y = bits_to_f32(b)
    with np.errstate(all="ignore"):
        acc0 = _bf16(_bf16(_bf16(x * y) + x) - y)
        fma = (x.astype(np.float64) * y + np.float64(_bf16(np.float32(0.1)))).astype(np.float32)  # exact product
        want = np.stack([acc0, _bf16(fma), np.where(x > y, _bf16(x / y), _bf16(np.sqrt(np.abs(y)))),
                         _bf16((g * 65537 + 3).astype(np.float32))], 1).reshape(-1)
    got = bits_to_f32(out)
    # x / y is exact in f32 everywhere but Vulkan's 2.5-ulp division, which may move the bf16 by one ulp
    tol = np.where(np.arange(4 * n) % 4 == 2, np.abs(want) * 2.0 ** -7, 0.0)
    np.testing.assert_array_less(np.abs(got - want), tol + 1e-45, err_msg="bf16 arithmetic")
    np.testing.assert_array_equal(idx, np.trunc(x * 8).astype(np.int32))


CASES = [Case("bf16_convert", [bf16_convert], _run_convert, FEATURES),
         Case("bf16_arith", [bf16_arith], _run_arith, FEATURES | {"barrier"})]
