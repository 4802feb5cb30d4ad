"""A copy of this checkout that pip can build (python/, backends/, pyproject.toml, setup.py, README.md),
without caches, build leftovers, golden files or tests: for the tests that install polykern into a
fresh virtualenv (test_install_wheel.py, test_out_of_tree_backend.py)."""
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist", "golden", "tests")


def copy_buildable_source(dest: Path) -> Path:
    """``dest`` (created here) holding what ``pip install dest`` / ``pip wheel dest`` needs."""
    dest.mkdir()
    for name in ("python", "backends"):
        shutil.copytree(REPO / name, dest / name, ignore=IGNORE)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, dest / name)
    return dest
