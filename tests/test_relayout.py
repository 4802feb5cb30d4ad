"""tools/relayout.py, which lays polykern out in named layers (docs/internals.md "Package layout"): its
rewrites on small inputs (relative imports written for a moved file's old place, split ``from polykern
import`` lists, anchored names and paths, imports inside strings), that a second run changes nothing,
and that this tree is laid out (no reference to an old module path is left, e.g. by a merge)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import relayout  # noqa: E402  tools/relayout.py

KNOWN = {"polykern", "polykern.errors", "polykern.registry", "polykern.user_files", "polykern.kbin",
         "polykern.kbin.wire", "polykern.kbin.messages", "polykern.runtime", "polykern.runtime.launch_rules",
         "polykern.codegen", "polykern.codegen.c_names", "polykern.codegen.cpu", "polykern.codegen.cpu.workgroup"}


def _twice(fn, text):
    once = fn(text)
    assert fn(once) == once, "a second run changed the text again"
    return once


def test_a_moved_files_imports_written_for_its_old_place_are_re_expressed():
    path = Path("python/polykern/kbin/wire.py")
    old = ("from .errors import ArtifactError\n"
           "from .kbin_messages import quote\n"
           "from . import launch_rules, registry  # comment kept\n"
           "from .function_info import ArgInfo\n")
    new = _twice(lambda t: relayout.rewrite_imports(path, t, "polykern.kbin.wire", KNOWN | {"polykern.kbin.function_info"}),
                 old)
    assert new == ("from ..errors import ArtifactError\n"
                   "from .messages import quote\n"
                   "from .. import registry  # comment kept\n"
                   "from ..runtime import launch_rules\n"
                   "from .function_info import ArgInfo\n")


def test_a_file_that_stays_gets_relative_imports_of_the_new_places():
    path = Path("python/polykern/module.py")
    new = _twice(lambda t: relayout.rewrite_imports(path, t, "polykern.module", KNOWN),
                 "def f():\n    from .wire import (encode,\n                       decode)\n    from .errors import E\n")
    assert new == "def f():\n    from .kbin.wire import (encode,\n                       decode)\n    from .errors import E\n"


def test_absolute_import_lists_are_split_by_new_package_and_renames_keep_the_local_name():
    path = Path("tests/test_x.py")
    old = ("from polykern import Buffer, wire, kbin_messages as km, lazy, kbin_file  # noqa: E402\n"
           "from polykern.codegen import llvm_workgroup, c_names\n"
           "import polykern.launch_rules\n")
    new = _twice(lambda t: relayout.rewrite_text(relayout.rewrite_imports(path, t, None, KNOWN)), old)
    assert new == ("from polykern import Buffer  # noqa: E402\n"
                   "from polykern.kbin import wire, messages as km, file as kbin_file\n"
                   "from polykern.runtime import lazy\n"
                   "from polykern.codegen import c_names\n"
                   "from polykern.codegen.cpu import workgroup as llvm_workgroup\n"
                   "import polykern.runtime.launch_rules\n")


def test_names_and_paths_are_rewritten_only_where_anchored():
    old = ("See python/polykern/wire.py, `polykern.launch.check_args`, codegen/llvm_subgroups.py and\n"
           "polykern.runtime_dir; not polykern.launch_x, x.polykern.wire, polykern.wirex or my_polykern/wire.py.\n"
           'CODE = "from polykern import kbin_file\\nfrom polykern import wire as w"\n')
    new = _twice(relayout.rewrite_text, old)
    assert new == ("See python/polykern/kbin/wire.py, `polykern.runtime.launch.check_args`, codegen/cpu/subgroups.py and\n"
                   "polykern.runtime.xdg_runtime_dir; not polykern.launch_x, x.polykern.wire, polykern.wirex or "
                   "my_polykern/wire.py.\n"
                   'CODE = "from polykern.kbin import file as kbin_file\\nfrom polykern.kbin import wire as w"\n')


def test_no_new_name_is_matched_by_an_old_one():
    """What makes a second run a no-op: no new dotted name or path contains an old one, anchored."""
    for new in relayout.MOVES.values():
        for text in (new, "/".join(new.split(".")) + ".py"):
            assert relayout.rewrite_text(text) == text, text


def test_this_tree_is_laid_out():
    if not (REPO / ".git").exists():
        pytest.skip("not a git work tree (the script reads `git ls-files`)")
    out = subprocess.run([sys.executable, str(REPO / "tools" / "relayout.py"), "--check"], cwd=REPO,
                         capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert out.returncode == 0, ("references to old module paths (run `python tools/relayout.py`):\n"
                                 + out.stdout[-3000:] + out.stderr[-3000:])
