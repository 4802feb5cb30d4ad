"""`polykern backends` prints the command that installs a missing runtime (it said "No module
named 'pycuda'" while only its --json knew the pip extra)."""
import pytest

from polykern import backends, cli


def _row(**kw):
    row = {"name": "cuda", "module_kinds": ["cuda"], "codegen_ok": True, "codegen_error": "",
           "runtime_available": False, "runtime_reason": "pycuda could not be imported: No module named 'pycuda'",
           "extra": "cuda", "install": "", "config": "cuda", "devices": [], "devices_error": ""}
    row.update(kw)
    return row


def _cli_lines(monkeypatch, capsys, rows):
    monkeypatch.setattr(backends, "status", lambda: rows)
    assert cli.main(["backends"]) == 0
    return capsys.readouterr().out.splitlines()[1:]


def test_a_missing_runtime_shows_its_pip_extra(monkeypatch, capsys):
    line, = _cli_lines(monkeypatch, capsys, [_row()])
    assert "No module named 'pycuda'" in line and "(install: pip install polykern[cuda])" in line, line


def test_an_out_of_tree_install_step_is_shown(monkeypatch, capsys):
    line, = _cli_lines(monkeypatch, capsys, [_row(name="oot", extra="", install="pip install polykern-oot")])
    assert line.endswith("(install: pip install polykern-oot)"), line


def test_no_install_step_when_none_exists_or_the_reason_says_it(monkeypatch, capsys):
    said = "the CUDA runtime is not part of this build (build with --config=cuda, or pip install polykern[cuda])"
    lines = _cli_lines(monkeypatch, capsys, [_row(name="metal", extra="", runtime_reason="Metal needs macOS"),
                                             _row(runtime_reason=said)])
    assert "install:" not in lines[0] and lines[1].count("pip install polykern[cuda]") == 1, lines


def test_this_hosts_missing_runtimes_show_their_extra(capsys):
    rows = [r for r in backends.status() if r["codegen_ok"] and not r["runtime_available"] and r["extra"]]
    if not rows:
        pytest.skip("every backend with a pip extra has its runtime on this host")
    assert cli.main(["backends"]) == 0
    out = capsys.readouterr().out
    for r in rows:
        line = next(ln for ln in out.splitlines() if ln.startswith(r["name"] + " "))
        assert f"polykern[{r['extra']}]" in line, line
