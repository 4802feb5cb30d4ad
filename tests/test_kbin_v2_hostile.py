"""Hostile `.kbin` bytes found by a red-team pass over format version 2: each is valid at
the container level and used to get past one reader but not the other, or to load but not export
again to the same bytes. Python (polykern.artifact.load) and C (libpolykern) must give the same
verdict, offset and message; an accepted artifact exports again, from either, to its own bytes."""
from __future__ import annotations

import pytest

from polykern.kbin import wire
from polykern.errors import ArtifactError
from polykern.kbin.function_info import ArgInfo, FunctionInfo
from native_support import python_reexport, python_verdict, clib, native_build, needs_cc  # noqa: F401 (fixtures)


def _fn(name: str) -> FunctionInfo:
    return FunctionInfo(name, [ArgInfo("x", "buffer", 2, 32, 1, False)], [], 0, {})


def _device(fmt: str, names=("k",), blob: bytes = b"code") -> bytes:
    """A version-2 device payload written field by field (so fmt may be what no writer writes)."""
    w = wire.Writer()
    w.u8(wire.LAYOUTS.index("bytes"))
    w.str_(fmt)
    w.fmap({n: _fn(n) for n in names})
    w.bytes_(blob)
    return w.getvalue()


def _artifact(modules, children) -> bytes:
    """A version-2 container of ``modules`` [(kind, payload)] after the root, tree ``children``."""
    root = wire.encode_root_payload({}, [k for k, _ in modules])
    return wire.encode_container([("root", root), *modules], children, None, {})


def _same_verdict(clib, data: bytes):
    py = python_verdict(data)
    assert clib.parse(data) == py, "C and Python disagree"
    return py


@needs_cc
@pytest.mark.parametrize("kind", ["zzfuture", "llvm"])
def test_an_empty_fmt_is_refused_by_both_readers(clib, kind):
    """Was: C accepted the module, Python's load raised ValueError (not an ArtifactError)."""
    data = _artifact([(kind, _device(""))], [[1], []])
    ok, offset, msg = _same_verdict(clib, data)
    assert not ok and msg.startswith(f"{kind} module fmt is empty"), msg
    with pytest.raises(ArtifactError, match="fmt is empty"):
        wire.decode_device_payload(kind, _device(""))


@needs_cc
def test_modules_out_of_preorder_are_refused_by_both_readers(clib, monkeypatch):
    """Was: accepted by both; C exported the modules in the stored order, Python in preorder (its
    only order), so the re-exported bytes differed from each other and from the input."""
    mods = [("zza", _device("a", ("a",))), ("zzb", _device("b", ("b",))), ("zzc", _device("c", ("c",)))]
    in_order = _artifact(mods, [[1, 3], [2], [], []])      # root -> zza -> zzb; root -> zzc
    ok, _, _ = _same_verdict(clib, in_order)
    assert ok and python_reexport(in_order) == in_order and clib.reexport(in_order) == in_order
    with monkeypatch.context() as m:  # the writer refuses to write it (it checks what it writes)
        m.setattr(wire, "decode_container", lambda data: None)
        swapped = _artifact(mods, [[1], [3, 2], [], []])  # root -> zza -> (zzc, zzb): preorder 0 1 3 2
    ok, offset, msg = _same_verdict(clib, swapped)
    assert not ok and msg.startswith("module 3 comes at position 2 of a preorder walk of the import tree"), msg
    with pytest.raises(ArtifactError, match="preorder"):
        _artifact(mods, [[1], [3, 2], [], []])


@needs_cc
def test_messages_naming_a_64_character_kind_are_whole_in_c(clib):
    """Was: C cut "module 1 (<64-character kind>) payload" at 63 bytes (a version-1 kind was short)."""
    kind = "z" * 64
    data = _artifact([(kind, _device("elf"))], [[1], []])
    assert _same_verdict(clib, data)[0]
    cut = data.rindex(kind.encode()) + len(kind) + 4  # inside the module's payload length
    ok, offset, msg = _same_verdict(clib, data[:cut])
    assert not ok and f"module 1 ({kind}) payload" in msg, msg


@needs_cc
def test_checking_the_roots_kernels_is_not_quadratic_in_c(clib):
    """Was: C looked each of the root's kernels up by scanning every module's functions, O(R x F): an
    8 MB artifact of 60000 kernels took ~25 s (a 100 MB one, hours); Python uses a set."""
    import time

    from polykern.kbin.function_info import FunctionInfo

    fmap = {f"f{i:07d}": FunctionInfo(f"f{i:07d}", [], [], 0, {}) for i in range(60000)}
    w = wire.Writer()
    w.u8(wire.LAYOUTS.index("bytes"))
    w.str_("zz")
    w.fmap(fmap)
    w.bytes_(b"")
    root = wire.encode_root_payload(fmap, ["zzfuture"])
    data = wire.encode_container([("root", root), ("zzfuture", w.getvalue())], [[1], []], None, {})
    start = time.perf_counter()
    assert clib.parse(data)[0]
    assert time.perf_counter() - start < 8.0


@needs_cc
def test_c_finds_the_runnable_module_among_more_than_64(native_build, tmp_path):
    """Was: pk_program_load_first walked the import tree with a 64-entry stack that silently dropped
    what did not fit, the root's FIRST imports: an llvm module before 70 others was never tried."""
    import subprocess

    from polykern import artifact
    from polykern.module import DeviceModule, RootModule
    from native_support import EXAMPLES, run_polykern

    compiled = tmp_path / "saxpy.kbin"
    p = run_polykern("compile", str(EXAMPLES / "saxpy.py"), "-t", "llvm", "-o", str(compiled))
    assert p.returncode == 0, p.stderr
    llvm = artifact.load(compiled).on("llvm")
    others = [DeviceModule(f"zz{i}", b"future", "zzbin", llvm.functions) for i in range(70)]
    many = tmp_path / "many.kbin"
    RootModule.collect([llvm, *others], ["llvm"] + [m.kind for m in others]).export(many)
    r = subprocess.run([str(native_build / "run_saxpy"), str(many), "--n", "1001"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "on cpu: " in r.stdout and "OK" in r.stdout, r.stdout + r.stderr


@needs_cc
def test_inspect_source_lists_every_note_and_format_in_c(native_build, tmp_path):
    """Was: kbin-inspect --source kept 16 notes and 64 available formats (and cut a long fmt at 128
    bytes); polykern inspect --source prints them all. Version 2's open kinds make 70 modules plausible."""
    import subprocess

    from polykern.module import DeviceModule, RootModule
    from native_support import cli_in_process

    mods = [DeviceModule(f"zz{i}", b"\x00binary", "zzbin", {"k": _fn("k")}, {f"src{i:02d}": "text"})
            for i in range(70)]
    f = tmp_path / "k.kbin"
    RootModule.collect(mods, [m.kind for m in mods]).export(f)
    for fmt in ("zzbin", "src07", "nope" * 50):
        code, out, err = cli_in_process("inspect", "--source", fmt, str(f))
        c = subprocess.run([str(native_build / "kbin-inspect"), "--source", fmt, str(f)], capture_output=True,
                           text=True)
        assert (c.returncode, c.stdout) == (code, out)
        assert c.stderr.replace("kbin-inspect: ", "polykern: ") == err.replace("kbin-inspect: ", "polykern: ")
    assert err.count("; src") == 0 and err.count("src69") == 1 and code == 1


@needs_cc
@pytest.mark.parametrize("where", ["sources", "metadata"])
def test_an_empty_source_format_or_metadata_key_is_refused_by_both_readers(clib, where, monkeypatch):
    """Was: both readers accepted it; Python's load then raised ValueError (a module's sources map
    format names, never empty, to text) or its export refused the metadata (never write what you
    cannot read back: export's own rule), while C re-exported it."""
    root = wire.encode_root_payload({}, ["zzfuture"])
    modules = [("root", root), ("zzfuture", _device("zz"))]
    sources, meta = ([{}, {"": "text"}], {}) if where == "sources" else (None, {"": "x"})
    with pytest.raises(ArtifactError, match="is empty"):  # the writer reads back what it writes
        wire.encode_container(modules, [[1], []], sources, meta)
    with monkeypatch.context() as m:
        m.setattr(wire, "decode_container", lambda data: None)
        data = wire.encode_container(modules, [[1], []], sources, meta)
    ok, offset, msg = _same_verdict(clib, data)
    key = "module 1 sources" if where == "sources" else "metadata"
    assert not ok and msg.startswith(f"key of {key} is empty"), msg
