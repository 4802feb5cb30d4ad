"""Fake backend packages for the discovery tests (test_backend_discovery, test_backend_discovery_hostile,
test_backend_transactional): a ``polykern_<name>`` package written into a folder, its ``register_backend``
and codegen sources, a ``.dist-info`` with entry points, and the autouse fixture that runs each test
with discovery isolated (import ``isolated_discovery`` into a test module to use it)."""
import sys
import textwrap

import pytest

from polykern import backends
from polykern.testing.isolation import isolated

DISCOVERY_MODULES = ("polykern_zzdisc", "polykern_zzmod", "polykern_zzbroken", "polykern_zzsilent",
                     "polykern_zzdup", "polykern_zzstray")


@pytest.fixture(autouse=True)
def isolated_discovery(monkeypatch):
    monkeypatch.delenv("POLYKERN_BACKEND_AUTOLOAD", raising=False)
    monkeypatch.delenv(backends.PATH_ENV, raising=False)
    with isolated(loaded=False):
        yield
    for m in [m for m in sys.modules if m.split(".")[0] in DISCOVERY_MODULES]:
        del sys.modules[m]


def make_package(root, name, init, **files):
    pkg = root / f"polykern_{name}"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(init))
    for fname, body in files.items():
        (pkg / f"{fname}.py").write_text(textwrap.dedent(body))
    return pkg


DECLARING = """
    def register_backend():
        from polykern import backends
        return backends.declare("{name}", "{name}", display_name="{display}", codegen="polykern_{name}.codegen",
                                runtime="polykern_{name}.runtime")
"""
CODEGEN = """
    from polykern import registry
    def register():
        registry.register("target.build.{name}", lambda funcs, target: None)
"""


def write_dist_info(root, dist, entry_points):
    info = root / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[polykern.backends]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points))
