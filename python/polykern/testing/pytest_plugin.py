"""The pytest side of ``POLYKERN_REQUIRE`` (``polykern.testing.require``): a hook that turns the skip of a
test whose reason says a required tier is absent into a failure. The repository's root ``conftest.py``
imports it; it is the one module of ``polykern.testing`` that needs pytest."""
from __future__ import annotations

import pytest

from .require import ENV, required, says_absent, tiers_named_by


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Turn the skip of a test whose reason names a required tier into a failure."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or getattr(item, "_polykern_require_checked", False):
        return
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        reason = str(report.longrepr[2])
    else:
        reason = str(report.longrepr)
    if hasattr(report, "wasxfail"):
        return
    if not says_absent(reason):
        return  # a declared refusal of a feature, not a lost tier
    hit = [t for t in tiers_named_by(reason) if t in required()]
    if hit:
        item._polykern_require_checked = True
        report.outcome = "failed"
        report.longrepr = (f"skipped, but {ENV} requires tier {', '.join(hit)} on this host: {reason}")
