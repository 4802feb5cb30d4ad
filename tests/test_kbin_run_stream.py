"""kbin-run (native/tools/kbin_run.c) checks each launch-stream record against the kernel's signature:
a record of the wrong kind or size is exit status 3 with a message naming the argument, never a
kernel that reads a buffer record as a scalar (it segfaulted)."""
import subprocess

import numpy as np
import pytest

import polykern as pk
from polykern.testing.c_corpus import saxpy
from polykern.runtime import launch_stream as ls
from native_support import IS_ELF_HOST, native_build  # noqa: F401

N = 100
SIG = "saxpy(n: i32, a: f32, x: Buffer[f32, readonly], y: Buffer[f32])"


@pytest.fixture(scope="module")
def runner(native_build, tmp_path_factory):  # noqa: F811
    if not IS_ELF_HOST:
        pytest.skip("kbin-run runs llvm objects on an x86-64 or aarch64 Linux host only")
    path = tmp_path_factory.mktemp("kbin_run") / "saxpy.kbin"
    pk.build([saxpy], targets=["llvm"]).export(path)

    def run(items, launch=(2, 1, 1, 64, 1, 1)):
        return subprocess.run([str(native_build / "kbin-run"), str(path), "saxpy"],
                              input=ls.encode(items, launch), capture_output=True, timeout=120)
    return run


X = np.arange(N, dtype=np.float32)
GOOD = [(ls.SCALAR, np.int32(N).tobytes()), (ls.SCALAR, np.float32(2).tobytes()), (ls.READ, X.tobytes()),
        (ls.WRITE, np.ones(N, np.float32).tobytes())]


def test_a_matching_stream_runs(runner):
    r = runner(GOOD)
    assert r.returncode == 0, r.stderr
    out, = ls.split_outputs(r.stdout, [4 * N])
    np.testing.assert_array_equal(np.frombuffer(out, np.float32), 2 * X + 1)


BAD = [
    ("buffer_for_scalar", [(ls.READ, np.zeros(N, np.float32).tobytes())] + GOOD[1:],
     "argument 0 (i32) is a scalar of 4 bytes, but its record is a buffer (kind 1)"),
    ("written_buffer_for_scalar", GOOD[:1] + [(ls.WRITE, bytes(64))] + GOOD[2:],
     "argument 1 (f32) is a scalar of 4 bytes, but its record is a buffer (kind 2)"),
    ("wide_scalar", [(ls.SCALAR, np.int64(N).tobytes())] + GOOD[1:],
     "argument 0 (i32) is a scalar of 4 bytes, but its record holds 8 bytes"),
    ("empty_scalar", GOOD[:1] + [(ls.SCALAR, b"")] + GOOD[2:],
     "argument 1 (f32) is a scalar of 4 bytes, but its record holds 0 bytes"),
    ("scalar_for_buffer", GOOD[:2] + [(ls.SCALAR, np.float32(1).tobytes())] + GOOD[3:],
     "argument 2 (Buffer[f32]) is a buffer, but its record is a scalar (kind 0)"),
    ("too_few", GOOD[:3], "the launch stream has 3 arguments, but the kernel takes 4"),
    ("too_many", GOOD + [(ls.SCALAR, bytes(4))], "the launch stream has 5 arguments, but the kernel takes 4"),
]


@pytest.mark.parametrize("items,message", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_record_that_does_not_match_the_signature_is_refused(runner, items, message):
    r = runner(items)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert r.stderr.decode() == f"kbin-run: {message}; the kernel is {SIG}\n"
    assert r.stdout == b""


@pk.kernel
def printing_fill(n: pk.i32, y: pk.Buffer[pk.f32]):
    i = pk.global_id(0)
    if i < n:
        pk.debug_print("fill %d\n", i)
        y[i] = pk.f32(i) * 0.5


def test_what_a_kernel_prints_goes_to_stderr_not_into_the_results(native_build, tmp_path):  # noqa: F811
    if not IS_ELF_HOST:
        pytest.skip("kbin-run runs llvm objects on an x86-64 or aarch64 Linux host only")
    path = tmp_path / "printing.kbin"
    pk.build([printing_fill], targets=["llvm"], bounds_check=False).export(path)
    r = subprocess.run([str(native_build / "kbin-run"), str(path), "printing_fill"], capture_output=True,
                       input=ls.encode([(ls.SCALAR, np.int32(3).tobytes()), (ls.WRITE, bytes(16))], (1, 1, 1, 4, 1, 1)),
                       timeout=120)
    assert r.returncode == 0, r.stderr
    out, = ls.split_outputs(r.stdout, [16])
    assert list(np.frombuffer(out, np.float32)) == [0.0, 0.5, 1.0, 0.0]
    assert r.stderr.decode().splitlines() == ["fill 0", "fill 1", "fill 2"]
