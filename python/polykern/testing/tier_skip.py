"""Skips that carry their tier as data, and the pytest plugin that fails them under ``POLYKERN_REQUIRE``
(``polykern.testing.require`` holds the tiers).

- ``pytest.mark.requires("lavapipe")``: skip the test where the tier's probe says it is absent;
  ``pytest.mark.requires("lavapipe", absent=why)``: the test's own condition, skip when ``why`` is a
  non-empty reason (``skipif(tier, condition, reason)`` builds this from a skipif's arguments);
- ``skip(tier, reason)``: skip now (in a test, a fixture or at module level), ``skip_if_absent(tier)``;
- ``skip_runtime(backend, reason)`` / ``runtime_skipif(backend, condition, reason)``: the absence of a
  backend's runtime, tiered where a tier is that runtime (``require.runtime_tier``).

Such a skip fails instead when ``POLYKERN_REQUIRE`` names its tier. A skip without a tier (a declared
refusal of a feature, a tool no tier covers) is never a failure, whatever its reason says. The root
``conftest.py`` and ``tests/bazel/pytest_main.py`` load this module as a plugin.
"""
from __future__ import annotations

from typing import Iterable, Tuple, Union

import pytest

from ..errors import PolykernError
from . import require

MARK = "requires"
ATTR = "polykern_tiers"  # the attribute of a pytest skip exception that carries its tiers
Tiers = Union[str, Iterable[str]]


def _tiers(tier: Tiers) -> Tuple[str, ...]:
    names = (tier,) if isinstance(tier, str) else tuple(tier)
    if not names:
        raise PolykernError("a tiered skip names at least one tier (polykern.testing.require.TIERS)")
    return tuple(require.known(t) for t in names)


def tiers_of(exc: BaseException) -> Tuple[str, ...]:
    """The tiers a skip exception carries (``()`` for a skip without a tier)."""
    return getattr(exc, ATTR, ())


def skip(tier: Tiers, reason: str, *, _use_item_location: bool = False):
    """Skip the calling test, fixture or module because ``tier`` (a tier or several) is absent here: a
    pytest skip carrying the tiers (``tiers_of``)."""
    __tracebackhide__ = True
    exc = pytest.skip.Exception(reason, allow_module_level=True, _use_item_location=_use_item_location)
    setattr(exc, ATTR, _tiers(tier))
    raise exc


def skip_if_absent(tier: str) -> None:
    """Skip the calling test when ``tier``'s probe says it is absent here, with the probe's reason."""
    __tracebackhide__ = True
    why = require.absent(tier)
    if why is not None:
        skip(tier, f"{tier} not available: {why}")


def skipif(tier: Tiers, condition: object, reason: str):
    """``pytest.mark.skipif(condition, reason=reason)`` for the absence of ``tier``: the skip carries it."""
    _tiers(tier)
    return pytest.mark.requires(tier, absent=reason if condition else None)


def skip_runtime(backend: str, reason: str):
    """Skip because ``backend``'s runtime is absent: tiered where a tier is that runtime
    (``require.runtime_tier``), a plain skip otherwise (cuda, rocm, metal)."""
    __tracebackhide__ = True
    tier = require.runtime_tier(backend)
    if tier is None:
        pytest.skip(reason)
    skip(tier, reason)


def runtime_skipif(backend: str, condition: object, reason: str):
    """``skipif`` for the absence of ``backend``'s runtime (tiered as ``skip_runtime`` says)."""
    tier = require.runtime_tier(backend)
    return pytest.mark.skipif(bool(condition), reason=reason) if tier is None else skipif(tier, condition, reason)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"{MARK}(tier, absent=...): the test needs the tier (a name of polykern.testing.require.TIERS, "
        "or a tuple of them); it skips, carrying the tier, when the tier's probe (or the reason given as "
        "absent=) says it is absent; POLYKERN_REQUIRE naming the tier makes that skip a failure")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    for mark in item.iter_markers(name=MARK):
        if len(mark.args) != 1:
            raise PolykernError(f"{item.nodeid}: pytest.mark.{MARK} takes one tier (or a tuple of tiers), "
                                f"got {mark.args}")
        tier = mark.args[0]
        if "absent" in mark.kwargs:
            why = mark.kwargs["absent"]
        else:
            names = _tiers(tier)
            why = next((f"{t} not available: {r}" for t in names for r in [require.absent(t)] if r), None)
        if why:
            skip(tier, str(why), _use_item_location=True)


def _fail_if_required(report, excinfo) -> None:
    exc = excinfo.value if excinfo is not None else None
    if not report.skipped or exc is None:
        return
    hit = [t for t in tiers_of(exc) if t in require.required()]
    if hit:
        report.outcome = "failed"
        report.longrepr = f"skipped, but {require.ENV} requires tier {', '.join(hit)} on this host: {exc.msg}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A tiered skip of a test (setup, call) whose tier ``POLYKERN_REQUIRE`` names is a failure."""
    outcome = yield
    _fail_if_required(outcome.get_result(), call.excinfo)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """So is a tiered skip of a whole module at import (``skip(tier, reason)`` at module level)."""
    outcome = yield
    report = outcome.get_result()
    call = getattr(report, "call", None)  # pytest keeps the CallInfo on the collect report
    _fail_if_required(report, getattr(call, "excinfo", None))
