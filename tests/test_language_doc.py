"""docs/language.md stays true: its support table is the generated one (polykern.testing.support_table), each
cell of that table is what the code generators do, and every public name of the ``pk`` namespace that
a kernel author uses is documented there."""
import pathlib

import pytest

import polykern as pk
from polykern import Buffer, bf16, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from polykern.testing import support_table
from polykern.errors import KernelTypeError
from polykern.lang.builtins import BUILTINS
from backend_list import REPO, gen

#: the in-tree target kinds (the backend list, backends/backends.bzl): the columns of the support table
BACKENDS = sorted(gen.target_kinds(gen.read_backends(REPO)))
DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "language.md"

# The target each column is checked with: the kind with its default attributes, except the
# architectures the GPU code generators need and WebGPU's f16 switch (the prose says it is needed).
TARGET_OF = {"cuda": "cuda -arch=sm_90", "nvptx": "nvptx -arch=sm_90", "webgpu": "webgpu -shader_f16=true"}


def _doc() -> str:
    if not DOC.exists():  # Bazel runfiles hold no docs/ (as for test_numerics' correctness.md check)
        pytest.skip("docs/language.md is not in this tree")
    return DOC.read_text()


def test_the_embedded_support_table_is_the_generated_one():
    text = _doc()
    assert support_table.DOC_BEGIN in text and support_table.DOC_END in text, \
        "docs/language.md must embed polykern.testing.support_table.markdown_table() between DOC_BEGIN and DOC_END"
    embedded = text.split(support_table.DOC_BEGIN, 1)[1].split(support_table.DOC_END, 1)[0].strip("\n") + "\n"
    assert embedded == support_table.markdown_table(BACKENDS), \
        "docs/language.md's support table is stale: run `python -m polykern.testing.support_table --write`"


def test_the_embedded_atomics_table_is_the_generated_one():
    text = _doc()
    begin, end = support_table.ATOMICS_BEGIN, support_table.ATOMICS_END
    assert begin in text and end in text, f"docs/language.md must embed the atomics table between {begin} and {end}"
    embedded = text.split(begin, 1)[1].split(end, 1)[0].strip("\n") + "\n"
    assert embedded == support_table.atomics_table(BACKENDS), \
        "docs/language.md's atomics table is stale: run `python -m polykern.testing.support_table --write`"


def test_write_rewrites_only_the_embedded_tables(tmp_path, capsys):
    doc = tmp_path / "language.md"
    b, e, ab, ae = (support_table.DOC_BEGIN, support_table.DOC_END, support_table.ATOMICS_BEGIN,
                    support_table.ATOMICS_END)
    doc.write_text(f"intro\n{ab}\n| old |\n{ae}\nmiddle\n{b}\n| stale |\n{e}\nrest\n")
    assert support_table.main(["--write", str(doc)]) == 0
    assert doc.read_text() == (f"intro\n{ab}\n{support_table.atomics_table()}{ae}\nmiddle\n"
                               f"{b}\n{support_table.markdown_table()}{e}\nrest\n")
    assert support_table.main(["--write", str(doc)]) == 0 and "up to date" in capsys.readouterr().out
    doc.write_text(f"no atomics table here\n{b}\n| stale |\n{e}\n")
    assert support_table.main(["--write", str(doc)]) == 1
    assert "must hold the table once" in capsys.readouterr().err
    assert doc.read_text() == f"no atomics table here\n{b}\n| stale |\n{e}\n"


def _public_names():
    """``pk.<name>`` for every builtin, decorator, annotation and entry point a kernel author uses."""
    names = set(BUILTINS) | {"kernel", "func", "autotune", "build", "load", "constexpr", "dtype",
                             "Buffer", "Shared", "Local"}
    return sorted(n for n in names if hasattr(pk, n))


@pytest.mark.parametrize("name", _public_names())
def test_every_public_name_is_documented(name):
    text = _doc()
    assert f"pk.{name}" in text or f"`{name}`" in text, f"docs/language.md does not mention pk.{name}"


def test_the_public_name_list_covers_the_builtins():
    """A builtin added to lang/builtins.py but not exported as pk.<name> would escape the check above."""
    missing = sorted(n for n in BUILTINS if not hasattr(pk, n))
    assert not missing, f"builtins not exported in the pk namespace: {missing}"


def test_every_scalar_type_is_documented():
    text = _doc()
    for t in ("bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64", "bf16"):
        assert f"`{t}`" in text, t


# ---------------------------------------------------------------- each cell is what the compiler does
def _copy(t):
    @pk.kernel
    def copy(x: Buffer[t], y: Buffer[t]):
        i = pk.global_id(0)
        y[i] = x[i]
    return copy


def _core():
    @pk.kernel
    def core(n: i32, x: Buffer[f32], y: Buffer[i32], z: Buffer[u32]):
        a = pk.local(f32, 4)
        i = pk.global_id(0)
        a[i & 3] = x[i] + f32(n)
        y[i] = i32(a[i & 3]) * 2
        z[i] = u32(y[i]) + u32(1)
    return core


def _bools():
    @pk.kernel
    def bools(x: Buffer[i32]):
        s = pk.shared(bool_, 64)
        p = pk.local(bool_, 4)
        i = pk.global_id(0)
        ok = x[i] > 0
        p[i & 3] = ok
        s[pk.local_id(0)] = not p[i & 3]
        pk.barrier()
        if s[pk.local_id(0)]:
            x[i] = 1
    return bools


def _bool_buffer():
    @pk.kernel
    def bool_buffer(x: Buffer[bool_], y: Buffer[bool_]):
        i = pk.global_id(0)
        y[i] = not x[i]
    return bool_buffer


def _math_f64():
    @pk.kernel
    def math_f64(x: Buffer[f64], y: Buffer[f64]):
        i = pk.global_id(0)
        y[i] = pk.exp(x[i])
    return math_f64


def _barrier():
    @pk.kernel
    def staged(x: Buffer[f32]):
        t = pk.shared(f32, 64)
        i = pk.global_id(0)
        t[pk.local_id(0)] = x[i]
        pk.barrier()
        x[i] = t[63 - pk.local_id(0)]
    return staged


def _subgroups():
    @pk.kernel
    def sg(x: Buffer[f32]):
        i = pk.global_id(0)
        x[i] = pk.subgroup_add(x[i])
    return sg


_TYPES = {"i8": i8, "u8": u8, "i16": i16, "u16": u16, "i64": i64, "u64": u64, "f16": f16, "f64": f64,
          "bf16": bf16}
PROBES = {None: None, "bool_buffer": _bool_buffer, "math_f64": _math_f64, "barrier": _barrier,
          "subgroups": _subgroups, **{name: (lambda t=t: _copy(t)) for name, t in _TYPES.items()}}
CORE = {"`i32`, `u32`, `f32` (values, buffers, arrays)": _core, "`bool` values and local/shared arrays": _bools}


def _cells():
    declared = support_table.refusals(BACKENDS)
    for label, feature in support_table.ROWS:
        make = CORE[label] if feature is None else PROBES[feature]
        for b in BACKENDS:
            yield pytest.param(make, b, feature in declared[b], id=f"{feature or label[:12]}-{b}")


def test_every_row_has_a_probe():
    for label, feature in support_table.ROWS:
        assert (CORE if feature is None else PROBES).get(label if feature is None else feature), label


@pytest.mark.parametrize("make,backend,refused", list(_cells()))
def test_each_cell_is_what_the_code_generator_does(make, backend, refused):
    kernel = make()
    target = TARGET_OF.get(backend, backend)
    if refused:
        with pytest.raises(KernelTypeError):
            pk.build([kernel], targets=[target])
    else:
        pk.build([kernel], targets=[target])


def test_webgpu_f16_needs_the_target_switch():
    """The prose under the table: plain 'webgpu' refuses f16; '-shader_f16=true' compiles it."""
    with pytest.raises(KernelTypeError, match="f16"):
        pk.build([_copy(f16)], targets=["webgpu"])
    pk.build([_copy(f16)], targets=["webgpu -shader_f16=true"])


def test_opencl_subgroups_need_the_target_switch():
    pk.build([_subgroups()], targets=["opencl -subgroups=true"])


# ---------------------------------------------------------------- the atomics table of section 5
def _atomics_table():
    """``[(types, backends, cell)]`` parsed from the "| element type | ..." table of docs/language.md."""
    lines = _doc().splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("| element type |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")][1:]
    cells = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        row = [c.strip() for c in line.strip("|").split("|")]
        types = [t.strip(" `") for t in row[0].split(",")]
        for col, cell in zip(header, row[1:]):
            cells.append((types, [b.strip() for b in col.split(",")], cell))
    return cells


def _atomic(t):
    @pk.kernel
    def updates(x: Buffer[t], s: Buffer[t]):
        i = pk.global_id(0)
        pk.atomic_add(x, i, 1)
        pk.atomic_max(x, i, 2)
        pk.atomic_cas(s, i, 0, 1)
    return updates


def _atomic_params():
    if not DOC.exists():
        return [pytest.param(None, None, None, marks=pytest.mark.skip(reason="docs/language.md is not in this tree"))]
    out = []
    for types, backends, cell in _atomics_table():
        for b in backends:
            for t in types:
                out.append(pytest.param(t, b, cell, id=f"{t}-{b}"))
    return out


def test_the_atomics_table_covers_every_backend_and_type():
    seen_b = {b for _, bs, _ in _atomics_table() for b in bs}
    seen_t = {t for ts, _, _ in _atomics_table() for t in ts}
    assert seen_b == set(BACKENDS)
    assert seen_t == {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32", "f64"}


@pytest.mark.parametrize("tname,backend,cell", _atomic_params())
def test_each_atomics_cell_is_what_the_code_generator_does(tname, backend, cell):
    kernel = _atomic(getattr(pk, tname))
    target = {"cuda": "cuda -arch=sm_90", "nvptx": "nvptx -arch=sm_90"}.get(backend, backend)
    if cell.startswith("no"):  # the atomics, or the type itself (WebGPU, Metal)
        with pytest.raises(KernelTypeError):
            pk.build([kernel], targets=[target])
    elif cell.startswith("with `-"):  # a target attribute switches it on: refused without it
        switch = cell.split("`")[1]
        with pytest.raises(KernelTypeError, match=switch.split("=")[-1].split(",")[-1]):
            pk.build([kernel], targets=[target])
        pk.build([kernel], targets=[target + " " + switch])
    else:
        assert cell.startswith("yes"), cell
        pk.build([kernel], targets=[target])


def test_every_section_link_names_a_heading():
    """``(#anchor)`` links resolve to a heading (GitHub's slugs: lower case, punctuation dropped,
    spaces to '-')."""
    import re

    text = _doc()
    slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
             for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}
    bad = sorted({a for a in re.findall(r"\]\(#([^)]+)\)", text) if a not in slugs})
    assert not bad, f"links to no heading: {bad}"
