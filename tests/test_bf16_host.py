"""pk.bf16_to_f32 on the host (docs/language.md "bf16"): big-endian bits ('>u2', e.g. np.fromfile of a
big-endian file) were reinterpreted as native bytes (0x3FC0 read as -2.984375), and an f16 array's bits
were read as bf16 (1.5 became 0.125): found red-teaming bf16."""
import numpy as np
import pytest

import polykern as pk


def test_big_endian_bits_are_read_by_value():
    bits = np.array([0x3FC0, 0x4000, 0xBF80], ">u2")
    assert pk.bf16_to_f32(bits).tolist() == [1.5, 2.0, -1.0]
    assert pk.bf16_to_f32(bits[::-2]).tolist() == [-1.0, 1.5]
    assert pk.bf16_to_f32(bits.astype(">i2")).tolist() == [1.5, 2.0, -1.0]


def test_other_16_bit_types_are_refused():
    with pytest.raises(TypeError, match=r"bf16 bits are 16-bit integers .* got float16"):
        pk.bf16_to_f32(np.array([1.5], np.float16))
    assert pk.bf16_to_f32(pk.bf16_array(np.array([2.5]))).tolist() == [2.5]
