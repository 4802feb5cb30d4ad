"""The oracle judges bf16 math results (numerics: bf16's promise is f32's rounded once: 1 bf16 ulp).

Found red-teaming bf16: after passes/widen_bf16.py a bf16 ``pk.exp(x)`` is ``bf16(exp(f32(x)))``, and the
oracle's taint saw two inexact operations (exp, then the rounding cast) and left every bf16 math result
unchecked, so the fuzzer and compare() could not see a wrong bf16 exp/sin/pow on any backend."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, bf16
from polykern.ir.bfloat16 import f32_to_bits
from polykern.testing.compare import compare
from polykern.testing.interp import interpret

OPS = 7


@pk.kernel
def bf16_math(a: Buffer[bf16, "readonly"], b: Buffer[bf16, "readonly"], o: Buffer[bf16]):
    i = pk.global_id(0)
    x = a[i]
    y = b[i]
    o[i * 7] = pk.exp(x)
    o[i * 7 + 1] = pk.sin(x)
    o[i * 7 + 2] = x ** y
    o[i * 7 + 3] = pk.rsqrt(x)
    o[i * 7 + 4] = pk.log2(x)
    o[i * 7 + 5] = pk.tanh(y)
    o[i * 7 + 6] = x / y


def _run(n=64):
    rng = np.random.default_rng(5)
    a = f32_to_bits(rng.uniform(0.25, 8.0, n).astype(np.float32))
    b = f32_to_bits(rng.uniform(0.25, 2.0, n).astype(np.float32))
    args = lambda: [pk.bf16_array(a), pk.bf16_array(b), pk.bf16_array(np.zeros(OPS * n, np.uint16))]  # noqa: E731
    got = args()
    pk.build([bf16_math], ["llvm"])["bf16_math"](*got, grid=1, block=n)
    return interpret(bf16_math, args(), grid=1, block=n), got[2].view(np.uint16)


def test_bf16_math_results_are_checked():
    oracle, got = _run()
    result = compare(oracle, {"o": pk.bf16_array(got)}, "llvm", names=["o"])
    assert result.ok and result.unchecked == 0, (result.unchecked, [str(m) for m in result.mismatches])


@pytest.mark.parametrize("op", range(OPS))
def test_a_bf16_result_two_ulps_off_is_a_mismatch(op):
    oracle, got = _run()
    for step, ok in ((1, op != OPS - 1), (2, False)):  # division is exact: one ulp off is wrong too
        bad = got.copy()
        bad[op] += step  # positive results: the next bf16 up
        result = compare(oracle, {"o": pk.bf16_array(bad)}, "llvm", names=["o"])
        assert result.ok == ok and result.unchecked == 0, (step, [str(m) for m in result.mismatches])
