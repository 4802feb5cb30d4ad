"""Conversions to half in the MSL: an f32 or an integer that can reach 65520 is clamped to +-65520 first
(NaN kept; passes/legalize_f16.py "clamp", which metal declares). Metal's compiler is LLVM, whose instcombine folds
``(float)(half)(float)n`` of an integer n with few significant bits to ``(float)n`` past half's range
(tests/test_int_to_f16.py shows the fold on the LLVM backends and lavapipe). No Metal compiler runs here:
these check the source."""
import re

import polykern as pk
from polykern import Buffer, f16, f32, i8, i16, i32, i64, u8, u16, u32


@pk.kernel
def to_half(a: Buffer[i32, "readonly"], b: Buffer[u32, "readonly"], c: Buffer[i64, "readonly"],
            d: Buffer[u16, "readonly"], e: Buffer[f32, "readonly"], o: Buffer[f32]):
    g = pk.global_id(0)
    o[g] = f32(f16(a[g] << 31)) + f32(f16(b[g])) + f32(f16(c[g])) + f32(f16(d[g])) + f32(f16(e[g])) + \
        f32(f16(f32(a[g] << 31)))


@pk.kernel
def narrow_to_half(a: Buffer[i8, "readonly"], b: Buffer[i16, "readonly"], c: Buffer[u8, "readonly"],
                   o: Buffer[f16]):
    g = pk.global_id(0)
    o[g] = f16(a[g]) + f16(b[g]) + f16(c[g]) + f16(g > 3)


def _source(kernel):
    return pk.build([kernel], targets=["metal"]).inspect_source("metal")


def test_wide_integers_and_f32_become_half_through_the_clamp():
    src = _source(to_half)
    body = src[src.index("kernel void"):]
    assert body.count("> 65520.0f ? 65520.0f :") == 6, body
    clamped = re.findall(r"\(half\)\((\w+) != \1 \? \1 : (\w+) < -65520\.0f \? -65520\.0f : \2\)", body)
    assert len(clamped) == 6 and body.count("(half)") == 6, body  # no conversion the fold could widen back


def test_narrow_integers_need_no_clamp():
    src = _source(narrow_to_half)
    assert "65520" not in src
    assert len(re.findall(r"\(half\)", src[src.index("kernel void"):])) >= 3
