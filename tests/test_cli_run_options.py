"""``polykern run``'s options are checked before anything is allocated or launched: a zero or negative
block, grid, --n or --shared-size is a usage error (exit 2), an --n whose buffers do not fit in memory
is ``polykern: error: ...`` (exit 1), and an explicit --shared-size is used as given."""
import subprocess
import sys
import textwrap

import pytest

import polykern as pk
from polykern.testing.c_corpus import saxpy
from polykern.cli import main


@pytest.fixture(scope="module")
def kbin(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "k.kbin"
    pk.build([saxpy], targets=["llvm"]).export(path)
    return path


@pytest.mark.parametrize("options,message", [
    (["--block", "0"], "--block takes positive integers of at most 2147483647, got '0'"),
    (["--block", "64,0"], "--block takes positive integers of at most 2147483647, got '64,0'"),
    (["--grid", "-1"], "--grid takes positive integers of at most 2147483647, got '-1'"),
    (["--n", "0"], "--n must be between 1 and 2147483647, got 0"),
    (["--n", "100000000000"], "--n must be between 1 and 2147483647, got 100000000000"),
    (["--shared-size", "0"], "--shared-size must be between 1 and 2147483647, got 0"),
    (["--seed", "-1"], "--seed must be >= 0, got -1"),
], ids=["block0", "block_y0", "grid_negative", "n0", "n_huge", "shared0", "seed_negative"])
def test_bad_options_are_usage_errors(kbin, capsys, options, message):
    assert main(["run", str(kbin), "saxpy", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"polykern: error: {message}\n"), err


def test_buffers_that_do_not_fit_in_memory_are_a_clear_error(kbin, tmp_path):
    """Under a memory limit (the host's memory is not the test's to take) the largest --n fails cleanly."""
    code = f"""
        import resource, sys
        from polykern.cli import main
        vm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:")) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (2 << 30),) * 2)
        sys.exit(main(["run", {str(kbin)!r}, "saxpy", "--n", "2147483647"]))
    """
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr[-3000:]
    assert r.stderr == ("polykern: error: --n 2147483647: the 2 buffers of 2147483647 elements each do not fit in "
                        "this process's memory; use a smaller --n\n")


def test_an_explicit_shared_size_is_used(tmp_path, capsys):
    """--shared-size 0 was silently replaced by the block's work-item count; it is refused now, while
    a positive value and the default still run."""
    from dynamic_shared_kernels import rev_tile

    path = tmp_path / "rev.kbin"
    pk.build([rev_tile], targets=["llvm"]).export(path)
    assert main(["run", str(path), "rev_tile", "--n", "64", "--block", "32", "--shared-size", "32"]) == 0
    assert main(["run", str(path), "rev_tile", "--n", "64", "--block", "32"]) == 0
    assert main(["run", str(path), "rev_tile", "--n", "64", "--block", "32", "--shared-size", "0"]) == 2
    assert "--shared-size must be between 1 and 2147483647, got 0" in capsys.readouterr().err
