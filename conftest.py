"""Repository-wide pytest setup: POLYKERN_REQUIRE turns the skip of a required tier into a failure
(polykern.testing.require; the hook is polykern.testing.pytest_plugin's), for tests/ and every
backends/*/tests directory alike; the polykern cache is a temporary folder and the compile cache is off (polykern.testing.cache_isolation)."""
from polykern.testing.cache_isolation import isolate
from polykern.testing.pytest_plugin import pytest_runtest_makereport  # noqa: F401

isolate()
