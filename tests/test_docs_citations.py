"""The docs cite only what a reader of the repository has: every file path in docs/*.md and
backends/*/README.md exists, and no text (docs, READMEs, comments, docstrings) points at "issue 21" or
"session 6" of a tracker or a work log that is not in the repository (it says what was meant: the
feature, the section, the date). docs/internals.md cited a design document kept outside the repository,
backends/rocm/README.md a devmath.py that no longer existed, and about 120 places an issue or session.
"""
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
DOCS = sorted((REPO / "docs").glob("*.md")) + sorted(REPO.glob("backends/*/README.md")) + [REPO / "README.md"]
# A path as docs write it: folders and a file with a known suffix (`codegen/cpu/subgroups.py`,
# `backends/rocm/README.md`); a name in angle brackets (`polykern_<x>/...`) is a pattern, not a path.
PATH = re.compile(r"(?<![\w./<>$-])((?:\.\./|\./)?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+"
                  r"\.(?:py|md|c|h|bzl|sh|toml|json|txt|bazel))\b")
TRACKER = re.compile(r"\b(?:issue|session)s?\s+#?\d+", re.IGNORECASE)
SOURCE_SUFFIXES = {".py", ".md", ".c", ".h", ".bzl", ".bazel", ".sh", ".toml"}
# Saved fuzz cases are data (their notes quote the run that found them).
NOT_TEXT = ("tests/fuzz_regressions/",)


def _bases(doc):
    """Where a path in ``doc`` may be rooted: the repository, the doc's folder, the core package (docs
    write `codegen/x.py`), the backends' folders and, in a backend's README, its package."""
    out = [REPO, doc.parent, REPO / "python" / "polykern", REPO / "python", REPO / "tests"]
    out += sorted(p for p in (REPO / "backends").iterdir() if p.is_dir())
    if doc.parent.parent == REPO / "backends":
        out += sorted(doc.parent.glob("polykern_*"))
    return out


def _shown(path):
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def missing_paths(doc):
    text = doc.read_text(encoding="utf-8")
    bad = []
    for n, line in enumerate(text.splitlines(), 1):
        for path in PATH.findall(line):
            if not any((base / path).exists() for base in _bases(doc)):
                bad.append(f"{_shown(doc)}:{n}: cites {path}, which is not in the repository")
    return bad


def tracker_references(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    return [f"{path.relative_to(REPO)}:{n}: {m.group(0)!r} names a tracker/log the repository does not hold: "
            f"say what it was (the feature, the section, the date)"
            for n, line in enumerate(text.splitlines(), 1) for m in TRACKER.finditer(line)]


def _source_files():
    me = pathlib.Path(__file__).resolve()  # this file quotes what it looks for
    for top in ("docs", "python", "backends", "tests", "tools", "native", "benchmarks", "examples",
                "toolchains"):
        for f in sorted((REPO / top).rglob("*")):
            rel = f.relative_to(REPO).as_posix()
            if f.is_file() and f.suffix in SOURCE_SUFFIXES and not rel.startswith(NOT_TEXT) and f != me:
                yield f
    yield REPO / "README.md"


@pytest.fixture(scope="module")
def docs():
    if not (REPO / "docs").is_dir():  # Bazel runfiles hold no docs/ (as test_language_doc.py)
        pytest.skip("docs/ is not in this tree")
    return DOCS


def test_every_cited_path_exists(docs):
    bad = [line for doc in docs for line in missing_paths(doc)]
    assert not bad, "\n".join(bad)


def test_no_issue_or_session_numbers(docs):
    bad = [line for f in _source_files() for line in tracker_references(f)]
    assert not bad, f"{len(bad)} references:\n" + "\n".join(bad)


def test_the_checks_can_fail(tmp_path):
    doc = tmp_path / "page.md"
    doc.write_text("See `python/polykern/no_such_module.py` and `codegen/cpu/subgroups.py`.\n"
                   "Fixed in issue 21; found in Session 6, see issue #16.\n")
    assert [b.split(": cites ")[1].split(",")[0] for b in missing_paths(doc)] == ["python/polykern/no_such_module.py"]
    assert len(TRACKER.findall(doc.read_text())) == 3
