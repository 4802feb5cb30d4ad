"""Outputs a user names (polykern/user_files.py write_atomic): ``polykern compile -o``, ``export``,
the autotune cache, the benchmarks' and tools' outputs. An output that is an input, a FIFO, a device
node or a folder is refused with ``polykern: error: ...``; a symlink is written through (its target
replaced atomically); an existing file keeps its mode, a new one gets the umask's."""
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import polykern as pk
from polykern import Buffer, artifact, f32, i32
from polykern.cli import main
from polykern.errors import PolykernError
from polykern.user_files import write_atomic

KERNEL = '''
import polykern as pk
from polykern import Buffer, artifact, f32, i32


@pk.kernel
def scale(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = 2.0 * y[i]
'''


@pk.kernel
def scale(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = 2.0 * y[i]


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    return path


def _compile(src: Path, out, capsys):
    rc = main(["compile", str(src), "-t", "llvm", "-o", str(out)])
    return rc, capsys.readouterr().err


def test_the_output_may_not_be_the_kernel_source(src, capsys):
    rc, err = _compile(src, src, capsys)
    assert rc == 1 and err == f"polykern: error: cannot write {src}: it is the input {src}; choose another output file\n"
    assert src.read_text() == KERNEL
    link = src.parent / "link.py"
    link.symlink_to(src)
    rc, err = _compile(src, link, capsys)
    assert rc == 1 and "it is the input" in err and src.read_text() == KERNEL


def test_a_fifo_output_is_refused_and_kept(src, capsys):
    fifo = src.parent / "out.kbin"
    os.mkfifo(fifo)
    rc, err = _compile(src, fifo, capsys)
    assert rc == 1 and err == f"polykern: error: cannot write {fifo}: it is a FIFO (named pipe), not a regular file\n"
    assert fifo.is_fifo()


def test_a_device_node_output_is_refused_and_kept(src, capsys):
    node = src.parent / "full"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # what /dev/full is
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD); the FIFO test covers non-regular outputs")
    rc, err = _compile(src, node, capsys)
    assert rc == 1 and err == f"polykern: error: cannot write {node}: it is a character device, not a regular file\n"
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_a_folder_or_a_missing_folder_is_a_clear_error(src, capsys):
    rc, err = _compile(src, src.parent, capsys)
    assert rc == 1 and err == f"polykern: error: cannot write {src.parent}: it is a directory, not a regular file\n"
    missing = src.parent / "no" / "k.kbin"
    rc, err = _compile(src, missing, capsys)
    assert rc == 1 and err == f"polykern: error: cannot write {missing}: the folder {missing.parent} does not exist\n"


def test_a_symlink_is_written_through_and_modes_are_kept(src, capsys):
    target = src.parent / "real.kbin"
    target.write_bytes(b"old")
    os.chmod(target, 0o600)
    link = src.parent / "link.kbin"
    link.symlink_to(target.name)
    rc, err = _compile(src, link, capsys)
    assert rc == 0, err
    assert link.is_symlink() and os.readlink(link) == target.name
    assert pk.load(target).functions and stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert [p.name for p in src.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_new_file_gets_the_umask(src):
    out = src.parent / "new.kbin"
    code = f"""
        import os, sys
        os.umask(0o077)
        from polykern.cli import main
        sys.exit(main(["compile", {str(src)!r}, "-t", "llvm", "-o", {str(out)!r}]))
    """
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600


def test_export_follows_the_same_rules(tmp_path):
    root = pk.build([scale], targets=["llvm"])
    fifo = tmp_path / "fifo.kbin"
    os.mkfifo(fifo)
    with pytest.raises(PolykernError, match=r"it is a FIFO \(named pipe\), not a regular file"):
        artifact.export(root, fifo)
    with pytest.raises(PolykernError, match="does not exist"):
        root.export(tmp_path / "missing" / "k.kbin")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out"
    path.write_bytes(b"old")

    with pytest.raises(TypeError):
        write_atomic(path, object())  # type: ignore[arg-type]
    assert path.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_a_benchmark_refuses_its_output_before_running(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, str(BENCHMARKS / "cpu.py"), "--json", str(fifo)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1 and r.stderr == f"cpu.py: error: cannot write {fifo}: it is a FIFO (named pipe), " \
        "not a regular file\n", r.stderr[-3000:]
    assert fifo.is_fifo()


def test_benchmark_outputs_follow_the_rules(tmp_path):
    code = f"""
        import os, sys
        sys.path.insert(0, {str(BENCHMARKS)!r})
        import common
        target = {str(tmp_path / "real.json")!r}
        open(target, "w").write("old")
        os.chmod(target, 0o640)
        os.symlink("real.json", {str(tmp_path / "link.json")!r})
        common.write_output({str(tmp_path / "link.json")!r}, "new")
        print(open(target).read(), oct(os.stat(target).st_mode & 0o777), os.path.islink({str(tmp_path / "link.json")!r}))
        common.output_folder(target)
    """
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert r.stdout == "new 0o640 True\n"
    assert r.returncode == 1 and r.stderr.startswith(f"-c: error: cannot create the output folder {tmp_path}/real.json:")
