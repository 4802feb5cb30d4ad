"""docs/language.md's table of shared buffer arguments ("One array for several buffer parameters") is
what each runtime does: every cell is run on every runtime present ("one memory": the kernel saw a
single array; "refused": a LaunchError naming both arguments, with the array untouched). Also: a
C-contiguous array of any shape is a buffer of its elements in C order, a non-contiguous view is
refused, on every runtime."""
import pathlib
import re

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import LaunchError

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "language.md"
RUNNABLE = pk.backends.runnable_kinds()


@pk.kernel
def both_written(n: i32, x: Buffer[f32], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        x[i] = x[i] + 1.0
        y[i] = y[i] + 1.0


@pk.kernel
def read_after_write(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = y[i] + 1.0
        y[i] = x[i] + y[i]


@pk.kernel
def carry(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    # one work-item, in order: with x = a[:-1] and y = a[1:] in one memory each step reads the last
    if pk.global_id(0) == 0:
        for j in range(n):
            y[j] = x[j] + 1.0


@pk.kernel
def index_of(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = f32(i)


N = 8


def _same_written(launch):
    a = np.arange(N, dtype=np.float32)
    launch["both_written"](N, a, a, grid=1, block=N)
    return a, np.arange(N, dtype=np.float32) + 2  # one memory: both increments land


def _same_readonly_written(launch):
    a = np.arange(N, dtype=np.float32)
    launch["read_after_write"](N, a, a, grid=1, block=N)
    return a, 2 * np.arange(N, dtype=np.float32) + 2  # one memory: x[i] reads the incremented y[i]


def _overlapping_views(launch):
    a = np.zeros(N + 1, dtype=np.float32)
    launch["carry"](N, a[:-1], a[1:], grid=1, block=1)
    return a, np.arange(N + 1, dtype=np.float32)  # one memory: each step carries the last


CASES = {  # row label in docs/language.md -> the launch
    "the same array for two written parameters": _same_written,
    "the same array for a readonly and a written parameter": _same_readonly_written,
    "overlapping but different views of one array (`a[:-1]`, `a[1:]`), one written": _overlapping_views,
}
ARGS = {_same_written: ("x", "y"), _same_readonly_written: ("x", "y"), _overlapping_views: ("x", "y")}


def _doc_table():
    """{row label: {runtime: cell}} of the table after the 'aliasing table' marker."""
    if not DOC.exists():
        pytest.skip("docs/language.md is not in this tree")
    text = DOC.read_text()
    assert "<!-- aliasing table" in text, "docs/language.md lost its table of shared buffer arguments"
    lines = text.split("<!-- aliasing table", 1)[1].splitlines()[1:]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines[:2 + len(CASES)]]
    head, body = rows[0], rows[2:]
    return {r[0]: dict(zip(head[1:], r[1:])) for r in body}


@pytest.fixture(scope="module")
def built():
    return pk.build([both_written, read_after_write, carry, index_of], targets=RUNNABLE)


def test_the_table_covers_each_case_and_every_runtime_here():
    table = _doc_table()
    assert sorted(table) == sorted(CASES)
    for row in table.values():
        assert set(row.values()) <= {"one memory", "refused"}, row
        assert set(RUNNABLE) <= set(row), f"the table has no column for {set(RUNNABLE) - set(row)}"


@pytest.mark.parametrize("kind", RUNNABLE)
@pytest.mark.parametrize("label", list(CASES))
def test_each_cell_is_what_the_runtime_does(built, kind, label):
    claim = _doc_table()[label][kind]
    case = CASES[label]
    if claim == "one memory":
        got, want = case(built.on(kind))
        np.testing.assert_array_equal(got, want, err_msg=f"{kind}: {label}: not one memory")
    else:
        with pytest.raises(LaunchError) as e:
            case(built.on(kind))
        a, b = ARGS[case]
        assert f"'{a}'" in str(e.value) and f"'{b}'" in str(e.value), str(e.value)


@pytest.mark.parametrize("kind", RUNNABLE)
def test_a_contiguous_2d_array_is_its_elements_in_c_order(built, kind):
    y = np.zeros((3, 4), np.float32)
    built.on(kind)["index_of"](12, y, grid=1, block=12)
    np.testing.assert_array_equal(y, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]])  # [r, c] is y[r * 4 + c]
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(LaunchError, match="not C-contiguous"):
        built.on(kind)["index_of"](3, x[:, 1], grid=1, block=3)
    with pytest.raises(LaunchError, match="not C-contiguous"):
        built.on(kind)["index_of"](12, x.T, grid=1, block=12)
    assert not x.any()  # nothing ran


def test_the_doc_says_so():
    text = DOC.read_text() if DOC.exists() else pytest.skip("docs/language.md is not in this tree")
    assert re.search(r"C-contiguous, and the kernel sees its elements in C\s+\(row-major\) order", text)
