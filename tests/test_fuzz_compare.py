"""The comparison of the fuzzer (polykern.testing.compare, numerics.agrees) never rejects a backend's
result that equals the oracle's: the long run's program 20001238 reported "oracle 65504.0, got 65504.0"
for an f16 fma at the type's maximum (np.spacing(65504) is inf, so the 0-ulp tolerance was 0 * inf = NaN)."""
import numpy as np
import pytest

from polykern import numerics
from polykern.testing import compare, fuzzcase

SRC = '''import polykern as pk
from polykern import Buffer, f16, f32
@pk.kernel
def top(a: Buffer[f16, "readonly"], o: Buffer[f16], b: Buffer[f32, "readonly"], p: Buffer[f32]):
    i = pk.global_id(0)
    o[i] = pk.fma(a[i * 3], a[i * 3 + 1], a[i * 3 + 2])
    p[i] = pk.fma(b[i * 3], b[i * 3 + 1], b[i * 3 + 2])
'''

F32_MAX = float(np.finfo(np.float32).max)


def test_ulp_at_the_maximum_is_the_gap_below_it():
    assert numerics.ulp_of(65504.0, "f16") == 32.0 == numerics.ulp_of(-65504.0, "f16")
    assert numerics.ulp_of(F32_MAX, "f32") == F32_MAX - float(np.nextafter(np.float32(F32_MAX), np.float32(0)))
    assert numerics.ulp_of(1.0, "f16") == 2.0 ** -10
    assert np.isnan(numerics.ulp_of(np.inf, "f16"))


@pytest.mark.parametrize("backend", ["llvm", "opencl", "vulkan", "cuda"])
def test_the_exact_result_at_the_maximum_agrees(backend):
    # 256 * 255.875 = 65504 exactly; 65516 rounds to 65504; f32: max * 1 + 0
    a = np.array([256, 255.875, 0, 1, 5516, 60000, -256, 255.875, 0], np.float16)
    b = np.array([F32_MAX, 1, 0, 1, F32_MAX, 0, -F32_MAX, 1, 0], np.float32)
    case = fuzzcase.Case("top", SRC, (1, 1, 1), (3, 1, 1), [a, np.zeros(3, np.float16), b, np.zeros(3, np.float32)])
    oracle = case.oracle()
    assert oracle.buffers["o"].tolist() == [65504.0, 65504.0, -65504.0]
    assert oracle.buffers["p"].tolist() == [F32_MAX, F32_MAX, -F32_MAX]
    same = {k: v.copy() for k, v in oracle.buffers.items()}
    assert compare.compare(oracle, same, backend).mismatches == []
    for dtype, ref in (("f16", 65504.0), ("f32", F32_MAX)):
        p = numerics.promise("fma", dtype, backend)
        assert numerics.agrees(p, "fma", dtype, ref, ref, (ref, 1.0, 0.0))
        assert not numerics.agrees(p, "fma", dtype, np.inf, ref, (ref, 1.0, 0.0))  # still strict


MUL_SRC = '''import polykern as pk
from polykern import Buffer, f32
@pk.kernel
def prod(s: f32, a: Buffer[f32, "readonly"], o: Buffer[f32]):
    t = s * s
    o[0] = pk.min(a[0], (s * s) * -2.4)
    o[1] = t * f32(-2.4)
    o[2] = s * f32(-2.4)
'''


def test_a_product_of_a_product_may_be_reassociated_only_where_promised():
    # naga -> lavapipe computed (s * s) * -2.4 as s * (s * -2.4) (fuzz seed 33001069)
    s = np.float32(65.30282)
    case = fuzzcase.Case("prod", MUL_SRC, (1, 1, 1), (1, 1, 1), [s, np.array([0.0], np.float32),
                                                                np.zeros(3, np.float32)])
    oracle = case.oracle()
    assert oracle.chained["o"].tolist() == [True, True, False]
    other = np.float32(s * np.float32(s * np.float32(-2.4)))
    assert other != oracle.buffers["o"][1]  # the two associations differ for this s
    got = {"a": oracle.buffers["a"], "o": np.array([other, other, oracle.buffers["o"][2]], np.float32)}
    assert numerics.promise("mul", "f32", "webgpu").may_reassociate
    assert compare.compare(oracle, got, "webgpu").mismatches == []
    for backend in ("llvm", "opencl", "vulkan", "cuda"):
        assert not numerics.promise("mul", "f32", backend).may_reassociate
        assert [m.index for m in compare.compare(oracle, got, backend).mismatches] == [0, 1]
