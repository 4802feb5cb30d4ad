"""Helpers several test files share (a test file is not in another test's Bazel runfiles; this module is
in //tests:support): kernels written to real files, and the checked PTX of a kernel."""
import importlib.util
import itertools

import pytest

import polykern as pk

_SEQ = itertools.count()


def make_module(tmp_path, source):
    """The module of ``source``, written to a real file (the frontend reads kernels' source)."""
    path = tmp_path / f"kern_{next(_SEQ)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_kernel(tmp_path, body, name="kk"):
    """A kernel defined in a real file."""
    return getattr(make_module(tmp_path, "import polykern as pk\nfrom polykern import *\n\n@pk.kernel\n" + body), name)


def checked_ptx(kernel, target):
    """The PTX of ``kernel`` for a cuda/nvptx ``target`` ("cuda -arch=sm_80"), assembled by ptxas where
    ptxas is installed; skips where CUDA C cannot be compiled here."""
    from polykern_cuda import toolchain

    if target.startswith("cuda") and toolchain.available_compiler() is None:
        pytest.skip("neither NVRTC nor nvcc is installed here")
    ptx = pk.build([kernel], [target]).on("cuda").inspect_source("ptx")
    if toolchain.find_ptxas() is not None:
        toolchain.ptxas_check(ptx.encode(), target.split("=")[1])
    return ptx
