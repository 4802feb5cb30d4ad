"""The native C runtime's test kit (native/), shared by tests/test_native.py and the tests that build on it
(test_native_hopper, test_kbin_v2_hostile, test_kbin_run_stream, test_user_files_read, test_cpu_safety,
test_native_elf_damage): paths, `make -C native` (the session fixture ``native_build``), libpolykern.so
through ctypes (``CLib``, the fixture ``clib``, ``CModule``), and the Python side's verdicts on the same
bytes. A test module uses a fixture by importing it (``from native_support import native_build``).

Where native/ is not in the tree (a Bazel sandbox: its sources are not in a test's runfiles), the fixture
skips with the reason ("no C compiler or make", or make's failure names the missing folder).
"""
from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "native"
BUILD = NATIVE / "build"
GOLDEN = ROOT / "tests" / "golden"
EXAMPLES = ROOT / "examples"
CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
MAKE = shutil.which("make")
needs_cc = pytest.mark.skipif(not (CC and MAKE), reason="no C compiler or make on this host")
IS_ELF_HOST = sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64", "aarch64",
                                                                                  "arm64")
needs_cpu_loader = pytest.mark.skipif(not IS_ELF_HOST, reason="the native CPU loader runs on x86-64/aarch64 Linux")
QEMU_AARCH64 = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
# aarch64 under QEMU user-mode emulation: kbin-run cross-built (make -C native aarch64) runs aarch64 artifacts.
AARCH64_TARGET = "llvm -mtriple=aarch64-linux-gnu"
SYSROOT_AARCH64 = "/usr/aarch64-linux-gnu"
AARCH64_MISSING = [what for what, ok in (("qemu-aarch64-static (package qemu-user-static)", QEMU_AARCH64),
                                         ("aarch64-linux-gnu-gcc (package gcc-aarch64-linux-gnu)",
                                          shutil.which("aarch64-linux-gnu-gcc")),
                                         (f"{SYSROOT_AARCH64} (package libc6-dev-arm64-cross)",
                                          os.path.isdir(SYSROOT_AARCH64)),
                                         ("make", MAKE)) if not ok]


@contextmanager
def native_lock():
    """make runs one at a time across pytest-xdist workers (they share native/build*)."""
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)



def make_native(*args: str, timeout: int = 600, env=None) -> subprocess.CompletedProcess:
    with native_lock():
        p = subprocess.run([MAKE, "-C", str(NATIVE), *args], capture_output=True, text=True, timeout=timeout,
                           env=env)
    if p.returncode != 0:
        pytest.fail(f"make {' '.join(args)} failed ({p.returncode}):\n{p.stdout[-6000:]}\n{p.stderr[-6000:]}")
    return p



@pytest.fixture(scope="session")
def native_build():
    if not (CC and MAKE):
        pytest.skip("no C compiler or make on this host")
    make_native("all", f"CC={CC}")
    return BUILD



def run_polykern(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "polykern", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)



class PkError(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("has_offset", ctypes.c_int), ("offset", ctypes.c_uint64),
                ("message", ctypes.c_char * 512)]



class CLib:
    """A thin ctypes view of native/include/polykern.h."""

    def __init__(self, path: Path):
        lib = ctypes.CDLL(str(path))
        vp, sz, cp = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
        err = ctypes.POINTER(PkError)
        sig = {
            "pk_artifact_parse": (vp, [vp, sz, err]),
            "pk_artifact_free": (None, [vp]),
            "pk_program_load_first": (vp, [vp, cp, cp, err]),
            "pk_program_free": (None, [vp]),
            "pk_program_device": (cp, [vp]),
            "pk_program_kernel": (vp, [vp, cp, err]),
            "pk_kernel_info": (vp, [vp]),
            "pk_buffer_alloc": (vp, [vp, sz, err]),
            "pk_buffer_write": (ctypes.c_int, [vp, sz, vp, sz, err]),
            "pk_buffer_read": (ctypes.c_int, [vp, sz, vp, sz, err]),
            "pk_buffer_free": (None, [vp]),
            "pk_kernel_launch": (ctypes.c_int, [vp, sz, ctypes.POINTER(vp), ctypes.POINTER(ctypes.c_uint32 * 3),
                                                ctypes.POINTER(ctypes.c_uint32 * 3), err]),
            "pk_artifact_write": (ctypes.c_int, [vp, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
                                                 ctypes.POINTER(sz), err]),
        }
        for name, (res, args) in sig.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.lib = lib

    def parse(self, data: bytes):
        """(ok, offset, message) of pk_artifact_parse."""
        e = PkError()
        buf = ctypes.create_string_buffer(data, len(data))
        art = self.lib.pk_artifact_parse(buf, len(data), ctypes.byref(e))
        if art:
            self.lib.pk_artifact_free(art)
            return True, None, ""
        assert e.status == 1 and e.has_offset, e.message
        return False, e.offset, e.message.decode("utf-8", "replace")

    def reexport(self, data: bytes) -> bytes:
        """pk_artifact_write of the parsed ``data``: encoded again from the decoded fields."""
        e = PkError()
        buf = ctypes.create_string_buffer(data, len(data))
        art = self.lib.pk_artifact_parse(buf, len(data), ctypes.byref(e))
        assert art, e.message
        out, n = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t()
        try:
            assert self.lib.pk_artifact_write(art, ctypes.byref(out), ctypes.byref(n), ctypes.byref(e)) == 0, e.message
            return ctypes.string_at(out, n.value)
        finally:
            ctypes.CDLL(None).free(ctypes.cast(out, ctypes.c_void_p))
            self.lib.pk_artifact_free(art)



@pytest.fixture(scope="session")
def clib(native_build):
    return CLib(native_build / "libpolykern.so")



def python_reexport(data: bytes) -> bytes:
    """``polykern.load(data).export()`` with no runtime registered (every module unavailable)."""
    from polykern import artifact
    from polykern.testing.isolation import isolated

    with isolated():
        return artifact.load(data).export()



def python_verdict(data: bytes):
    """What polykern.artifact.load decides about the bytes (container, payloads, attribute
    schema, root coverage) with no runtime registered: (ok, offset, message)."""
    from polykern import artifact
    from polykern.errors import ArtifactError
    from polykern.testing.isolation import isolated

    try:
        with isolated():
            artifact.load(data)
        return True, None, ""
    except ArtifactError as e:
        return False, e.offset, str(e)



def cli_in_process(*argv: str):
    """(exit code, stdout, stderr) of `polykern ...` run in this process, no backend loaded."""
    import contextlib
    import io

    from polykern.cli import main
    from polykern.testing.isolation import isolated

    out, err = io.StringIO(), io.StringIO()
    with isolated(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()



class CModule:
    """Enough of a polykern module for the examples' run(mod, rng): mod["k"](*args, grid=, block=)
    launches through libpolykern.so; NumPy arrays are copied in and back like a device runtime."""

    _CT = {(0, 8): "b", (0, 16): "h", (0, 32): "i", (0, 64): "q", (1, 8): "B", (1, 16): "H", (1, 32): "I",
           (1, 64): "Q", (2, 16): "e", (2, 32): "f", (2, 64): "d", (6, 8): "?"}

    def __init__(self, c: CLib, data: bytes, kind: str):
        self.c, self.err, self.kind = c, PkError(), kind
        self._data = ctypes.create_string_buffer(data, len(data))
        self.art = c.lib.pk_artifact_parse(self._data, len(data), ctypes.byref(self.err))
        assert self.art, self.err.message
        self.prog = c.lib.pk_program_load_first(self.art, kind.encode(), None, ctypes.byref(self.err))
        assert self.prog, self.err.message
        self.device = c.lib.pk_program_device(self.prog).decode()

    def close(self):
        self.c.lib.pk_program_free(self.prog)
        self.c.lib.pk_artifact_free(self.art)

    def __getitem__(self, name: str):
        from polykern.ir.types import scalar_from_code

        lib, err = self.c.lib, self.err
        k = lib.pk_program_kernel(self.prog, name.encode(), ctypes.byref(err))
        assert k, err.message
        from polykern.runtime.checked_launch import user_visible

        root_fn = user_visible(self.meta[name])  # checked accesses: libpolykern adds the hidden arguments

        def launch(*args, grid, block, shared_size=None):
            dims = lambda v: (list(v) + [1, 1, 1])[:3] if isinstance(v, (tuple, list)) else [v, 1, 1]  # noqa: E731
            if shared_size is not None:  # pk.shared_dynamic: the C API takes the length as the hidden last argument
                args = args + (shared_size,)
            assert len(args) == len(root_fn.args)
            cells, bufs, back = [], [], []
            for a, info in zip(args, root_fn.args):
                if info.kind == "buffer":
                    arr = np.ascontiguousarray(a)
                    assert arr.dtype == scalar_from_code(info.code, info.bits).numpy
                    b = lib.pk_buffer_alloc(self.prog, arr.nbytes, ctypes.byref(err))
                    assert b and lib.pk_buffer_write(b, 0, arr.ctypes.data, arr.nbytes, ctypes.byref(err)) == 0
                    bufs.append(b)
                    back.append((a, arr, b))
                    cells.append(b)
                else:
                    v = np.array(a, dtype=scalar_from_code(info.code, info.bits).numpy)
                    cell = ctypes.create_string_buffer(v.tobytes(), max(v.nbytes, 1))
                    bufs.append(None)
                    cells.append(ctypes.addressof(cell))
                    back.append((None, cell, None))
            argv = (ctypes.c_void_p * max(1, len(cells)))(*cells)
            g, bl = (ctypes.c_uint32 * 3)(*dims(grid)), (ctypes.c_uint32 * 3)(*dims(block))
            rc = lib.pk_kernel_launch(k, len(cells), argv, ctypes.byref(g), ctypes.byref(bl), ctypes.byref(err))
            assert rc == 0, err.message
            for orig, arr, b in back:
                if b is not None:
                    assert lib.pk_buffer_read(b, 0, arr.ctypes.data, arr.nbytes, ctypes.byref(err)) == 0
                    if orig is not arr:
                        orig[...] = arr
                    lib.pk_buffer_free(b)

        return launch



def libcuda_reason():
    try:
        ctypes.CDLL("libcuda.so.1")
        return None
    except OSError as e:
        return f"no NVIDIA driver here (libcuda.so.1: {e})"


def build_kbin_run_aarch64() -> str:
    """``make -C native aarch64`` (under the native build's lock: workers share native/build-aarch64);
    the path of the aarch64 kbin-run. Skips where native/ sources are not in the tree."""
    if not (NATIVE / "Makefile").exists() or not (NATIVE / "tools" / "kbin_run.c").exists():
        pytest.skip("native/ sources are not here (under Bazel, //tests:cross_compile_emulated is this cell)")
    with native_lock():
        r = subprocess.run([MAKE, "-C", str(NATIVE), "aarch64"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return str(NATIVE / "build-aarch64" / "kbin-run")
