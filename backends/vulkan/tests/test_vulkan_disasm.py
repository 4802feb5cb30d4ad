"""Our disassembler against SPIRV-Tools: the text it writes assembles with spirv-as, and the result
disassembles back to the same text (ids included); the instruction stream matches spirv-dis."""
import re

import pytest

from polykern_vulkan.spirv_builder import encode_string, scalar_literal_words
from polykern_vulkan.spirv_text import disassemble
from polykern.testing import tier_skip

from vulkan_kernels import CORPUS
from vulkan_tools import TOOLS_MISSING, TOOLS_REASON, run_tool, shaders


def _body(text):
    return [ln for ln in text.splitlines() if not ln.startswith(("; Generator", "; Bound"))]


@tier_skip.skipif("spirv-val", TOOLS_MISSING, reason=TOOLS_REASON)
@pytest.mark.parametrize("case,kernel,extra", CORPUS, ids=[c[0] for c in CORPUS])
def test_round_trip_through_spirv_as(case, kernel, extra):
    for name, binary in shaders(kernel, f"vulkan {extra}".strip()).items():
        text = disassemble(binary)
        r = run_tool(["spirv-as", "--target-env", "spv1.3", "{in}", "-o", "{out}"], text.encode(), ".spvasm")
        assert r.returncode == 0, r.stderr
        assert _body(disassemble(r.output_bytes)) == _body(text)
        # Same opcode sequence as SPIRV-Tools' own disassembler sees.
        d = run_tool(["spirv-dis", "--raw-id", "--no-header", "{in}"], binary)
        assert d.returncode == 0, d.stderr
        theirs = [m.group(1) for m in re.finditer(r"\b(Op[A-Za-z0-9]+)", d.stdout)]
        ours = [m.group(1) for m in re.finditer(r"\b(Op[A-Za-z0-9]+)", "\n".join(_body(text)))]
        assert ours == theirs


def test_literal_encodings():
    assert encode_string("main") == [0x6E69616D, 0]
    assert encode_string("abc") == [0x00636261]
    assert scalar_literal_words(-1, 8, False, True) == [0xFFFFFFFF]   # sign-extended
    assert scalar_literal_words(255, 8, False, False) == [0xFF]        # zero-extended
    assert scalar_literal_words(-2, 64, False, True) == [0xFFFFFFFE, 0xFFFFFFFF]
    assert scalar_literal_words(1.0, 16, True, True) == [0x3C00]
    assert scalar_literal_words(1.0, 64, True, True) == [0, 0x3FF00000]


def test_refuses_foreign_binaries():
    with pytest.raises(ValueError, match="magic"):
        disassemble(b"\x00" * 20)
