"""The float conversions to and from the 16-bit floats, bit-exact on every runtime here.

docs/language.md 7.3 and 1.1: f16 <- f32/f64 and bf16 <- f32 round once to nearest even, overflow to
inf, keep subnormals and keep a NaN a NaN; f16 -> f32 and bf16 -> f32 are exact. Inputs: every f16 bit
pattern (2**16); for the rounding direction every f32 whose upper 16 bits are any of the 2**16
patterns combined with lower halves that put the dropped bits just below, at and just above a tie
(both parities of the kept bit, for normal and subnormal results), so ties, subnormals, overflow and
NaN payloads are all in it; for f64 the same values and the ones a hair above them (where rounding
through an f32 would round twice). The expected results are NumPy's IEEE conversions
(``ir/bfloat16.py`` for bf16). A NaN result is compared as "a NaN" (the payload is not promised).
"""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, bf16, f16, f32, f64
from polykern.ir.bfloat16 import bits_to_f32, f32_to_bits
from runtimes import conversion_specials_checked, runnable_targets


@pk.kernel
def convert(S: pk.dtype, D: pk.dtype, a: Buffer["S", "readonly"], o: Buffer["D"]):
    g = pk.global_id(0)
    o[g] = D(a[g])


# lower halves of an f32: around the f16 tie (bit 12, 13 dropped bits), around subnormal ties (higher
# bits), around the bf16 tie (bit 15), and the extremes
_LOW = np.array([0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000, 0x4000, 0x5000,
                 0x7FFF, 0x8000, 0x8001, 0xC000, 0xFFFF], np.uint32)


def _f32_sweep() -> np.ndarray:
    high = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    return (high[:, None] | _LOW[None, :]).ravel().view(np.float32)


def _f64_sweep() -> np.ndarray:
    with np.errstate(invalid="ignore"):
        d = _f32_sweep().astype(np.float64)
    above = (d.view(np.uint64) + np.uint64(1)).view(np.float64)  # a hair further from zero
    finite = np.isfinite(d)
    return np.concatenate([d, above[finite]])


CASES = {  # name: ((source, destination type), inputs, expected output (as its own dtype), feature)
    "widen_f16": ((f16, f32), lambda: np.arange(1 << 16, dtype=np.uint16).view(np.float16),
                  lambda x: x.astype(np.float32), "f16"),
    "round_f32": ((f32, f16), _f32_sweep, lambda x: x.astype(np.float16), "f16"),
    "round_f64": ((f64, f16), _f64_sweep, lambda x: x.astype(np.float16), "f64"),
    "round_bf16": ((f32, bf16), _f32_sweep, lambda x: f32_to_bits(x).view(pk.BF16_DTYPE), "bf16"),
    "widen_bf16": ((bf16, f32), lambda: np.arange(1 << 16, dtype=np.uint16).view(pk.BF16_DTYPE),
                   bits_to_f32, "bf16"),
}
NEEDS = {"round_f64": ("f16", "f64"), "round_bf16": ("bf16",), "widen_bf16": ("bf16",)}


def _params():
    out = []
    for target, kind, skips in runnable_targets():
        for name, (_, _, _, feature) in CASES.items():
            reason = next((skips[f] for f in NEEDS.get(name, ("f16",)) + (feature,) if skips.get(f)), None)
            marks = [pytest.mark.skip(reason=f"{target}: {reason}")] if reason else []
            out.append(pytest.param(target, kind, name, id=f"{kind}-{name}", marks=marks))
    return out


@pytest.mark.parametrize("target,kind,name", _params())
def test_conversion_is_bit_exact(target, kind, name):
    (src, dst), inputs, expected, _ = CASES[name]
    kern = convert.specialize(S=src, D=dst)
    a = inputs()
    with np.errstate(over="ignore", invalid="ignore"):  # NumPy's overflow to inf is the expected result
        want = expected(a)
    o = np.zeros(a.size, want.dtype)
    block = 256
    pad = (-a.size) % block
    if pad:  # a whole number of workgroups: pad with zeros (their results are not compared)
        a = np.concatenate([a, np.zeros(pad, a.dtype)])
        o = np.zeros(a.size, want.dtype)
    pk.build([kern], targets=[target]).on(kind)[kern.name](a, o, grid=a.size // block, block=block)
    o = o[:want.size]
    got_bits = o.view(np.uint16) if o.itemsize == 2 else o.view(np.uint32)
    want_bits = want.view(np.uint16) if want.itemsize == 2 else want.view(np.uint32)
    want_f, got_f = (bits_to_f32(want), bits_to_f32(o)) if name == "round_bf16" else (want.astype(np.float32),
                                                                                     o.astype(np.float32))
    nan = np.isnan(want_f)
    compared = np.isfinite(want_f) | (conversion_specials_checked(kind) & ~nan)
    bad = np.flatnonzero(compared & (got_bits != want_bits))
    if conversion_specials_checked(kind):
        bad = np.union1d(bad, np.flatnonzero(nan & ~np.isnan(got_f)))
    assert bad.size == 0, (f"{name} on {target}: {bad.size} of {want.size} differ, e.g. input "
                           f"{a[bad[:5]]!r} gave bits {[hex(int(v)) for v in got_bits[bad[:5]]]}, "
                           f"want {[hex(int(v)) for v in want_bits[bad[:5]]]}")
