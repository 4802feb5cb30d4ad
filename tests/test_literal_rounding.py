"""Float literals round once, from the exact Python number, to the type they take (docs/language.md
"Literals", "bf16"): a literal that rounds to a finite value is that value (``65519.0`` as f16 is
65504, ``3.39e38`` as bf16 is the largest finite bf16), one that rounds to infinity is refused, and a
bf16 literal is not rounded through f32 first (``1.0039062500000002`` is 1.0078125, not 1.0). The
definition is ``polykern.ir.rounding.round_exact``, checked here against an independent nearest-value
search; every runtime present stores the same bits as the oracle."""
import bisect
import re
import math
from fractions import Fraction

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, bf16, f16, f32
from polykern.errors import KernelTypeError
from polykern.ir.bfloat16 import bits_to_f32
from polykern.ir.rounding import largest_finite, round_exact
from polykern.testing.interp import interpret
from polykern.testing.tier_skip import skip_if_absent
from runtimes import all_target_kinds, runnable_targets
from kernel_sources import make_kernel

RUNTIMES = [pytest.param(t, k, id=t.split()[0]) for t, k, _ in runnable_targets()]
BF16_RUNTIMES = [pytest.param(t, k, id=t.split()[0]) for t, k, skips in runnable_targets() if "bf16" not in skips]

F16_MAX, BF16_MAX, F32_MAX = 65504.0, float(bits_to_f32(np.uint16(0x7F7F))), float(np.finfo(np.float32).max)
# the boundaries: the largest finite value plus half its ulp rounds (ties to even) to infinity
F16_EDGE, BF16_EDGE, F32_EDGE = 65520.0, BF16_MAX + 2.0 ** 119, F32_MAX + 2.0 ** 103
F16_BELOW, BF16_BELOW, F32_BELOW = (float(np.nextafter(x, 0.0)) for x in (F16_EDGE, BF16_EDGE, F32_EDGE))


def _all_bf16():
    """Every finite non-negative bf16 value, ascending, with its bits."""
    bits = np.arange(0x7F80, dtype=np.uint16)
    return [float(v) for v in bits_to_f32(bits)], [int(b) for b in bits]


def _nearest(x: float, values, bits, top: float) -> float:
    """The nearest of ``values`` to x >= 0 (ties: the even bit pattern), or inf from the tie past ``top``
    (the next value's place) on: a search that shares nothing with round_exact."""
    ex = Fraction(x)
    j = bisect.bisect_left(values, x)
    if j == len(values):
        return math.inf if ex >= (Fraction(values[-1]) + Fraction(top)) / 2 else values[-1]
    if values[j] == x or j == 0:
        return values[j]
    lo, hi = Fraction(values[j - 1]), Fraction(values[j])
    if ex - lo != hi - ex:
        return values[j - 1] if ex - lo < hi - ex else values[j]
    return values[j - 1] if bits[j - 1] % 2 == 0 else values[j]


def test_bf16_rounding_is_once_from_the_exact_number():
    values, bits = _all_bf16()
    top = 2.0 ** 128  # where the next binade would start: its tie with BF16_MAX rounds to inf
    rng = np.random.default_rng(5)
    xs = [1.0039062500000002, 1.00390625, 1.0117187500000002, BF16_MAX, 3.39e38, BF16_EDGE,
          np.nextafter(BF16_EDGE, 0), 2.0 ** -133, 2.0 ** -134, 2.0 ** -134 + 2.0 ** -170, 1e-45, 9.2e-41]
    # doubles a hair above a bf16 tie: rounding through f32 first drops the hair and picks the even side
    ties = [(values[i] + values[i + 1]) / 2 for i in rng.integers(1, len(values) - 1, 300)]
    xs += [float(np.nextafter(t, math.inf)) for t in ties] + [float(np.nextafter(t, 0)) for t in ties] + ties
    xs += list(rng.standard_normal(300) * 10.0 ** rng.integers(-40, 38, 300))
    for x in xs:
        want = _nearest(abs(x), values, bits, top)
        assert round_exact(x, "bf16") == math.copysign(want, x), x
    assert round_exact(1.0039062500000002, "bf16") == 1.0078125  # through f32 it would be 1.0


def test_f16_and_f32_rounding_agree_with_numpy_on_doubles():
    """NumPy converts a float64 to f16 and f32 once (correctly rounded): round_exact is the same."""
    rng = np.random.default_rng(6)
    xs = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-50, 40, 2000),
                         [F16_EDGE, np.nextafter(F16_EDGE, 0), 65519.0, F32_EDGE, np.nextafter(F32_EDGE, 0),
                          2.0 ** -25, 2.0 ** -150, np.nextafter(2.0 ** -150, 1), -0.0, 0.0]])
    with np.errstate(over="ignore", under="ignore"):
        for x in xs:
            for name, t in (("f16", np.float16), ("f32", np.float32)):
                assert round_exact(float(x), name) == float(t(x)), (name, x)
    assert math.copysign(1.0, round_exact(-0.0, "f16")) < 0
    assert math.copysign(1.0, round_exact(-1e-50, "f32")) < 0  # a negative underflow is -0


def test_integers_round_once():
    """An int literal is rounded from its exact value (not through float64): 2^60 + 2^36 + 1 lies just
    above an f32 tie; float64 would round the +1 away and the tie then goes to even (down)."""
    n = 2 ** 60 + 2 ** 36 + 1
    assert round_exact(n, "f32") == 2.0 ** 60 + 2.0 ** 37
    assert float(np.float32(float(n))) == 2.0 ** 60  # the double rounding it avoids
    assert round_exact(10 ** 400, "f64") == math.inf and round_exact(-(10 ** 400), "f16") == -math.inf
    assert [largest_finite(t) for t in ("f16", "bf16", "f32")] == [F16_MAX, BF16_MAX, F32_MAX]


@pk.kernel
def k_edges(h: Buffer[f16], b: Buffer[bf16], f: Buffer[f32]):
    h[0] = 65519.0                  # rounds to the largest finite f16
    h[1] = F16_BELOW
    h[2] = -65519
    h[3] = f16(65519.99)
    b[0] = 3.39e38                  # rounds to the largest finite bf16
    b[1] = BF16_BELOW
    b[2] = 1.0039062500000002       # once: 1.0078125 (through f32: 1.0)
    b[3] = bf16(-1.0039062500000002)
    b[4] = bf16(1.0039062500000002 * f32(b[5]))  # adapts to f32 (1 + 2^-8), whose bf16 is a tie: 1.0
    f[0] = 3.4028235e38             # rounds to the largest finite f32
    f[1] = F32_BELOW
    f[2] = 2 ** 60 + 2 ** 36 + 1    # an int literal, rounded once
    f[3] = f32(b[2])


EXPECTED_B = [0x7F7F, 0x7F7F, 0x3F81, 0xBF81, 0x3F80]


def _inputs():
    b = pk.bf16_array(np.zeros(6, np.uint16))
    b.view(np.uint16)[5] = 0x3F80  # 1.0
    return [np.zeros(4, np.float16), b, np.zeros(4, np.float32)]


def test_literals_near_the_largest_value_take_it():
    h, b, f = _inputs()
    o = interpret(k_edges, [h, b, f], grid=1, block=1).buffers
    np.testing.assert_array_equal(o["h"], np.array([F16_MAX, F16_MAX, -F16_MAX, F16_MAX], np.float16))
    assert [int(v) for v in o["b"].view(np.uint16)[:5]] == EXPECTED_B
    assert float(o["f"][0]) == F32_MAX == float(o["f"][1]) and float(o["f"][2]) == 2.0 ** 60 + 2.0 ** 37
    assert float(o["f"][3]) == 1.0078125


@pytest.mark.parametrize("target,kind", BF16_RUNTIMES)
def test_every_runtime_stores_the_rounded_literals(target, kind):
    h, b, f = _inputs()
    ref = interpret(k_edges, [x.copy() for x in (h, b, f)], grid=1, block=1).buffers
    pk.build([k_edges], [target])["k_edges"](h, b, f, grid=1, block=1)
    np.testing.assert_array_equal(h, ref["h"])
    np.testing.assert_array_equal(b.view(np.uint16), ref["b"].view(np.uint16))
    np.testing.assert_array_equal(f, ref["f"])
    assert [int(v) for v in b.view(np.uint16)[:5]] == EXPECTED_B
    assert float(f[3]) == 1.0078125


@pytest.mark.parametrize("target,kind", [p for p in RUNTIMES if p.values[1] == "webgpu"])
def test_webgpu_stores_the_rounded_f32_literals(target, kind):
    @pk.kernel
    def k_f32(f: Buffer[f32]):
        f[0] = 3.4028235e38
        f[1] = 2 ** 60 + 2 ** 36 + 1

    f = np.zeros(2, np.float32)
    pk.build([k_f32], [target])["k_f32"](f, grid=1, block=1)
    assert list(f) == [F32_MAX, 2.0 ** 60 + 2.0 ** 37]


@pytest.mark.parametrize("src,t", [
    ("h[0] = 65520.0", "f16"), ("h[0] = -65520", "f16"), ("h[0] = f16(65520.0)", "f16"),
    ("b[0] = 3.3961776e38", "bf16"), (f"b[0] = bf16({-BF16_EDGE!r})", "bf16"),
    ("f[0] = 3.4028236e38", "f32"), (f"f[0] = {F32_EDGE!r}", "f32"), (f"f[0] = {int(F32_EDGE)}", "f32"),
])
def test_literals_that_round_to_infinity_are_refused(src, t, tmp_path):
    k = make_kernel(tmp_path, f"def kk(h: Buffer[f16], b: Buffer[bf16], f: Buffer[f32]):\n    {src}\n")
    with pytest.raises(KernelTypeError, match=rf"literal .* does not fit {t} \(it rounds to infinity; the largest "
                                              rf"finite {t} is ") as e:
        k.ir
    assert e.value.loc is not None and e.value.loc.line == 6


@pk.kernel
def k_bf16_literal(b: Buffer[bf16]):
    b[0] = 1.0039062500000002


@pytest.mark.parametrize("kind", [k for k in all_target_kinds() if k != "webgpu"])
def test_every_code_generator_gets_the_once_rounded_bf16_bits(kind, monkeypatch):
    """The backends receive a bf16 constant as its f32 value (exact): each writes 0x3F81 (16257), not the
    0x3F80 that rounding through f32 gives (WebGPU has no bf16)."""
    if kind == "rocm":
        skip_if_absent("ld.lld")  # the hsaco is linked (the GPU machine has no ld.lld)
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    dev = pk.build([k_bf16_literal], targets=[kind]).imports[0]
    text = "\n".join(dev.inspect_source(f) for f in dev.source_formats())
    assert re.search(r"(?i)\b(16257|0x3f81)\b|1\.0078125", text) and not re.search(r"(?i)\b(16256|0x3f80)\b", text)


@pk.kernel
def store_f16_arg(h: f16, o: Buffer[f16]):
    o[0] = h


@pk.kernel
def store_f32_arg(h: f32, o: Buffer[f32]):
    o[0] = h


def test_scalar_launch_arguments_round_like_literals():
    """A float launch argument is rounded once from its exact value, like a literal: what rounds to a
    finite value is taken (65519.0 as f16 is 65504), only what rounds to inf is refused, naming the
    largest finite value. (bf16 scalars are not kernel arguments.)"""
    from polykern.errors import LaunchError

    mod = pk.build([store_f16_arg, store_f32_arg], ["llvm"])
    o = np.zeros(1, np.float16)
    for given, want in [(65519.0, 65504.0), (65519, 65504.0), (-65519.9, -65504.0), (2049, 2048.0), (2051, 2052.0)]:
        mod["store_f16_arg"](given, o, grid=1, block=1)
        assert o[0] == want, (given, o[0])
    for bad, sign in [(65520.0, ""), (-70000, "-")]:
        with pytest.raises(LaunchError, match=rf"value {bad!r} is out of range for f16: it rounds to {sign}inf "
                                              r"\(largest finite 65504\)"):
            mod["store_f16_arg"](bad, o, grid=1, block=1)
    # an integer rounds once from itself, not through float64 (which would give the tie, then 2**60)
    o32 = np.zeros(1, np.float32)
    mod["store_f32_arg"](2**60 + 2**36 + 1, o32, grid=1, block=1)
    assert o32[0] == np.float32(2.0**60 + 2.0**37), o32[0]
