"""Repository-wide pytest setup: POLYKERN_REQUIRE turns the skip of a required tier into a failure
(the plugin polykern.testing.tier_skip), for tests/ and every backends/*/tests directory alike; the
polykern cache is a temporary folder and the compile cache is off (polykern.testing.cache_isolation)."""
from polykern.testing.cache_isolation import isolate

pytest_plugins = ["polykern.testing.tier_skip"]

isolate()
