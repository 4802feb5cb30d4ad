"""tools/gen_backends.py on odd backend(...) lines (red-team pass over the plugin interface): a wrong type, a config or
target kind that two backends claim, a config that is no Bazel config name, a requirement pip cannot
parse. Each is one line naming backends/backends.bzl, from the generator and from --check alike, never
a Python traceback and never a generated file written from garbage."""
import pytest

from backend_tree_support import add_toy_folder, add_toy_line, edit_file, run_gen, tree  # noqa: F401 (fixture)


def _both_modes(tree, old, new):
    """(stderr of the generator, stderr of --check) after the toy backend's line gets ``new`` for ``old``."""
    add_toy_folder(tree)
    add_toy_line(tree)
    edit_file(tree / "backends" / "backends.bzl", old, new)
    rc_before = (tree / ".bazelrc").read_text()
    out = []
    for args in ((), ("--check",)):
        r = run_gen(tree, *args)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        out.append(r.stderr)
    return out, rc_before, (tree / ".bazelrc").read_text()


@pytest.mark.parametrize("old,new,expected", [
    ('runtime_pip = ["cffi>=1.15"]', 'runtime_pip = "cffi>=1.15"',
     "backend() argument runtime_pip must be a list of strings, got 'cffi>=1.15'"),
    ('needs = ["host_cpu"]', 'needs = "host_cpu"', "backend() argument needs must be a list of strings"),
    ('backend("toy"', 'backend(42', "backend() argument name must be a string, got 42"),
    ('config = "toy"', 'config = ["toy"]', "backend() argument config must be a string or None, got ('toy',)"),
])
def test_a_wrong_type_is_named_and_nothing_is_written(tree, old, new, expected):
    (gen_err, check_err), rc_before, rc_after = _both_modes(tree, old, new)
    assert f"gen_backends: backends/backends.bzl:" in gen_err and expected in gen_err, gen_err
    assert expected in check_err and rc_after == rc_before


@pytest.mark.parametrize("old,new,expected", [
    ('config = "toy"', 'config = "cuda"', "config 'cuda' belongs to more than one backend (toy, cuda)"),
    ('config = "toy"', 'config = "to y"', "backend 'toy' config 'to y' must be a lowercase name"),
    ('config = "toy"', 'targets = ["toy", "nvptx"]', "target kind 'nvptx' belongs to more than one backend (toy, cuda)"),
    ('"cffi>=1.15"', '"cffi>=>1"', "'cffi>=>1' is not a pip requirement (PEP 508)"),
])
def test_a_clash_or_a_bad_value_is_named(tree, old, new, expected):
    (gen_err, check_err), _, _ = _both_modes(tree, old, new)
    assert f"gen_backends: backends/backends.bzl: {expected}" in check_err, check_err


@pytest.mark.parametrize("line", ['BACKENDS.append(backend("zzextra", needs = ["host_cpu"]))',
                                  'BACKENDS += [backend("zzextra", needs = ["host_cpu"])]'])
def test_a_backend_added_outside_the_list_is_named(tree, line):
    """Was: ignored (the generator read only `BACKENDS = [...]`) while Bazel's list had one more backend."""
    path = tree / "backends" / "backends.bzl"
    path.write_text(path.read_text() + "\n" + line + "\n")
    r = run_gen(tree, "--check")
    assert r.returncode == 1 and "BACKENDS is changed after its `BACKENDS = [...]`" in r.stderr, r.stderr


def test_a_missing_or_unparsable_file_is_named(tree):
    """Was: a FileNotFoundError or SyntaxError traceback."""
    (tree / ".bazelrc").unlink()
    for args in ((), ("--check",)):
        r = run_gen(tree, *args)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert "gen_backends: .bazelrc: cannot read it (No such file or directory)" in r.stderr
    path = tree / "backends" / "backends.bzl"
    path.write_text(path.read_text() + "\nBROKEN = [\n")
    r = run_gen(tree, "--check")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "gen_backends: backends/backends.bzl:" in r.stderr and "cannot parse it" in r.stderr
