"""./dev gives the driver stack a session runtime directory: no "XDG_RUNTIME_DIR is invalid or not
set" lines from Mesa's EGL probing (wgpu lists an OpenGL adapter) in `./dev demo` and friends."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOISE = "XDG_RUNTIME_DIR is invalid or not set"


def _env(**kw):
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(kw)
    return env


def _backends(argv, env):
    return subprocess.run(argv + [sys.executable, "-m", "polykern", "backends"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_dev_sets_a_private_runtime_dir():
    r = subprocess.run(["./dev", "run", "sh", "-c", 'echo "$XDG_RUNTIME_DIR"; stat -c %a "$XDG_RUNTIME_DIR"'],
                       cwd=REPO, env=_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    path, mode = r.stdout.split()
    assert os.path.isdir(path) and mode == "700" and os.stat(path).st_uid == os.getuid()


def test_dev_keeps_a_valid_runtime_dir(tmp_path):
    mine = tmp_path / "xdg"
    mine.mkdir(mode=0o700)
    r = subprocess.run(["./dev", "run", "sh", "-c", 'echo "$XDG_RUNTIME_DIR"'], cwd=REPO,
                       env=_env(XDG_RUNTIME_DIR=str(mine)), capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == str(mine)


def test_no_driver_noise_under_dev():
    bare = _backends([], _env())
    under_dev = _backends(["./dev", "run"], _env())
    assert under_dev.returncode == 0, under_dev.stderr
    assert NOISE not in under_dev.stdout + under_dev.stderr
    # Real errors still show: ./dev changes the environment, it filters nothing. (Where this host's
    # drivers print the line without ./dev, the control shows the test can see it.)
    if NOISE in bare.stderr:
        assert under_dev.stdout == bare.stdout
