"""Reading files users name (polykern/user_files.py read_regular): the .kbin readers, Python and C,
and the autotune cache reader. A FIFO must not hang, a symlink to /dev/zero must not grow memory, a
file that is not an artifact costs its header and not its size, and one too big for the process is
an ArtifactError, never a raw MemoryError."""
import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.kbin import file as kbin_file
from polykern.artifact import read_artifact
from polykern.errors import ArtifactError, PolykernError
from polykern.user_files import read_regular
from native_support import native_build  # noqa: F401

SPARSE = 2_000_000_000  # 2 GB of zeros that take no disk


@pk.kernel
def scale(n: i32, a: f32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * y[i]


def _sparse(path: Path, head: bytes = b"") -> Path:
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(SPARSE)
    return path


def _child(code: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)


# ------------------------------------------------------------------ the shared reader


def test_a_fifo_and_dev_zero_are_refused_without_waiting(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "zero-link"
    link.symlink_to("/dev/zero")
    for path, what in ((fifo, "a FIFO (named pipe)"), (link, "a character device")):
        with pytest.raises(PolykernError, match=re.escape(f"it is {what}, not a regular file")):
            read_regular(path, limit=1 << 20)


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(b"x" * 1001)
    assert read_regular(path, limit=1001) == b"x" * 1001
    with pytest.raises(PolykernError, match="it is 1001 bytes, more than the 1000 bytes accepted here"):
        read_regular(path, limit=1000)


def test_the_header_is_checked_before_the_rest_is_read(tmp_path):
    path = tmp_path / "a.kbin"
    path.write_bytes(b"HEADER" + b"rest" * 10)
    seen = []
    assert read_regular(path, head=6, check_head=seen.append) == path.read_bytes()
    assert seen == [b"HEADER"]
    with pytest.raises(ArtifactError, match="bad magic"):
        kbin_file.read(path)


# ------------------------------------------------------------------ .kbin: memory (item 5)


def test_python_reads_a_2gb_file_of_zeros_in_a_few_bytes(tmp_path):
    path = _sparse(tmp_path / "zeros.kbin")
    # the peak before the read (imports, backend discovery: what the runtimes installed here allocate) and
    # after it: reading the file (2 GB) would raise it by gigabytes
    r = _child(f"""
        import resource
        from polykern import artifact, backends
        backends.load_all()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            artifact.load({str(path)!r})
        except Exception as e:
            print(type(e).__name__, e)
        print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """)
    lines = r.stdout.strip().splitlines()
    assert r.returncode == 0 and lines[0].startswith("ArtifactError not a polykern artifact: bad magic"), r
    before, after = map(int, lines[-1].split())
    assert after - before < 100_000, f"peak RSS {before} -> {after} KiB reading a file that is not an artifact"


def test_python_reads_a_large_artifact_into_one_buffer(tmp_path):
    """A valid header and 2 GB after it: read once, into one buffer (the peak is the file, not twice it)."""
    path = _sparse(tmp_path / "big.kbin", b"PKBIN\0\r\n\2\0\0\0")
    r = _child(f"""
        import resource
        from polykern.kbin import file as kbin_file
        data, _ = kbin_file.read({str(path)!r})
        print(len(data), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    size, peak_kib = map(int, r.stdout.split())
    assert size == SPARSE
    assert peak_kib * 1024 < SPARSE * 1.3, f"peak RSS {peak_kib} KiB for a {SPARSE} byte file"


def test_python_under_a_memory_limit_gets_an_artifact_error(tmp_path):
    zeros = _sparse(tmp_path / "zeros.kbin")
    big = _sparse(tmp_path / "big.kbin", b"PKBIN\0\r\n\2\0\0\0")
    r = _child(f"""
        import resource
        from polykern.kbin import file as kbin_file
        from polykern.errors import ArtifactError
        vm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:")) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (512 << 20),) * 2)
        for path in ({str(zeros)!r}, {str(big)!r}):
            try:
                kbin_file.read(path)
            except ArtifactError as e:
                print(e)
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    zeros_msg, big_msg = r.stdout.strip().splitlines()
    assert zeros_msg.startswith("not a polykern artifact: bad magic")
    assert big_msg == f"cannot read {big}: {SPARSE} bytes do not fit in this process's memory"


def _c_peak(native_build, *argv: str, ulimit_kib: int = 0):  # noqa: F811
    """(exit status, stderr, peak RSS in KiB) of kbin-inspect in a child process."""
    code = f"""
        import resource, subprocess, sys
        if {ulimit_kib}:
            resource.setrlimit(resource.RLIMIT_AS, ({ulimit_kib} * 1024,) * 2)
        p = subprocess.run({[str(native_build / "kbin-inspect"), *argv]!r}, capture_output=True, text=True)
        sys.stderr.write(p.stderr)
        print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    """
    r = _child(code)
    rc, peak = map(int, r.stdout.split())
    return rc, r.stderr, peak


def test_c_reads_a_2gb_file_of_zeros_in_a_few_bytes(tmp_path, native_build):  # noqa: F811
    path = _sparse(tmp_path / "zeros.kbin")
    rc, err, peak = _c_peak(native_build, str(path))
    assert rc != 0 and "not a polykern artifact: bad magic" in err, err
    assert peak < 100_000, f"kbin-inspect peaked at {peak} KiB on a file that is not an artifact"
    rc, err, _ = _c_peak(native_build, str(path), ulimit_kib=200_000)
    assert rc != 0 and "not a polykern artifact: bad magic" in err, err


def test_c_reads_a_large_artifact_once(tmp_path, native_build):  # noqa: F811
    path = _sparse(tmp_path / "big.kbin", b"PKBIN\0\r\n\2\0\0\0")
    rc, err, peak = _c_peak(native_build, str(path))
    assert rc != 0 and "(at byte offset" in err, err  # the zeros are refused by the parser, after the read
    assert peak * 1024 < SPARSE * 1.3, f"kbin-inspect peaked at {peak} KiB for a {SPARSE} byte file"
    rc, err, _ = _c_peak(native_build, str(path), ulimit_kib=500_000)
    assert rc != 0 and f"{SPARSE} bytes do not fit in this process's memory" in err, err


def test_c_and_python_agree_on_short_headers(tmp_path, native_build):  # noqa: F811
    for i, head in enumerate((b"", b"PKB", b"PKBIN\0\r\n", b"PKBIN\0\r\n\2\0", b"PKBIN\0\r\n\7\0\0\0", b"XKBIN")):
        path = tmp_path / f"h{i}.kbin"
        path.write_bytes(head)
        with pytest.raises(ArtifactError) as py:
            read_artifact(path)
        c = subprocess.run([str(native_build / "kbin-inspect"), str(path)], capture_output=True, text=True)
        assert c.returncode != 0 and str(py.value) in c.stderr, (head, str(py.value), c.stderr)


# ------------------------------------------------------------------ the autotune cache (item 4)


@pytest.fixture
def tuned(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYKERN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("POLYKERN_AUTOTUNE", raising=False)
    k = pk.autotune(configs=[{"block": 32}, {"block": 64}], key=["n"], reps=1)(scale).build(targets=["llvm"])
    y = np.ones(100, np.float32)
    return k, (100, np.float32(2.0), y)


def _launch_in_child(tmp_path, timeout=60):
    """One autotuned launch in a child (a hang must not hang the test run): (status, stderr)."""
    code = f"""
        import os, resource, warnings, numpy as np, polykern as pk
        from polykern import Buffer, f32, i32
        os.environ["POLYKERN_CACHE_DIR"] = {str(tmp_path / "cache")!r}
        vm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:")) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30),) * 2)  # reading /dev/zero must not take the host
        @pk.kernel
        def scale(n: i32, a: f32, y: Buffer[f32]):
            i = pk.global_id(0)
            if i < n:
                y[i] = a * y[i]
        k = pk.autotune(configs=[{{"block": 32}}, {{"block": 64}}], key=["n"], reps=1)(scale).build(targets=["llvm"])
        y = np.ones(100, np.float32)
        k(100, np.float32(2.0), y, grid=lambda c: ((100 + c["block"] - 1) // c["block"],))
        assert (y == 2).all()
        print(k.last_cache_path)
    """
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(code))
    try:
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hung", ""
    return r.returncode, r.stderr


def _cache_path(k, args):
    path = Path(k.cache_path(args))
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_a_fifo_cache_file_does_not_hang_the_first_launch(tmp_path, tuned):
    k, args = tuned
    os.mkfifo(_cache_path(k, args))
    rc, err = _launch_in_child(tmp_path)
    assert rc == 0, err
    assert str(_cache_path(k, args)) in err  # the parent and the child name the same cache file
    assert "it is a FIFO (named pipe), not a regular file" in err and "tuning again" in err, err
    assert "cannot write" in err  # and the FIFO is not replaced by a regular file
    assert _cache_path(k, args).is_fifo()


def test_a_cache_file_linked_to_dev_zero_is_not_read(tmp_path, tuned):
    k, args = tuned
    _cache_path(k, args).symlink_to("/dev/zero")
    rc, err = _launch_in_child(tmp_path)
    assert rc == 0, err[-3000:]
    assert str(_cache_path(k, args)) in err
    assert "it is a character device, not a regular file" in err and "tuning again" in err, err
    assert "cannot write" in err
    assert os.path.realpath(_cache_path(k, args)) == "/dev/zero"


def _launch_warns(k, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k(*args, grid=lambda c: ((100 + c["block"] - 1) // c["block"],))
    np.testing.assert_array_equal(args[2], np.full(100, 2, np.float32))
    return [str(w.message) for w in caught]


def test_a_deeply_nested_cache_file_is_ignored_and_rewritten(tuned):
    k, args = tuned
    path = _cache_path(k, args)
    path.write_text("[" * 200_000 + "]" * 200_000)
    msgs = _launch_warns(k, args)
    assert any("nested too deeply" in m and "tuning again" in m for m in msgs), msgs
    assert json.loads(path.read_text())["choice"] in (0, 1)


def test_an_oversized_cache_file_is_ignored_and_rewritten(tuned):
    k, args = tuned
    path = _cache_path(k, args)
    path.write_bytes(b" " * (2 << 20))
    msgs = _launch_warns(k, args)
    assert any(f"it is {2 << 20} bytes, more than the {1 << 20} bytes accepted here" in m for m in msgs), msgs
    assert json.loads(path.read_text())["choice"] in (0, 1)
