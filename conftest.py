"""Repository-wide pytest setup: POLYKERN_REQUIRE turns the skip of a required tier into a failure
(polykern.testing.require), for tests/ and every backends/*/tests directory alike."""
from polykern.testing.require import pytest_runtest_makereport  # noqa: F401
