"""pk.autotune says on stderr what it tried and chose (tuning was silent): always with
verbose=True, never with verbose=False or POLYKERN_AUTOTUNE_VERBOSE=0, and by default once a tuning has
taken longer than a second."""
import io

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.autotune_report import SLOW_SECONDS, VERBOSE_ENV, TuningReport, verbosity

CONFIGS = [{"block": 32}, {"block": 64}]


@pk.kernel
def bump(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = y[i] + 1.0


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYKERN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(VERBOSE_ENV, raising=False)
    monkeypatch.delenv("POLYKERN_AUTOTUNE", raising=False)


def _tune(**options):
    k = pk.autotune(configs=CONFIGS, key=["n"], **options)(bump).build(targets=["llvm"])
    y = np.zeros(100, np.float32)
    k(100, y, grid=lambda c: ((100 + c["block"] - 1) // c["block"],))
    return k, y


def test_verbose_reports_each_config_and_the_choice(capsys):
    k, y = _tune(verbose=True)
    err = capsys.readouterr().err
    assert "tuning 'bump' over 2 configs for n=100" in err, err
    for i, cfg in enumerate(CONFIGS):
        assert f"config {i} {cfg!r}: " in err and " ms" in err, err
    chosen = k.config((100, y))
    assert f"'bump' chose config {CONFIGS.index(chosen)} {chosen!r}" in err, err
    assert (y == 1.0).all()  # the trial runs were undone, the real launch ran once


def test_verbose_reports_a_cached_choice(capsys):
    _tune(verbose=True)
    capsys.readouterr()
    _tune(verbose=True)
    assert "chosen earlier (cache " in capsys.readouterr().err


@pytest.mark.parametrize("options,env", [({"verbose": False}, None), ({}, "0"), ({}, None)])
def test_silent_when_asked_or_fast(capsys, monkeypatch, options, env):
    if env is not None:
        monkeypatch.setenv(VERBOSE_ENV, env)
    _tune(**options)
    assert "polykern autotune" not in capsys.readouterr().err


def test_the_setting_turns_reports_on(capsys, monkeypatch):
    monkeypatch.setenv(VERBOSE_ENV, "1")
    _tune()
    assert "'bump' chose config" in capsys.readouterr().err


@pytest.mark.parametrize("flag,env,want", [(True, "0", True), (False, "1", False), (None, "off", False),
                                           (None, "yes", True), (None, "", None)])
def test_verbose_argument_wins_over_the_setting(monkeypatch, flag, env, want):
    monkeypatch.setenv(VERBOSE_ENV, env)
    assert verbosity(flag) is want


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_default_reports_once_tuning_is_slow():
    clock, out = Clock(), io.StringIO()
    report = TuningReport("k", CONFIGS, [["n", 5]], None, stream=out, clock=clock)
    report.trying(0)
    report.tried(0, 0.001)
    assert out.getvalue() == ""  # fast so far: nothing
    clock.now = SLOW_SECONDS + 0.5
    report.trying(1)  # slow now: what was tried so far appears at once
    lines = out.getvalue().splitlines()
    assert lines == ["polykern autotune: tuning 'k' over 2 configs for n=5",
                     "polykern autotune:   config 0 {'block': 32}: 1.000 ms"], lines
    report.tried(1, None, RuntimeError("block 64 is over the device's limit\nmore"))
    report.chose(0, 0.001, 5)
    lines = out.getvalue().splitlines()[2:]
    assert lines == ["polykern autotune:   config 1 {'block': 64}: skipped (RuntimeError: block 64 is over the "
                     "device's limit)",
                     "polykern autotune: 'k' chose config 0 {'block': 32} (1.000 ms, the median of 5 runs); tuning "
                     "took 1.50 s"], lines


def test_the_default_is_silent_for_a_fast_tuning():
    clock, out = Clock(), io.StringIO()
    report = TuningReport("k", CONFIGS, [], None, stream=out, clock=clock)
    for i in range(2):
        report.trying(i)
        report.tried(i, 0.001)
        clock.now += 0.1
    report.chose(0, 0.001, 5)
    assert out.getvalue() == ""


def test_a_slow_first_build_counts(capsys, monkeypatch):
    """The clock starts before the first configuration is built (the key's identity needs it), so a tuning
    whose cost is that build is reported too."""
    from polykern import autotuning

    real = autotuning.build

    def slow_build(*a, **kw):
        slow_build.calls += 1
        if slow_build.calls == 1:
            clock.now += SLOW_SECONDS + 1
        return real(*a, **kw)

    slow_build.calls = 0
    clock = Clock()
    monkeypatch.setattr(autotuning, "build", slow_build)
    monkeypatch.setattr(autotuning, "_clock", clock)
    _tune()
    err = capsys.readouterr().err
    assert "tuning 'bump' over 2 configs" in err and "'bump' chose config" in err, err
