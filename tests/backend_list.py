"""THE backend list for tests: tools/gen_backends.py, which reads BACKENDS of backends/backends.bzl.

    from backend_list import REPO, gen
    gen.read_backends(REPO)        # the listed backends (name, targets, extra, config, ...)

Under Bazel, //tests:support carries both files as data (the runfiles tree keeps the layout).
"""
import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(REPO, "tools", "gen_backends.py")


def _load():
    name = "polykern_tools_gen_backends"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, GEN)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    return mod


gen = _load()
