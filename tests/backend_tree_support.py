"""A copy of the checkout's backend list, its mirrors and backend folders (the files `git ls-files` names),
and a throwaway backend added to it with one folder and one line: shared by test_backend_list.py and
test_backend_list_odd.py (import the fixture ``tree`` into a test module to use it)."""
import os
import shutil
import subprocess
import sys

import pytest

from backend_list import GEN, REPO


def run_gen(root, *args):
    return subprocess.run([sys.executable, GEN, "--root", str(root), *args], capture_output=True, text=True,
                          timeout=60)


def copy_tree(dst):
    """The files of this checkout that the list, its mirrors and the backend folders are made of."""
    files = subprocess.run(["git", "ls-files", "-z", "--", ".bazelrc", "pyproject.toml", "requirements.txt",
                            "requirements_lock.txt", "tools/gen_backends.py", "toolchains/extensions.bzl",
                            "backends/backends.bzl", "backends/*/BUILD.bazel", "backends/*/polykern_*/__init__.py"],
                           cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    files = [f for f in files if f]
    assert "backends/backends.bzl" in files and "backends/llvm/polykern_llvm/__init__.py" in files
    for rel in files:
        os.makedirs(os.path.join(dst, os.path.dirname(rel)), exist_ok=True)
        shutil.copyfile(os.path.join(REPO, rel), os.path.join(dst, rel))


TOY_LINE = ('    backend("toy", needs = ["host_cpu"], runtime_pip = ["cffi>=1.15"], config = "toy", '
            'doc = "a throwaway backend"),\n')


def add_toy_folder(root):
    pkg = os.path.join(root, "backends", "toy", "polykern_toy")
    os.makedirs(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("def register_backend():\n    pass\n")
    with open(os.path.join(root, "backends", "toy", "BUILD.bazel"), "w") as f:
        f.write('load("//backends:backends.bzl", "polykern_backend")\n\npolykern_backend()\n')


def edit_file(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def add_toy_line(root):
    path = os.path.join(root, "backends", "backends.bzl")
    text = open(path).read()
    anchor = "BACKENDS = [\n"
    assert anchor in text
    with open(path, "w") as f:
        f.write(text.replace(anchor, anchor + TOY_LINE, 1))


@pytest.fixture
def tree(tmp_path):
    # .git is a folder in a clone, a file in a git worktree
    if shutil.which("git") is None or not os.path.exists(os.path.join(REPO, ".git")):
        pytest.fail("this test copies the checkout's tracked files: it needs git and a git checkout")
    copy_tree(tmp_path)
    assert run_gen(tmp_path, "--check").returncode == 0, "the copy must agree with the list before the change"
    return tmp_path
