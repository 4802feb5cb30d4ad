"""Where things live: test data in polykern.testing, IR analysis in polykern.passes, and every
document a docstring or comment cites is in this repository. (Import cycles: test_import_cycles.py.)
"""
import ast
import importlib.util
import os
import re
from pathlib import Path

REPO = Path(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = [REPO / "python", REPO / "backends", REPO / "tools", REPO / "tests"]


def _py_files():
    for root in SOURCES:
        for f in sorted(root.rglob("*.py")):
            if "__pycache__" not in f.parts:
                yield f


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    pkg = ".".join(path.relative_to(REPO / "python").with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield mod
            yield from (f"{mod}.{a.name}" for a in node.names)


def test_test_data_is_in_polykern_testing():
    assert importlib.util.find_spec("polykern.testing.c_corpus") is not None
    assert not (REPO / "python" / "polykern" / "codegen" / "c_corpus.py").exists()
    product = [f for f in (REPO / "python" / "polykern").rglob("*.py")
               if "testing" not in f.relative_to(REPO / "python" / "polykern").parts]
    users = [str(f.relative_to(REPO)) for f in product if any(m.startswith("polykern.testing") for m in _imports(f))]
    assert not users, f"the compiler imports its test helpers: {users}"


def test_barrier_fission_is_ir_analysis():
    path = REPO / "python" / "polykern" / "passes" / "barrier_fission.py"
    assert not (REPO / "python" / "polykern" / "codegen" / "llvm_fission.py").exists()
    polykern_imports = {m for m in _imports(path) if m.startswith("polykern")}
    outside_ir = sorted(m for m in polykern_imports if not m.startswith("polykern.ir"))
    assert polykern_imports and not outside_ir, f"barrier_fission.py imports more than the IR: {outside_ir}"


def test_cited_documents_are_in_the_repository():
    """No citation of DESIGN.md (the contract lives outside the repository; docs/ holds what the code
    promises) and every docs/<name>.md a source file names exists."""
    bad = []
    for f in _py_files():
        text = f.read_text(encoding="utf-8")
        rel = f.relative_to(REPO)
        if rel == Path("tests/test_layering.py"):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if re.search(r"DESIGN(\.md|\s*§|\s+section)|shared/DESIGN", line):
                bad.append(f"{rel}:{n}: cites DESIGN (outside the repository): {line.strip()}")
            for doc in re.findall(r"\bdocs/([A-Za-z0-9_.-]+\.md)", line):
                if not (REPO / "docs" / doc).is_file():
                    bad.append(f"{rel}:{n}: cites docs/{doc}, which does not exist")
    assert not bad, "\n".join(bad)
