"""polykern.torch and polykern.jax where their framework does not import: a BackendUnavailableError (an
ImportError) saying what to install, not a bare ModuleNotFoundError (docs/frameworks.md)."""
import importlib
import re
import sys

import pytest

from polykern.errors import BackendUnavailableError


@pytest.mark.parametrize("framework,extra", [("torch", "polykern[torch]"), ("jax", "polykern[jax]")])
def test_a_missing_framework_is_named_with_its_install(monkeypatch, framework, extra):
    monkeypatch.setitem(sys.modules, framework, None)  # `import framework` raises ImportError, as where absent
    monkeypatch.delitem(sys.modules, f"polykern.{framework}", raising=False)
    wanted = rf"polykern\.{framework} needs .* pip install '{re.escape(extra)}'"
    with pytest.raises(BackendUnavailableError, match=wanted):
        importlib.import_module(f"polykern.{framework}")

