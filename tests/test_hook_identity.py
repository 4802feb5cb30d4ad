"""A build hook's identity (polykern.hooks.identity, recorded in the artifact) is the same in every
process for the same hook, and differs when what defines the hook's behaviour differs: found by a
red-team pass over the plugin interface, where a closure over a function or a set of strings gave another digest in
each process (memory addresses, string hash order) and two callable objects with different state gave
the same one."""
import json
import os
import subprocess
import sys
from pathlib import Path

from polykern import hooks

HERE = Path(__file__).resolve()
_PRINT = (f"import json, sys; sys.path.insert(0, sys.argv[1]); import {HERE.stem} as t; from polykern import hooks; "
          "print(json.dumps({k: hooks.identity(v) for k, v in t.hooks_by_name().items()}))")

# ---------------------------------------------------------------- hooks as users write them

def strip_comments(source):
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("//"))


def over_a_function():
    clean = strip_comments

    def hook(source, target):
        return clean(source)
    return hook


def over_a_set():
    flags = {"ALPHA", "BETA", "GAMMA", "DELTA", "EPSILON"}

    def hook(source, target):
        return "".join(f"#define {f}\n" for f in sorted(flags)) + source
    return hook


def recursive():
    def hook(source, target, depth=0):
        return source if depth else hook(source, target, depth + 1)
    return hook


class Banner:
    """A callable object: its behaviour is its text."""

    def __init__(self, text):
        self.text = text

    def __call__(self, source, target):
        return self.text + source

    def prepend(self, source, target):
        return self.text + source


def hooks_by_name():
    return {
        "over_a_function": over_a_function(),
        "over_a_set": over_a_set(),
        "recursive": recursive(),
        "banner_x": Banner("// x\n"),
        "banner_method_x": Banner("// x\n").prepend,
        "lambda": lambda source, target: "// lambda\n" + source,
        "builtin": str.strip,
    }


# ---------------------------------------------------------------- tests


def _identities_in_a_process(seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": os.pathsep.join(sys.path)}  # polykern as here
    out = subprocess.run([sys.executable, "-c", _PRINT, str(HERE.parent)], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout
    return json.loads(out)


def test_the_identity_is_the_same_in_every_process():
    first, second = _identities_in_a_process("1"), _identities_in_a_process("2")
    assert first == second and len(set(first.values())) == len(first)


def test_a_callable_objects_state_is_part_of_its_identity():
    x, y = Banner("// x\n"), Banner("// y\n")
    assert hooks.identity(x) != hooks.identity(y)
    assert hooks.identity(x) == hooks.identity(Banner("// x\n"))
    assert hooks.identity(x.prepend) != hooks.identity(y.prepend)
    assert hooks.identity(x.prepend).startswith(f"{__name__}.Banner.prepend sha256:")
