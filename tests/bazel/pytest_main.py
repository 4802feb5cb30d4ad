"""Runs one pytest file as a Bazel test (see pytest.bzl).

Honours Bazel's test protocol: XML_OUTPUT_FILE (JUnit report), TESTBRIDGE_TEST_ONLY (--test_filter,
passed to pytest -k), TEST_TMPDIR (pytest's and Hypothesis' scratch space, and polykern's cache folder: see
polykern.testing.cache_isolation). Skips are listed with their reasons (-rs) in the test log.
"""
import os
import sys


def main():
    sys.dont_write_bytecode = True
    tmp = os.environ.get("TEST_TMPDIR")
    # tier_skip: pytest.mark.requires and POLYKERN_REQUIRE (the root conftest.py loads it in the pytest tier)
    opts = ["-p", "no:cacheprovider", "-p", "polykern.testing.tier_skip", "-rfEsxX", "--color=no"]
    from polykern.testing.cache_isolation import isolate

    isolate(tmp)
    if tmp:
        os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tmp, "hypothesis"))
        opts += ["--basetemp", os.path.join(tmp, "pytest")]
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        opts += ["--junitxml", xml]
    only = os.environ.get("TESTBRIDGE_TEST_ONLY")
    if only:
        opts += ["-k", only]
    import pytest

    class FileSkips:
        """A file that skips itself whole (its framework or device is absent: ``pytest.importorskip`` at
        module level) collects no test, which pytest reports as exit status 5; that is a skip, its reason
        in the log (-rs), not a failure. A -k filter that matches nothing still fails."""

        skipped = False

        def pytest_collectreport(self, report):
            if report.skipped:
                FileSkips.skipped = True

    rc = pytest.main(opts + sys.argv[1:], plugins=[FileSkips()])
    if rc == pytest.ExitCode.NO_TESTS_COLLECTED and FileSkips.skipped and not only:
        return 0
    return rc


if __name__ == "__main__":
    sys.exit(main())
