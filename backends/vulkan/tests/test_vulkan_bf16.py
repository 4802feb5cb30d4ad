"""bf16 in SPIR-V (passes/legalize_f16.py converts them): values and buffers are u16 bits (Int16, StorageBuffer16BitAccess, no
Float16 and no SPV_KHR_bfloat16), converted with integer ops; spirv-val accepts the shaders for every SPIR-V
version. Their results on lavapipe: tests/test_bf16.py and the conformance suite's bf16 cases."""
import os
import sys

import pytest

import polykern as pk
from polykern_vulkan.features import SPIRV_VERSIONS, VULKAN_ENV
from polykern_vulkan.spirv_text import disassemble
from polykern.testing import tier_skip

from vulkan_tools import TOOLS_MISSING, TOOLS_REASON, shaders, spirv_val

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
from conformance.kernels_bf16 import bf16_arith as bf16_mix  # noqa: E402


def test_bf16_is_u16_bits():
    text = disassemble(shaders(bf16_mix, "vulkan")["bf16_arith"])
    assert "OpCapability Int16" in text and "OpCapability StorageBuffer16BitAccess" in text
    assert "BFloat16" not in text and "SPV_KHR_bfloat16" not in text
    assert "OpTypeInt 16 0" in text and "OpUConvert" in text and "OpShiftLeftLogical" in text


@tier_skip.skipif("spirv-val", TOOLS_MISSING, reason=TOOLS_REASON)
@pytest.mark.parametrize("version", SPIRV_VERSIONS)
def test_spirv_val_accepts_bf16(version):
    binary = shaders(bf16_mix, f"vulkan -spirv={version}")["bf16_arith"]
    r = spirv_val(binary, VULKAN_ENV[version])
    assert r.returncode == 0, r.stderr


def test_bf16_needs_the_int16_feature():
    with pytest.raises(pk.errors.KernelTypeError, match=r"type bf16 \(held as 16-bit integers\) needs the 'int16' "
                                                        r"feature") as ei:
        pk.build([bf16_mix], ["vulkan -features=float16,float64"])
    assert ei.value.loc is not None
