"""The polykern CLI: inspect (no runtime needed), run/compile/backends error paths, exit codes."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from polykern import artifact
from polykern.cli import main
from polykern.testing.isolation import isolated

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
MULTI = os.path.join(GOLDEN, "multi_target.kbin")
STRIPPED = os.path.join(GOLDEN, "stripped_nested.kbin")


@pytest.fixture(autouse=True)
def _no_backends(monkeypatch):
    monkeypatch.setenv("POLYKERN_BACKEND_AUTOLOAD", "0")
    with isolated(loaded=False):
        yield


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_inspect_human_readable(capsys):
    code, out, err = run_cli(capsys, "inspect", MULTI)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("multi_target.kbin: polykern artifact (format 2), 2323 bytes, crc32 0x")
    assert "  compiler: polykern golden" in lines
    assert "  targets:  cuda -arch=sm_90 | vulkan | webgpu" in lines
    assert any(line.startswith("  reduce_sum(n: i64, src: Buffer[f64, readonly], dst: Buffer[f64])   [group_id.0 "
                               "local_id.0 local_size.0; shared 2048 B; uses_atomics=1; uses_barrier=1]")
               for line in lines)
    assert "  [0] root    imports [1, 2, 3]" in lines
    assert any(line.startswith("  [1] cuda    fmt=ptx") and "kernels: reduce_sum, saxpy" in line for line in lines)
    assert "        payload: text, 6 lines (69 bytes)" in lines
    assert "        shader saxpy: SPIR-V module, version 1.3 (20 bytes)" in lines
    assert any(line.startswith("        sources: cuda (") and "ptx (" in line for line in lines)


def test_inspect_stripped_binary_payloads(capsys):
    code, out, _ = run_cli(capsys, "inspect", STRIPPED)
    assert code == 0
    assert "  sources:  stripped" in out and "  build: golden" in out
    assert "payload: ELF 32-bit relocatable object, Hexagon (20 bytes)" in out
    assert "  [1] metal    fmt=msl" in out and "imports [2]" in out
    assert "        sources: none embedded (stripped)" in out


def test_inspect_json_matches_read_artifact(capsys):
    code, out, _ = run_cli(capsys, "inspect", MULTI, "--json")
    assert code == 0 and json.loads(out) == json.loads(json.dumps(artifact.read_artifact(MULTI)))


def test_inspect_source(capsys):
    code, out, _ = run_cli(capsys, "inspect", MULTI, "--source", "cuda")
    assert code == 0 and out == '// ===== module [1] cuda: cuda =====\nextern "C" __global__ void saxpy_kernel() {}\n'
    code, out, _ = run_cli(capsys, "inspect", STRIPPED, "--source", "cl")  # textual payload, sources stripped
    assert code == 0 and "__kernel void saxpy() {}" in out
    code, out, err = run_cli(capsys, "inspect", MULTI, "--source", "msl")
    assert code == 1 and out == ""
    assert err.startswith("polykern: error: no module of multi_target.kbin has a 'msl' source; available: cuda, ptx, "
                          "spirv-asm, wgsl")
    code, _, err = run_cli(capsys, "inspect", STRIPPED, "--source", "o")
    assert code == 1
    assert "module [3] hexagon: fmt 'o' is binary (ELF 32-bit relocatable object, Hexagon (20 bytes))" in err


def test_inspect_corrupt_and_missing(capsys, tmp_path):
    bad = tmp_path / "bad.kbin"
    data = bytearray(open(MULTI, "rb").read())
    data[200] ^= 0x10
    bad.write_bytes(bytes(data))
    code, out, err = run_cli(capsys, "inspect", str(bad))
    assert code == 1 and out == "" and err.startswith("polykern: error: ")
    assert "(at byte offset" in err
    code, _, err = run_cli(capsys, "inspect", str(tmp_path / "nope.kbin"))
    assert code == 1 and "cannot read" in err and "No such file" in err
    (tmp_path / "text.kbin").write_text("hello")
    code, _, err = run_cli(capsys, "inspect", str(tmp_path / "text.kbin"))
    assert code == 1 and "not a polykern artifact: bad magic" in err


def test_usage_errors_exit_2(capsys):
    for argv in ([], ["inspect"], ["frobnicate"], ["compile", "x.py", "-o", "k.bin"]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and err.startswith("polykern: error: "), argv
        assert "usage: polykern" in err
    code, _, err = run_cli(capsys, "run", MULTI, "saxpy", "--grid", "a,b")
    assert code == 2 and err == "polykern: error: --grid takes X[,Y[,Z]] positive integers, got 'a,b'\n"


def test_run_without_runtime_explains_every_module(capsys):
    code, out, err = run_cli(capsys, "run", MULTI, "saxpy", "--n", "16")
    assert code == 1 and out == ""
    assert "cannot launch 'saxpy'" in err
    for kind in ("cuda", "vulkan", "webgpu"):
        assert f"multi_target.kbin contains a module of kind '{kind}' but no {kind} runtime is registered here" in err
    code, _, err = run_cli(capsys, "run", MULTI, "nope")
    assert code == 1 and "no kernel named 'nope'" in err and "reduce_sum, saxpy" in err
    code, _, err = run_cli(capsys, "run", MULTI, "saxpy", "--on", "metal")
    assert code == 1 and "no 'metal' module; modules: cuda, vulkan, webgpu" in err


def test_backends_json_and_table(capsys):
    code, out, _ = run_cli(capsys, "backends", "--json")
    assert code == 0 and json.loads(out) == []
    code, out, _ = run_cli(capsys, "backends")
    assert code == 0 and "autoload disabled" in out


def test_compile_errors(capsys, tmp_path):
    code, _, err = run_cli(capsys, "compile", str(tmp_path / "missing.py"), "-t", "vulkan", "-o",
                           str(tmp_path / "k.bin"))
    assert code == 1 and "polykern: error:" in err
    src = tmp_path / "broken.py"
    src.write_text("raise ValueError('user bug')\n")
    code, _, err = run_cli(capsys, "compile", str(src), "-t", "tcli", "-o", str(tmp_path / "k.bin"))
    assert code == 1 and ("tcli" in err or "user bug" in err)


def test_compile_end_to_end_with_an_installed_backend(capsys, tmp_path, monkeypatch):
    """Real pipeline through whichever codegen is installed here; skipped where none is."""
    monkeypatch.setenv("POLYKERN_BACKEND_AUTOLOAD", "1")
    from polykern import backends, registry

    try:
        backends.load_all()
        import polykern.pipeline  # noqa: F401
    except Exception as e:  # the frontend/pipeline/backends are written in parallel with this file
        pytest.skip(f"the compile pipeline is not importable here: {e}")
    kinds = [n.split(".", 2)[2] for n in registry.names("target.build.")]
    if not kinds:
        pytest.skip("no backend codegen is registered in this environment")
    src = tmp_path / "kern.py"
    src.write_text(textwrap.dedent("""
        import polykern as pk
        from polykern import f32, i32, Buffer

        @pk.kernel
        def saxpy(n: i32, a: f32, x: Buffer[f32], y: Buffer[f32]):
            i = pk.global_id(0)
            if i < n:
                y[i] = a * x[i] + y[i]

        @pk.kernel
        def other(n: i32, y: Buffer[f32]):
            i = pk.global_id(0)
            if i < n:
                y[i] = 0.0
    """))
    kind = "llvm" if "llvm" in kinds else kinds[0]
    out_path = tmp_path / "k.bin"
    code, out, err = run_cli(capsys, "compile", str(src), "-t", kind, "-k", "saxpy", "-o", str(out_path),
                             "--strip-sources")
    if code != 0:
        pytest.skip(f"the {kind} codegen cannot compile saxpy yet: {err.strip()}")
    assert f"wrote {out_path}" in out
    desc = artifact.read_artifact(str(out_path))
    assert [f["name"] for f in desc["functions"]] == ["saxpy"] and not desc["sources_embedded"]
    code, _, err = run_cli(capsys, "compile", str(src), "-t", kind, "-k", "nope", "-o", str(out_path))
    assert code == 1 and "no kernel named 'nope'" in err and "saxpy" in err
    runnable = artifact.load(str(out_path)).is_runnable
    code, out, err = run_cli(capsys, "run", str(out_path), "saxpy", "--n", "100", "--block", "32")
    if runnable:  # y = 1.5 * x + y on random inputs; the smoke run reports where it ran
        assert code == 0 and out.startswith(f"ran saxpy(n: i32, a: f32, x: Buffer[f32], y: Buffer[f32]) on {kind}: "
                                            "grid (4,) block (32,), n=100")
    else:
        assert code == 1 and "cannot launch 'saxpy'" in err


def test_python_dash_m_entry_point(tmp_path):
    env = dict(os.environ, POLYKERN_BACKEND_AUTOLOAD="0")
    ok = subprocess.run([sys.executable, "-m", "polykern", "inspect", MULTI], capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and "multi_target.kbin: polykern artifact" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "polykern", "inspect", str(tmp_path / "x.kbin")], capture_output=True,
                         text=True, env=env)
    assert bad.returncode == 1 and bad.stderr.startswith("polykern: error: ") and "Traceback" not in bad.stderr


# ------------------------------------------------------------------ strings from the artifact are escaped

_RAW_CONTROL = "".join(chr(c) for c in (*range(0, 9), *range(11, 32), *range(0x7F, 0xA0))) + "\u202e"


def _hostile(tmp_path, long_names=False):
    import kbin_corpus

    path = tmp_path / "hostile.kbin"
    path.write_bytes(kbin_corpus._hostile_root(long_names))
    return str(path)


def test_inspect_escapes_every_artifact_string(capsys, tmp_path):
    code, out, err = run_cli(capsys, "inspect", _hostile(tmp_path))
    assert code == 0 and err == ""
    assert not any(c in out for c in _RAW_CONTROL)
    shown = "k\\x00\\x1b[31m\\u202e\\x7f\\x85\\\\'\"é"
    lines = out.splitlines()
    assert "  targets:  llvm | vulkan\\x1b" in lines
    assert f"  note{shown}: v\\x1b[2J{shown}" in lines
    assert any(line.startswith(f"  {shown}(n{shown}: i32, x\\x1b: Buffer[f32, readonly])   [global_id.0 local_size.2;")
               for line in lines)
    assert f"        shader {shown}: binary data (22 bytes)" in lines
    assert any(line.startswith("        sources: asm (") and f"src{shown} (" in line for line in lines)


def test_inspect_json_stays_lossless_and_ascii(capsys, tmp_path):
    import kbin_corpus

    code, out, _ = run_cli(capsys, "inspect", "--json", _hostile(tmp_path))
    assert code == 0 and out.isascii() and not any(c in out for c in _RAW_CONTROL)
    desc = json.loads(out)
    assert desc["functions"][0]["name"] == kbin_corpus.HOSTILE
    assert desc["metadata"]["note" + kbin_corpus.HOSTILE].startswith("v\x1b[2J")


def test_inspect_source_escapes_control_characters_but_keeps_lines(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "inspect", _hostile(tmp_path), "--source", "asm")
    assert code == 0
    assert out == "// ===== module [1] llvm: asm =====\nline\\x1b[2J\n\ttab\\n\\u2028\\x0d\n"


def test_errors_quote_and_cut_artifact_strings(capsys, tmp_path):
    data = bytearray(open(_hostile(tmp_path, long_names=True), "rb").read())
    at = data.index(b"private_bytes") + len(b"private_bytes") + 8
    data[at] = ord("x")  # "16" -> "x6", CRC fixed below
    import zlib

    data[-4:] = zlib.crc32(bytes(data[:-4])).to_bytes(4, "little")
    bad = tmp_path / "bad.kbin"
    bad.write_bytes(bytes(data))
    code, out, err = run_cli(capsys, "inspect", str(bad))
    assert code == 1 and out == ""
    assert err.startswith("polykern: error: function '" + "k" * 48 + "'... attribute 'private_bytes' has an invalid "
                          "value 'x6' (expected a decimal integer from 0 to 1099511627776) (at byte offset ")
    assert not any(c in err for c in _RAW_CONTROL)
