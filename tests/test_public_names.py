"""``polykern.__all__``: ``from polykern import *`` binds the public API and leaves Python's own ``abs``,
``max``, ``min``, ``pow`` alone (before ``__all__`` a star import replaced them with the kernel builtins,
which raise outside a kernel); every builtin docs/language.md names as ``pk.<name>`` is an attribute."""
import builtins
import pathlib
import re

import pytest

import polykern as pk
from polykern.lang.builtins import BUILTINS

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "language.md"
SHADOWED = ("abs", "max", "min", "pow")


def test_star_import_leaves_python_builtins_alone():
    scope = {}
    exec("from polykern import *", scope)
    for name in SHADOWED:
        assert name not in scope, f"from polykern import * binds {name!r}, hiding Python's {name}"
    exec("a, b, c, d = abs(-2), max(1, 3), min(1, 3), pow(2, 5)", scope)
    assert (scope["a"], scope["b"], scope["c"], scope["d"]) == (2, 3, 1, 32)
    assert scope["f32"] is pk.f32 and scope["kernel"] is pk.kernel and scope["sqrt"] is pk.sqrt


def test_every_name_in_all_exists_and_no_builtin_is_hidden():
    for name in pk.__all__:
        assert hasattr(pk, name), f"polykern.__all__ names {name!r}, which polykern does not define"
        assert not hasattr(builtins, name), f"polykern.__all__ exports {name!r}, hiding Python's own"
    assert len(set(pk.__all__)) == len(pk.__all__)


def test_all_exports_every_builtin_that_does_not_hide_pythons():
    missing = [n for n in BUILTINS if n not in SHADOWED and n not in pk.__all__]
    assert not missing, f"kernel builtins missing from polykern.__all__: {missing}"
    for name in ("build", "load", "autotune", "kernel", "func", "Buffer", "f16", "bf16", "constexpr"):
        assert name in pk.__all__


def test_documented_pk_names_are_attributes():
    if not DOC.exists():  # Bazel runfiles hold no docs/ (as test_language_doc.py)
        pytest.skip("docs/language.md is not in this tree")
    # `pk.subgroup_` / `pk.frag_` are prefixes in prose ("pk.frag_*"); a name ends on a letter or digit.
    names = set(re.findall(r"\bpk\.([A-Za-z][A-Za-z0-9_]*[A-Za-z0-9])\b(?!\*)", DOC.read_text()))
    assert len(names) > 80, "the language reference should name the builtins as pk.<name>"
    missing = sorted(n for n in names if not hasattr(pk, n))
    assert not missing, f"docs/language.md names pk.{missing} but polykern has no such attribute"
    for name in SHADOWED:
        assert getattr(pk, name) is BUILTINS[name]


def test_python_pow_in_a_kernel_is_pk_pow(tmp_path):
    """With ``pow`` no longer star-imported, a kernel's bare ``pow(x, y)`` is Python's, which means pk.pow."""
    import numpy as np

    from kernel_sources import make_kernel

    k = make_kernel(tmp_path, "def kk(x: Buffer[f32]):\n    x[0] = pow(x[0], x[1])\n")
    x = np.array([3.0, 2.0], np.float32)
    pk.build([k], ["llvm"])["kk"](x, grid=1, block=1)
    assert x[0] == 9.0
