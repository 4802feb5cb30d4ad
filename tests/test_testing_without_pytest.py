"""``polykern.testing`` says it has no pytest dependency: every module of it but ``tier_skip`` (the
POLYKERN_REQUIRE hook) imports in a process where pytest cannot be imported (``testing.require`` imported
pytest at the top)."""
import os
import pkgutil
import subprocess
import sys

import polykern.testing

PYTEST_ONLY = {"tier_skip"}


def _modules():
    return sorted(m.name for m in pkgutil.iter_modules(polykern.testing.__path__) if m.name not in PYTEST_ONLY)


def test_the_package_says_it_needs_no_pytest():
    assert "no pytest dependency" in polykern.testing.__doc__
    assert "require" in _modules() and len(_modules()) > 10


def test_every_testing_module_imports_without_pytest():
    code = ("import importlib, sys\n"
            "sys.modules['pytest'] = None  # `import pytest` raises ImportError\n"
            f"for name in {_modules()!r}:\n"
            "    importlib.import_module('polykern.testing.' + name)\n"
            "from polykern.testing import require\n"
            "assert require.TIERS and require.known('pocl') == 'pocl'\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]
