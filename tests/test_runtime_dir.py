"""The WebGPU and Vulkan runtimes give the driver stack a private XDG_RUNTIME_DIR where none is valid, as
./dev does (pip users saw "error: XDG_RUNTIME_DIR is invalid or not set" from Mesa's EGL probe
four times in `polykern backends`); `import polykern` alone leaves the environment alone."""
import importlib.util
import os
import stat
import subprocess
import sys
import tempfile

import pytest

from polykern.runtime.xdg_runtime_dir import RUNTIME_DIR_ENV, ensure_runtime_dir
from polykern.testing import tier_skip

NOISE = "XDG_RUNTIME_DIR is invalid or not set"
pytestmark = pytest.mark.skipif(not hasattr(os, "getuid") or sys.platform == "darwin",
                                reason="XDG_RUNTIME_DIR is a Linux/BSD session directory")


@pytest.fixture
def tmpdir_as_temp(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv(RUNTIME_DIR_ENV, raising=False)
    return tmp_path


def test_an_unset_dir_gets_a_private_one(tmpdir_as_temp):
    path = ensure_runtime_dir()
    assert path == os.environ[RUNTIME_DIR_ENV] == str(tmpdir_as_temp / f"polykern-runtime-{os.getuid()}")
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()
    assert ensure_runtime_dir() is None  # now valid: left alone


def test_an_invalid_dir_is_replaced_and_a_loose_mode_tightened(tmpdir_as_temp, monkeypatch):
    mine = tmpdir_as_temp / f"polykern-runtime-{os.getuid()}"
    mine.mkdir(mode=0o755)
    os.chmod(mine, 0o755)
    monkeypatch.setenv(RUNTIME_DIR_ENV, str(tmpdir_as_temp / "missing"))
    assert ensure_runtime_dir() == str(mine)
    assert stat.S_IMODE(os.stat(mine).st_mode) == 0o700


def test_a_valid_dir_is_kept(tmpdir_as_temp, monkeypatch):
    valid = tmpdir_as_temp / "session"
    valid.mkdir(mode=0o700)
    monkeypatch.setenv(RUNTIME_DIR_ENV, str(valid))
    assert ensure_runtime_dir() is None and os.environ[RUNTIME_DIR_ENV] == str(valid)


def test_a_file_in_the_way_is_not_used(tmpdir_as_temp):
    (tmpdir_as_temp / f"polykern-runtime-{os.getuid()}").write_text("not a directory")
    assert ensure_runtime_dir() is None and RUNTIME_DIR_ENV not in os.environ


def _run(code):
    env = {k: v for k, v in os.environ.items() if k != RUNTIME_DIR_ENV}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def test_importing_polykern_sets_nothing():
    r = _run("import os, polykern; pk = polykern; pk.build; print(os.environ.get('XDG_RUNTIME_DIR'))")
    assert r.returncode == 0 and r.stdout.strip() == "None", r.stderr


@tier_skip.skipif("wgpu", importlib.util.find_spec("wgpu") is None, reason="wgpu (the WebGPU runtime) is not installed")
def test_webgpu_probing_prints_no_driver_noise():
    r = _run("import sys; from polykern import backends; from polykern.cli import main; sys.exit(main(['backends']))")
    assert r.returncode == 0, r.stderr
    assert NOISE not in r.stderr + r.stdout, r.stderr
    assert "webgpu" in r.stdout
