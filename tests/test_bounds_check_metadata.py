"""Checked-mode metadata from a hostile artifact.

The access table (``bounds_at_<k>``) is JSON inside schema-valid text: its ``\\u001b`` escapes are ASCII,
so they passed the artifact schema and decoded to ESC, BEL and bidi controls that went raw into the
LaunchError text and ``polykern run``'s output; ``'[' * 2040`` raised RecursionError at launch. Now the
attributes are read in one place (``passes/bounds_check.decode_metadata``: a flat list of strings and
integers, nothing nested) and every string of them is escaped (``polykern.kbin.messages.escape``) where it is
printed. No native code is needed: a Vulkan artifact carries the same attributes (llvm where no Vulkan
device is here)."""
import dataclasses
import json
import re

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.artifact import load
from polykern.cli import main
from polykern.errors import ArtifactError, LaunchError
from runtimes import runnable_targets

KINDS = [k for _, k, _ in runnable_targets() if k in ("vulkan", "llvm")]
KIND = "vulkan" if "vulkan" in KINDS else "llvm"


@pk.kernel
def over(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i + 1] = 1.0


#: control, bidi and invisible characters, each as the JSON escape an ASCII attribute can hold
HOSTILE = "\u001b[2J\u001b]0;pwned\u0007\u202etxt.exe\u2066\u200b\u0085\r\nFAKE: ok"
RAW = set(HOSTILE) - set("[2J]0;pwnedtx.eFAKE: ok")  # what must never reach a terminal raw


def _artifact(tmp_path, change) -> str:
    """``over`` built checked for KIND, with ``change(attrs)`` applied to its attributes in every module
    (the root's copy and the device module's), exported to a file."""
    mod = pk.build([over], [KIND], bounds_check=True)
    for m in [mod] + list(mod.imports):
        info = m.functions["over"]
        attrs = dict(info.attrs)
        change(attrs)
        m.functions["over"] = dataclasses.replace(info, attrs=attrs)
    path = tmp_path / "hostile.kbin"
    mod.export(str(path))
    return str(path)


def _entry(attrs, **fields):
    row = json.loads(attrs["bounds_at_0"])
    for k, v in fields.items():
        row[{"array": 0, "op": 1, "index_type": 2, "file": 4, "source_line": 7}[k]] = v
    attrs["bounds_at_0"] = json.dumps(row, separators=(",", ":"), ensure_ascii=True)


def _assert_clean(text: str):
    assert not RAW & set(text), repr(text)
    assert "\\x1b" in text and "\\u202e" in text and "\\x07" in text


@pytest.mark.parametrize("field", ["array", "op", "file", "source_line"])
def test_hostile_access_strings_are_escaped_in_the_launch_error(tmp_path, field):
    path = _artifact(tmp_path, lambda a: _entry(a, **{field: HOSTILE}))
    assert "\\u001b" in open(path, "rb").read().decode("latin-1")  # schema-valid: the escape is ASCII
    fn = load(path)["over"]
    with pytest.raises(LaunchError) as e:
        fn(np.int32(4), np.zeros(4, np.float32), grid=1, block=4)
    _assert_clean(str(e.value))
    assert "out-of-bounds" in str(e.value) and "at index 4 (length " in str(e.value)


def test_polykern_run_prints_the_escaped_error(tmp_path, capsys):
    path = _artifact(tmp_path, lambda a: _entry(a, array=HOSTILE, source_line=HOSTILE))
    capsys.readouterr()
    assert main(["run", path, "over", "--n", "4"]) != 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert text.endswith("\n") and text.count("\n") == 1  # one line: the error
    _assert_clean(text[:-1])
    assert "out-of-bounds write to buffer" in text


@pytest.mark.parametrize("key,value,why", [
    ("bounds_at_0", "[" * 2040, "malformed access entry"),  # RecursionError in json.loads before
    ("bounds_at_0", "[" * 2040 + "]" * 2040, "malformed access entry"),
    ("bounds_at_0", '{"a":1}', "malformed access entry"),
    ("bounds_at_0", '["y","write","i32",-1,"f.py",1,1,"s",0,16,16]', "malformed access entry"),
    ("bounds_at_0", '["y","write","i32",-1,"f.py",1,1,"s",0,16,0,"i32"]', "malformed access entry"),
    ("bounds_at_0", '["y","write","i32",-1.5,"f.py",1,1,"s"]', "malformed access entry"),
    ("bounds_at_0", '["y","write","i32",-1,"f.py",1,1,["s"]]', "malformed access entry"),
    ("bounds_at_0", '["y","write","i32",-1,"f.py",1,1,"s"] ', "malformed access entry"),
    ("bounds_at_0", '["y","write","i32",-7,"f.py",1,1,"s"]', "malformed access entry"),
    ("bounds_at_0", '["y","write","\\u001b[31m",-1,"f.py",1,1,"s"]', "malformed access entry"),  # a type name
    ("bounds_at_0", '["y","write","i32",-1,"f.py",1,1,"s",0,16,16,"f32"]', "malformed access entry"),
    ("bounds_accesses", "1_0", "not a decimal integer"),
    ("bounds_accesses", "\u0661", "not a decimal integer"),  # an Arabic-Indic digit: int() takes it
    ("bounds_user_args", " 1", "not a decimal integer"),
    ("bounds_lengths", "1,+0", "not a list of decimal integers"),
    ("bounds_index_bits", "3" * 4000, "not a decimal integer"),
])
def test_malformed_metadata_is_an_artifact_error(tmp_path, key, value, why):
    def change(a):
        a[key] = value
    try:
        path = _artifact(tmp_path, change)
    except ArtifactError as e:  # refused by the schema on the way out: also fine, never a traceback
        assert "attribute" in str(e)
        return
    with pytest.raises(ArtifactError, match=rf"checked kernel 'over': malformed bounds-check attributes \(.*"
                                            rf"{re.escape(why)}"):
        load(path)["over"](np.int32(4), np.zeros(4, np.float32), grid=1, block=4)


def test_polykern_run_names_a_nested_entry_without_a_traceback(tmp_path, capsys):
    path = _artifact(tmp_path, lambda a: a.update(bounds_at_0="[" * 2040))
    capsys.readouterr()
    assert main(["run", path, "over", "--n", "4"]) != 0
    err = capsys.readouterr().err
    assert "malformed bounds-check attributes (bounds_at_0: malformed access entry)" in err
    assert "Traceback" not in err


def test_a_compiled_entry_still_reads_back(tmp_path):
    """The strict reader accepts what the pass writes, backslashes and non-ASCII source text included."""
    path = _artifact(tmp_path, lambda a: _entry(a, source_line='y[i + 1] = 1.0  # "\\n" é ∑'))
    with pytest.raises(LaunchError, match=r'y\[i \+ 1\] = 1\.0  # "\\\\n" é ∑ \(the first violation'):
        load(path)["over"](np.int32(4), np.zeros(4, np.float32), grid=1, block=4)
