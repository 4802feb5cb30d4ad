"""spirv-val on every shader of every construct and every type, for every SPIR-V version, with the
--target-env that matches the target (features.VULKAN_ENV)."""
import struct

import pytest

from polykern_vulkan.features import SPIRV_VERSIONS, VULKAN_ENV
from polykern.testing import tier_skip

from vulkan_kernels import CORPUS, saxpy
from vulkan_tools import TOOLS_MISSING, TOOLS_REASON, shaders, spirv_val

pytestmark = tier_skip.skipif("spirv-val", TOOLS_MISSING, reason=TOOLS_REASON)


@pytest.mark.parametrize("version", SPIRV_VERSIONS)
@pytest.mark.parametrize("case,kernel,extra", CORPUS, ids=[c[0] for c in CORPUS])
def test_spirv_val(case, kernel, extra, version):
    for name, binary in shaders(kernel, f"vulkan -spirv={version} {extra}".strip()).items():
        assert struct.unpack_from("<I", binary, 4)[0] == int(version[0]) << 16 | int(version[2]) << 8
        r = spirv_val(binary, VULKAN_ENV[version])
        assert r.returncode == 0, f"{case} ({name}, SPIR-V {version}):\n{r.stdout}{r.stderr}"


def test_validator_catches_a_broken_shader():
    """The check above can fail: drop the OpReturn of saxpy and spirv-val must reject it."""
    binary = shaders(saxpy, "vulkan")["saxpy"]
    words = list(struct.unpack(f"<{len(binary) // 4}I", binary))
    ret = (1 << 16) | 253  # OpReturn, word count 1
    i = len(words) - 1 - words[::-1].index(ret)
    broken = struct.pack(f"<{len(words) - 1}I", *(words[:i] + words[i + 1:]))
    r = spirv_val(broken, "vulkan1.1")
    assert r.returncode != 0
    assert "terminat" in (r.stdout + r.stderr).lower() or "block" in (r.stdout + r.stderr).lower()
