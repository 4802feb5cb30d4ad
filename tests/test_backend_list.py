"""THE backend list (BACKENDS in backends/backends.bzl) and its mirrors.

The tree agrees with the list (tools/gen_backends.py --check), and adding an in-tree backend is one
folder plus one line: proved in a copy of the tree (the files `git ls-files` names that the list and
its mirrors live in), where a throwaway backend is added, the check fails naming each stale file,
the generator runs, and the check passes with the new backend in every mirror.
(Source-tree checks: this file runs in the pytest tier, not under Bazel.)
"""
import os
import tomllib

import pytest

from backend_list import REPO, gen
from backend_tree_support import add_toy_folder, add_toy_line, edit_file, run_gen, tree  # noqa: F401 (fixture)
from polykern import backends as pk_backends, target


def _kinds_registered_by(name):
    """The target kinds whose module kind backend ``name`` owns."""
    recs = {k: pk_backends.record_for_kind(target.get_kind(k).module_kind) for k in target.list_kinds()}
    return {k for k, rec in recs.items() if rec is not None and rec.name == name}


def test_the_tree_agrees_with_the_list():
    bad = gen.check(REPO)
    assert not bad, "\n".join(bad)


def test_the_check_command_exits_0_here():
    r = run_gen(REPO, "--check")
    assert r.returncode == 0, r.stderr


def test_the_list_reads_as_bazel_sees_it():
    backends = gen.read_backends(REPO)
    by_name = {b.name: b for b in backends}
    folders = {d for d in os.listdir(os.path.join(REPO, "backends"))
               if os.path.isdir(os.path.join(REPO, "backends", d, f"polykern_{d}"))}
    assert {b.name for b in backends} == folders and len(backends) == len(folders)
    pk_backends.load_all()
    for b in backends:  # the target kinds the list names are those the backend's codegen registers
        registered = _kinds_registered_by(b.name)
        assert set(b.targets) == registered, (f"backends/backends.bzl lists targets {b.targets} for {b.name}; "
                                              f"backends/{b.name}/polykern_{b.name}/codegen.py registers {sorted(registered)}")
    assert by_name["cuda"].extra_requirements == ("nvidia-cuda-nvrtc==13.0.*", "pycuda>=2024.1")
    # No extra where there is nothing to install; no config where the runtime does not work in Bazel.
    assert {b.name for b in backends if b.extra} == {b.name for b in backends if b.runtime_pip}
    assert {b.config for b in backends if b.config} == {"llvm", "cuda", "opencl", "vulkan", "webgpu", "hexagon"}


def test_pyproject_extras_and_entry_points_are_the_lists():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    backends = gen.read_backends(REPO)
    eps = project["entry-points"]["polykern.backends"]
    assert eps == {b.name: f"polykern_{b.name}:register_backend" for b in backends}
    extras = project["optional-dependencies"]
    for b in backends:
        if b.extra:
            assert extras[b.extra] == list(b.extra_requirements)
        else:
            assert b.name not in extras, f"polykern[{b.name}] would install nothing"
    # The SPDX string form (a table prints setuptools' deprecation wall at every pip install).
    assert project["license"] == "Apache-2.0"


def test_the_declared_records_agree_with_the_list():
    """Each in-tree backend's register_backend() declares the extra and config that exist."""
    from polykern import backends as pkb

    records = {r.name: r for r in pkb.load_all()}
    for b in gen.read_backends(REPO):
        rec = records[b.name]
        assert rec.codegen_ok, rec.codegen_error
        where = f"backends/{b.name}/polykern_{b.name}/__init__.py"
        wanted = f"polykern[{b.extra}]" if b.extra else "no extra"
        assert rec.extra == b.extra, f"{where} declares extra={rec.extra!r}; backends/backends.bzl gives {wanted}"
        assert rec.config == (b.config or ""), (f"{where} declares config={rec.config!r}; backends/backends.bzl "
                                                f"gives config={b.config!r}")


# ------------------------------------------------------------------ adding a backend, in a copy


def test_adding_a_backend_is_one_folder_and_one_line(tree):
    add_toy_folder(tree)
    add_toy_line(tree)
    before = run_gen(tree, "--check")
    assert before.returncode == 1
    for rel in (".bazelrc", "pyproject.toml", "requirements.txt"):
        assert f"{rel} is stale" in before.stderr and "run `python tools/gen_backends.py`" in before.stderr, before.stderr

    r = run_gen(tree)
    assert r.returncode == 0, r.stderr
    assert run_gen(tree, "--check").returncode == 0

    rc = open(os.path.join(tree, ".bazelrc")).read()
    assert "build:toy --//backends:no_runtimes=false --//backends:runtime_toy=true\n" in rc
    with open(os.path.join(tree, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["entry-points"]["polykern.backends"]["toy"] == "polykern_toy:register_backend"
    assert project["optional-dependencies"]["toy"] == ["cffi>=1.15"]
    assert "cffi>=1.15" in open(os.path.join(tree, "requirements.txt")).read().splitlines()
    # The test tables read the list (tests/test_compile_all_backends.py: the target kinds).
    assert "toy" in gen.target_kinds(gen.read_backends(str(tree)))
    # Nothing else changed: the generator only rewrites its blocks.
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        assert tomllib.load(f)["project"]["scripts"] == project["scripts"]


def test_a_line_without_its_folder_is_named(tree):
    add_toy_line(tree)
    run_gen(tree)
    r = run_gen(tree, "--check")
    assert r.returncode == 1
    assert "backends/toy/polykern_toy/__init__.py is missing" in r.stderr
    assert "backends/toy/BUILD.bazel is missing" in r.stderr


def test_a_folder_without_its_line_is_named(tree):
    add_toy_folder(tree)
    r = run_gen(tree, "--check")
    assert r.returncode == 1
    assert "backends/toy/ holds a backend that BACKENDS in backends/backends.bzl does not list" in r.stderr


def _toy_check(tree, old, new):
    """`--check` after adding the toy backend with ``old`` of its line replaced by ``new`` and generating."""
    add_toy_folder(tree)
    add_toy_line(tree)
    edit_file(tree / "backends" / "backends.bzl", old, new)
    run_gen(tree)
    r = run_gen(tree, "--check")
    assert r.returncode == 1
    return r.stderr


def test_an_unknown_tool_names_the_detection_list(tree):
    err = _toy_check(tree, '"toy", needs = ["host_cpu"]', '"toy", needs = ["toy_driver"]')
    assert "backend 'toy' needs 'toy_driver', which toolchains/extensions.bzl does not detect" in err


def test_an_unlocked_requirement_names_the_lock_tool(tree):
    err = _toy_check(tree, '"cffi>=1.15"', '"no-such-dist>=1"')
    assert "requirements_lock.txt pins no no-such-dist (requirements.txt: no-such-dist>=1): run tools/update_lock.sh" \
        in err


def test_a_pin_outside_the_specifier_names_the_lock_tool(tree):
    err = _toy_check(tree, '"cffi>=1.15"', '"cffi>=999"')
    assert "outside cffi>=999: run tools/update_lock.sh" in err


def test_a_hand_edit_of_a_generated_block_is_stale(tree):
    edit_file(tree / "pyproject.toml", 'opencl = ["pyopencl>=2024.1"]\n', "")
    r = run_gen(tree, "--check")
    assert r.returncode == 1 and "pyproject.toml is stale" in r.stderr


def test_bazel_dist_info_writes_the_same_entry_points():
    """backends/dist_info.bzl (the .dist-info Bazel generates per backend) and pyproject.toml name the
    same entry point for every backend."""
    import ast

    path = os.path.join(REPO, "backends", "dist_info.bzl")
    tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "backend_entry_point"]
    (ret,) = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    assert isinstance(ret.value, ast.BinOp) and isinstance(ret.value.left, ast.Constant), ast.unparse(ret)
    template = ret.value.left.value
    for b in gen.read_backends(REPO):
        assert template % (b.name, b.name) == f"{b.name} = {b.entry_point}", (
            f"backends/dist_info.bzl backend_entry_point() and tools/gen_backends.py Backend.entry_point differ "
            f"for {b.name}")
