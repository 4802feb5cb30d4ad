"""The test suite's layout: helpers that test files share live in support modules (tests/*_support.py,
runtimes.py, ...), never in a test file, because a test file is not in another test's Bazel runfiles; so
the Bazel tier runs the same files as pytest, and each file tests/BUILD.bazel still keeps out of it says why."""
import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def _test_files():
    return sorted(TESTS.glob("test_*.py")) + sorted(REPO.glob("backends/*/tests/test_*.py"))


def _imported(path):
    """The modules a file imports (import, from-import, pytest.importorskip), anywhere in it."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip" and node.args
              and isinstance(node.args[0], ast.Constant)):
            yield node.args[0].value


def test_no_test_file_imports_another():
    test_modules = {p.stem for p in _test_files()}
    found = [f"{p.relative_to(REPO)} imports {m}" for p in _test_files() for m in _imported(p)
             if m in test_modules and m != p.stem]
    assert not found, ("a test file imports another test file; move what they share into a support module "
                       "(tests/native_support.py and the like): " + "; ".join(found))


def _excluded():
    """[(file, the comment lines above it)] of the exclude list of pytest_file_tests in tests/BUILD.bazel."""
    build = TESTS / "BUILD.bazel"
    if not build.exists():
        pytest.skip("tests/BUILD.bazel is not in this tree")
    text = build.read_text(encoding="utf-8")
    m = re.search(r"pytest_file_tests\(.*?exclude = \[\n(.*?)\n\s*\]", text, re.S)
    assert m, "tests/BUILD.bazel: no exclude list in pytest_file_tests"
    out, comment = [], []
    for line in m.group(1).splitlines():
        line = line.strip()
        if line.startswith("#"):
            comment.append(line)
        elif line.startswith('"'):
            out.append((line.strip('",'), list(comment)))
        elif not line:
            comment = []
    return out


def test_each_bazel_exclusion_exists_and_says_why():
    excluded = _excluded()
    assert excluded, "the exclude list parsed empty"
    for name, why in excluded:
        assert (TESTS / name).is_file(), f"tests/BUILD.bazel excludes {name}, which does not exist"
        assert why, f"tests/BUILD.bazel excludes {name} without a comment saying why"


def test_no_file_is_excluded_only_for_a_helper():
    """Sharing a helper is no reason to leave the Bazel tier any more (it moves to a support module)."""
    for name, why in _excluded():
        text = " ".join(why)
        assert not re.search(r"helpers? of|reuses|fixtures? of test_", text), (name, text)
