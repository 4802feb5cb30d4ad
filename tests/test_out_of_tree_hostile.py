"""The out-of-tree example backend (examples/out_of_tree_backend, kind csrc) against artifacts that are
valid containers but not what its codegen writes (red-team pass over the plugin interface): a loader checks what it
will trust (docs/backends.md "Runtime"), so each is an ArtifactError naming the module when it is
loaded, never a KeyError, TypeError or AttributeError at launch. Loaded through POLYKERN_BACKEND_PATH,
in this process (tests/test_out_of_tree_backend.py covers pip installs)."""
import dataclasses
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import polykern as pk
from polykern import backends
from polykern.errors import ArtifactError
from polykern.module import RootModule
from polykern.testing.isolation import isolated
from polykern.testing.kbin_rewrite import replace_module

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "examples" / "out_of_tree_backend" / "src" / "polykern_csrc"
sys.path.insert(0, str(ROOT / "examples"))
saxpy_example = pytest.importorskip("saxpy")


@pytest.fixture(scope="module")
def csrc(tmp_path_factory):
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler: the csrc runtime is absent")
    mp = pytest.MonkeyPatch()
    mp.setenv(backends.PATH_ENV, str(CSRC))
    mp.delenv(backends.AUTOLOAD_ENV, raising=False)
    with isolated(loaded=False):
        backends.load_all()
        yield pk.build([saxpy_example.saxpy], targets=["csrc"]).on("csrc")
    mp.undo()
    for m in [m for m in sys.modules if m.split(".")[0] == "polykern_csrc"]:
        del sys.modules[m]


def _with(good, **change):
    fields = dict(payload=good.payload, fmt=good.fmt, fmap=good.functions)
    fields.update(change)
    return replace_module(RootModule.collect([good], ["csrc"]).export(), 1, fields["fmt"], fields["fmap"],
                          fields["payload"])


def _attrs(good, **attrs):
    return {k: dataclasses.replace(v, attrs={**{a: b for a, b in v.attrs.items() if a not in attrs},
                                             **{a: b for a, b in attrs.items() if b is not None}})
            for k, v in good.functions.items()}


def test_the_example_runs_what_its_codegen_writes(csrc):
    root = pk.load(_with(csrc))
    y = np.ones(10, np.float32)
    root["saxpy"](10, np.float32(2), np.ones(10, np.float32), y, grid=1, block=16)
    np.testing.assert_array_equal(y, np.full(10, 3, np.float32))


@pytest.mark.parametrize("case,expected", [
    ("no_entry", "csrc module: kernel 'saxpy' has no 'entry' attribute (fmt 'c': csrc kernels carry 'entry')"),
    ("bad_entry", "function 'saxpy': entry 'no_such_symbol' is not a C identifier defined in the source"),
    ("sections", "csrc module: payload layout 2 (smap) with fmt 'c' is not one that csrc modules hold; they accept "
                 "layout 1 (bytes) with fmt 'c'"),
    ("fmt", "csrc module: payload layout 1 (bytes) with fmt 'ptx' is not one that csrc modules hold; they accept "
            "layout 1 (bytes) with fmt 'c'"),
])
def test_what_the_codegen_never_writes_is_refused_at_load(csrc, case, expected):
    data = {"no_entry": lambda: _with(csrc, fmap=_attrs(csrc, entry=None)),
            "bad_entry": lambda: _with(csrc, fmap=_attrs(csrc, entry="no_such_symbol")),
            "sections": lambda: _with(csrc, payload={"saxpy": csrc.payload}),
            "fmt": lambda: _with(csrc, fmt="ptx")}[case]()
    with pytest.raises(ArtifactError, match="csrc module") as e:  # was: KeyError/TypeError/AttributeError at launch
        pk.load(data)
    assert expected in str(e.value)
