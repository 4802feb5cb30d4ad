"""POLYKERN_REQUIRE (polykern.testing.require, polykern.testing.tier_skip): a skip that carries a required
tier as data fails instead of skipping; any other skip stays a skip, whatever its reason says."""
import os
import subprocess
import sys
import textwrap

import pytest

from polykern.errors import PolykernError
from polykern.testing import require, tier_skip


@pytest.mark.parametrize("tier", require.required() if os.environ.get(require.ENV) else [])
def test_required_tier_is_present(tier):
    reason = require.absent(tier)
    assert reason is None, f"{require.ENV} requires {tier}, which is missing here: {reason}"


def test_unknown_tier_is_an_error(monkeypatch):
    monkeypatch.setenv(require.ENV, "pocl,notatier")
    with pytest.raises(PolykernError, match="unknown tier 'notatier'; known tiers: .*lavapipe"):
        require.required()
    with pytest.raises(PolykernError, match="unknown test tier 'vulcan'; known tiers: .*lavapipe"):
        tier_skip.skip("vulcan", "no Vulkan runtime here")


def test_each_runtime_tier_names_its_backend():
    assert require.runtime_tier("vulkan") == "lavapipe"
    assert require.runtime_tier("opencl") == "pocl"
    assert require.runtime_tier("cuda") is None  # no tier: a skip for it is never a failure
    with pytest.raises(pytest.skip.Exception) as e:
        tier_skip.skip_runtime("webgpu", "no WebGPU runtime here")
    assert tier_skip.tiers_of(e.value) == ("wgpu",)
    with pytest.raises(pytest.skip.Exception) as e:
        tier_skip.skip_runtime("cuda", "no CUDA device")
    assert tier_skip.tiers_of(e.value) == ()


SKIPPER = '''
    import pytest
    from polykern.testing import tier_skip

    def test_lavapipe_skip():
        tier_skip.skip("lavapipe", "anything at all")

    @tier_skip.skipif("lavapipe", True, reason="a reason that names no runtime")
    def test_lavapipe_mark():
        pass

    @pytest.mark.requires("lavapipe", absent=None)
    def test_lavapipe_present():
        pass

    @pytest.fixture
    def needs_both():
        tier_skip.skip(("pocl", "lavapipe"), "neither here")

    def test_lavapipe_or_pocl_fixture(needs_both):
        pass

    def test_pocl_skip():
        tier_skip.skip("pocl", "no Vulkan runtime here: vulkan could not be imported")

    def test_untiered_skip_naming_a_tier():
        pytest.skip("no Vulkan runtime here: vulkan could not be imported")

    @pytest.mark.skip(reason="lavapipe not available: not installed")
    def test_untiered_mark_naming_a_tier():
        pass
'''
MODULE_SKIPPER = '''
    from polykern.testing import tier_skip
    tier_skip.skip("lavapipe", "no Vulkan runtime here")

    def test_never_collected():
        pass
'''


def _run_pytest(tmp_path, env_value, source=SKIPPER):
    test = tmp_path / "test_skipper.py"
    test.write_text(textwrap.dedent(source))
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["polykern.testing.tier_skip"]\n')
    env = dict(os.environ)
    env.pop(require.ENV, None)
    if env_value is not None:
        env[require.ENV] = env_value
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--rootdir",
                           str(tmp_path), str(test)], capture_output=True, text=True, env=env, cwd=tmp_path)


def _outcomes(stdout):
    """{test name: "passed" | "failed" | "skipped"} from pytest -rA's short summary; a skip turned into a
    failure in a fixture or a mark (the setup phase) is reported as an ERROR, which counts as failed."""
    out = {}
    for line in stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR"):
            out[rest.split("::")[-1].split(" ")[0]] = "passed" if word == "PASSED" else "failed"
        elif word == "SKIPPED":  # SKIPPED [1] test_skipper.py:12: reason (no test name: count them)
            out.setdefault("skipped", 0)
            out["skipped"] += int(rest.split("]")[0].strip("["))
    return out


def test_a_skip_of_a_required_tier_fails_and_no_other_does(tmp_path):
    p = _run_pytest(tmp_path, "lavapipe")
    assert p.returncode != 0, p.stdout
    assert _outcomes(p.stdout) == {
        "test_lavapipe_skip": "failed", "test_lavapipe_mark": "failed", "test_lavapipe_or_pocl_fixture": "failed",
        "test_lavapipe_present": "passed",
        # Another tier's skip and untiered skips stay skips, even where their reason names the required tier.
        "skipped": 3}, p.stdout
    assert "POLYKERN_REQUIRE requires tier lavapipe on this host: anything at all" in p.stdout
    p = _run_pytest(tmp_path, "pocl")
    assert _outcomes(p.stdout) == {"test_pocl_skip": "failed", "test_lavapipe_or_pocl_fixture": "failed",
                                   "test_lavapipe_present": "passed", "skipped": 4}, p.stdout
    p = _run_pytest(tmp_path, None)
    assert p.returncode == 0 and _outcomes(p.stdout) == {"test_lavapipe_present": "passed", "skipped": 6}, p.stdout


def test_a_module_skipped_for_a_required_tier_fails(tmp_path):
    p = _run_pytest(tmp_path, "lavapipe", MODULE_SKIPPER)
    assert p.returncode not in (0, 5) and "POLYKERN_REQUIRE requires tier lavapipe" in p.stdout, p.stdout
    p = _run_pytest(tmp_path, "wgpu", MODULE_SKIPPER)
    assert p.returncode == 5 and "1 skipped" in p.stdout, p.stdout  # 5: nothing collected, nothing failed


def test_requires_mark_probes_the_tier(tmp_path, monkeypatch):
    (tmp_path / "test_probe.py").write_text(textwrap.dedent('''
        import pytest
        from polykern.testing import require

        require.TIERS["naga"] = require.Tier(lambda: "simulated absence")

        @pytest.mark.requires("naga")
        def test_needs_naga():
            pass
    '''))
    p = _run_pytest(tmp_path, "naga", (tmp_path / "test_probe.py").read_text())
    assert p.returncode != 0 and "requires tier naga on this host: naga not available: simulated absence" in p.stdout, \
        p.stdout
