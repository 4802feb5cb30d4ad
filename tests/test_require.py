"""POLYKERN_REQUIRE (polykern.testing.require): a required tier that is absent fails instead of skipping."""
import os
import subprocess
import sys
import textwrap

import pytest

from polykern.errors import PolykernError
from polykern.testing import require

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("tier", require.required() if os.environ.get(require.ENV) else [])
def test_required_tier_is_present(tier):
    probe, _ = require.TIERS[tier]
    reason = probe()
    assert reason is None, f"{require.ENV} requires {tier}, which is missing here: {reason}"


def test_unknown_tier_is_an_error(monkeypatch):
    monkeypatch.setenv(require.ENV, "pocl,notatier")
    with pytest.raises(PolykernError, match="unknown tier 'notatier'; known tiers: .*lavapipe"):
        require.required()


def test_skip_reasons_name_tiers():
    assert require.tiers_named_by("no OpenCL runtime here") == ["pocl"]
    assert require.tiers_named_by("spirv-val is not on PATH") == ["spirv-val"]
    assert require.tiers_named_by("ld.lld rejected the object") == ["ld.lld"]
    assert require.tiers_named_by("neither NVRTC nor nvcc is installed here") == []


def test_declared_refusals_are_not_lost_tiers():
    # A backend that refuses a feature skips on every host: that must stay a skip under POLYKERN_REQUIRE.
    for reason in ("webgpu -shader_f16=true: WGSL has no 64-bit floating-point type",
                   "vulkan: GLSL.std.450 has no 64-bit transcendental functions (refused at compile time)",
                   "vulkan: kernel 'folded': exp() on f64: GLSL.std.450 has no 64-bit exp"):
        assert not require.says_absent(reason), reason
    for reason in ("no Vulkan runtime here: vulkan could not be imported", "spirv-val not installed",
                   "OpenCL runtime not available: pyopencl could not be imported",
                   "no PoCL platform (pip install pocl-binary-distribution)",
                   "the WebGPU runtime (wgpu) is not registered here", "ld.lld is not installed"):
        assert require.says_absent(reason), reason


def _run_pytest(tmp_path, env_value):
    test = tmp_path / "test_skipper.py"
    test.write_text(textwrap.dedent("""
        import pytest
        def test_needs_vulkan():
            pytest.skip("no Vulkan runtime here: vulkan could not be imported")
        def test_needs_cuda():
            pytest.skip("no CUDA device")
        def test_refused_feature():
            pytest.skip("vulkan: GLSL.std.450 has no 64-bit transcendental functions (refused at compile time)")
    """))
    (tmp_path / "conftest.py").write_text("from polykern.testing.pytest_plugin import pytest_runtest_makereport  # noqa\n")
    env = dict(os.environ)
    env.pop(require.ENV, None)
    if env_value is not None:
        env[require.ENV] = env_value
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
                           str(tmp_path), str(test)], capture_output=True, text=True, env=env, cwd=tmp_path)


def test_a_skip_of_a_required_tier_fails_and_others_still_skip(tmp_path):
    p = _run_pytest(tmp_path, "lavapipe")
    assert p.returncode != 0, p.stdout
    assert "1 failed, 2 skipped" in p.stdout, p.stdout
    assert "POLYKERN_REQUIRE requires tier lavapipe" in p.stdout
    p = _run_pytest(tmp_path, None)
    assert p.returncode == 0 and "3 skipped" in p.stdout, p.stdout
