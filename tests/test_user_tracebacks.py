"""A user error leaves polykern's entry point without polykern's internal frames (every build
error came after ~56 lines of compiler traceback); POLYKERN_TRACEBACK=full keeps them."""
import os
import traceback

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import KernelTypeError, LaunchError
from polykern.user_tracebacks import TRACEBACK_ENV

PKG = os.path.dirname(pk.__file__)


@pk.kernel
def mixed(f: f32, i: i32, y: Buffer[f32]):
    y[0] = f * i


@pk.kernel
def fill(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = 1.0


def _polykern_frames(err):
    text = "".join(traceback.format_exception(err))
    files = [ln.split('"')[1] for ln in text.splitlines() if ln.startswith('  File "')]
    return text, [f for f in files if f.startswith(PKG + os.sep) or os.sep + "polykern_" in f]


def _build_error():
    with pytest.raises(KernelTypeError) as info:
        pk.build([mixed], targets=["llvm"])
    return info.value


def test_a_kernel_type_error_shows_only_the_entry_point(monkeypatch):
    monkeypatch.delenv(TRACEBACK_ENV, raising=False)
    err = _build_error()
    text, frames = _polykern_frames(err)
    assert len(frames) == 1, text  # the entry point that re-raised it
    assert __file__ in text and "mismatched operand types f32 and i32" in text
    assert "During handling" not in text and "direct cause" not in text


def test_full_tracebacks_on_request(monkeypatch):
    monkeypatch.setenv(TRACEBACK_ENV, "full")
    text, frames = _polykern_frames(_build_error())
    assert any(f.endswith(os.path.join("lang", "frontend.py")) for f in frames), text
    assert len(frames) > 5, text


def test_a_launch_error_shows_only_the_entry_point(monkeypatch):
    monkeypatch.delenv(TRACEBACK_ENV, raising=False)
    mod = pk.build([fill], targets=["llvm"])
    with pytest.raises(LaunchError) as info:
        mod["fill"](4, np.zeros(4, np.int32), grid=1, block=4)
    text, frames = _polykern_frames(info.value)
    assert len(frames) == 1 and "expected float32 elements" in text, text


def test_the_users_own_frames_stay(monkeypatch):
    """A grid function of the user's raising a PolykernError keeps its frame."""
    monkeypatch.delenv(TRACEBACK_ENV, raising=False)

    def grid_of(cfg):
        raise LaunchError("no grid for this configuration")

    tuned = pk.autotune(configs=[{"block": 4}], enabled=False)(fill).build(targets=["llvm"])
    with pytest.raises(LaunchError) as info:
        tuned(4, np.zeros(4, np.float32), grid=grid_of)
    text, frames = _polykern_frames(info.value)
    assert "in grid_of" in text and len(frames) == 1, text


def test_other_exceptions_keep_every_frame(monkeypatch):
    """Not a user error (here a TypeError from inside the build): nothing is hidden."""
    monkeypatch.delenv(TRACEBACK_ENV, raising=False)
    from polykern import pipeline

    def broken(*a, **kw):
        raise TypeError("internal")

    monkeypatch.setattr(pipeline, "build", broken)
    with pytest.raises(TypeError) as info:
        pk.build([fill])
    text, frames = _polykern_frames(info.value)
    assert os.path.join(PKG, "__init__.py") in frames, text  # pk.build's own frame, below the entry point


def test_warnings_still_name_the_users_line(tmp_path, monkeypatch):
    """The entry point is one more frame between the user and autotune's warnings: they still point at the
    user's call (a corrupt cache file here)."""
    monkeypatch.setenv("POLYKERN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("POLYKERN_AUTOTUNE", raising=False)
    tuned = pk.autotune(configs=[{"block": 4}], key=["n"])(fill).build(targets=["llvm"])
    y = np.zeros(4, np.float32)
    path = tuned.cache_path((4, y))
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("{not json")
    with pytest.warns(RuntimeWarning, match="ignoring unreadable cache file") as rec:
        tuned(4, y, grid=1)
    assert rec[0].filename == __file__, rec[0].filename


def test_an_autotune_decoration_error_shows_only_the_entry_point(monkeypatch):
    monkeypatch.delenv(TRACEBACK_ENV, raising=False)
    with pytest.raises(KernelTypeError) as info:
        pk.autotune(configs=[{"block": 4, "NOPE": 1}])(fill)
    text, frames = _polykern_frames(info.value)
    assert len(frames) == 1 and "has no pk.constexpr or pk.dtype parameter 'NOPE'" in text, text
