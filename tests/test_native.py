"""The native C runtime (native/): built with make, its C tests run, and it is checked against
the Python implementation on the same bytes:

- golden files: `kbin-inspect --json` holds every field of tests/golden/*.json, and both the
  JSON and the text listing are byte-identical to `polykern inspect`;
- differential parsing: thousands of corrupted artifacts are accepted/rejected by
  libpolykern.so (through ctypes) exactly as polykern.kbin.wire/artifact do, at the same offset;
- real kernels: `polykern compile` output runs from C (native/examples/run_saxpy) and every
  example kernel in examples/ runs through libpolykern.so and passes the example's own check;
- ASan/UBSan build of the C tests, a short libFuzzer run, an aarch64 cross build under QEMU.

Every test that cannot run here is skipped with the reason (no C compiler, no clang
libFuzzer runtime, no aarch64 cross toolchain, ...).
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from polykern.errors import BackendUnavailableError
from growing import growing
from native_support import (ROOT, NATIVE, BUILD, GOLDEN, EXAMPLES, CC, MAKE, needs_cc, IS_ELF_HOST,
                            needs_cpu_loader, native_lock, make_native, native_build, run_polykern, PkError,
                            clib, python_reexport, python_verdict, cli_in_process, CModule, libcuda_reason,
                            QEMU_AARCH64)  # noqa: F401 (fixtures)












# ------------------------------------------------------------------ libpolykern.so through ctypes








# ------------------------------------------------------------------ the C tests


@needs_cc
def test_c_unit_tests(native_build):
    """make check: parser, ELF loader (gcc/clang objects in several code models), runtime."""
    p = make_native("check", f"CC={CC}")
    out = p.stdout
    for name in ("test_kbin", "test_elf_loader", "test_runtime"):
        assert re.search(rf"{name}: all \d+ checks passed", out), out[-3000:]


# ------------------------------------------------------------------ golden files: C reads what Python wrote


def _golden():
    """The golden artifacts of both format versions (the version-1 files are in golden/v1)."""
    files = sorted(GOLDEN.glob("*.kbin")) + sorted(GOLDEN.glob("v1/*.kbin"))
    if not files:
        pytest.skip("tests/golden has no .kbin files yet (tests/golden/make_golden.py writes them)")
    return files


def _subset(expected, actual, path="$"):
    """Every key/element of `expected` is in `actual` with an equal value."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected an object"
        for k, v in expected.items():
            assert k in actual, f"{path}.{k}: missing in the C output"
            _subset(v, actual[k], f"{path}.{k}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{path}: list differs"
        for i, (a, b) in enumerate(zip(expected, actual)):
            _subset(a, b, f"{path}[{i}]")
    else:
        assert expected == actual, f"{path}: golden {expected!r} != C {actual!r}"


@needs_cc
def test_golden_json_descriptions(native_build):
    for kbin in _golden():
        want = json.loads(kbin.with_suffix(".json").read_text())
        p = subprocess.run([str(native_build / "kbin-inspect"), "--json", str(kbin)], capture_output=True,
                           text=True, check=True)
        _subset(want, json.loads(p.stdout))


@needs_cc
@pytest.mark.parametrize("mode", ["text", "json"])
def test_kbin_inspect_matches_polykern_inspect(native_build, mode, tmp_path):
    files = list(_golden())
    compiled = tmp_path / "saxpy_cli.kbin"
    if run_polykern("compile", str(EXAMPLES / "saxpy.py"), "-t", "llvm", "-o", str(compiled)).returncode == 0:
        files.append(compiled)
    flag = ["--json"] if mode == "json" else []
    for f in files:
        py = run_polykern("inspect", *flag, str(f))
        c = subprocess.run([str(native_build / "kbin-inspect"), *flag, str(f)], capture_output=True, text=True)
        assert py.returncode == 0, py.stderr
        assert c.returncode == 0, c.stderr
        assert c.stdout == py.stdout, f"{f.name}: kbin-inspect and polykern inspect differ"


@needs_cc
def test_c_reads_bf16_arguments(native_build, tmp_path):
    """A kernel with Buffer[bf16] (DLPack type code 4, docs/language.md "bf16") loads in C and is shown as
    polykern inspect shows it (it was "unknown type code 4 bits 16")."""
    src = tmp_path / "k.py"
    src.write_text("import polykern as pk\nfrom polykern import Buffer, bf16, f32\n\n\n@pk.kernel\n"
                   "def cvt(x: Buffer[f32], y: Buffer[bf16]):\n    y[pk.global_id(0)] = bf16(x[pk.global_id(0)])\n")
    out = tmp_path / "k.kbin"
    p = run_polykern("compile", str(src), "-t", "llvm", "-o", str(out))
    assert p.returncode == 0, p.stderr
    for flag in ([], ["--json"]):
        py = run_polykern("inspect", *flag, str(out))
        c = subprocess.run([str(native_build / "kbin-inspect"), *flag, str(out)], capture_output=True, text=True)
        assert c.returncode == 0, c.stderr
        assert c.stdout == py.stdout and "bf16" in c.stdout


@needs_cc
def test_kbin_inspect_source_and_errors(native_build, tmp_path):
    kb = next((f for f in _golden() if f.stem == "multi_target"), None)
    if kb is None:
        pytest.skip("golden multi_target.kbin not present")
    for fmt in ("ptx", "cuda", "nope"):
        py = run_polykern("inspect", "--source", fmt, str(kb))
        c = subprocess.run([str(native_build / "kbin-inspect"), "--source", fmt, str(kb)], capture_output=True,
                           text=True)
        assert (c.returncode == 0) == (py.returncode == 0), (fmt, c.stderr, py.stderr)
        assert c.stdout == py.stdout
    bad = tmp_path / "bad.kbin"
    bad.write_bytes(kb.read_bytes()[:-1])
    c = subprocess.run([str(native_build / "kbin-inspect"), str(bad)], capture_output=True, text=True)
    assert c.returncode == 1 and "at byte offset" in c.stderr


# ------------------------------------------------------------------ differential parsing: C == Python






@needs_cc
def test_c_and_python_agree_on_corrupted_artifacts(clib, tmp_path):
    import kbin_corpus  # tests/kbin_corpus.py: the one damage generator

    seeds = [f.read_bytes() for f in _golden()]
    compiled = tmp_path / "saxpy.kbin"
    if run_polykern("compile", str(EXAMPLES / "saxpy.py"), "-t", "llvm", "-o", str(compiled)).returncode == 0:
        seeds.append(compiled.read_bytes())
    rng = random.Random(20261121)
    checked = accepted = 0
    for seed in seeds:
        assert clib.parse(seed)[0], "a valid artifact was rejected by C"
        for m in kbin_corpus.mutants(seed, rng, 600):
            ok_py, off_py, msg_py = python_verdict(m)
            ok_c, off_c, msg = clib.parse(m)
            assert ok_c == ok_py, f"C {'accepts' if ok_c else 'rejects'} ({msg}) what Python " \
                                  f"{'accepts' if ok_py else 'rejects at ' + str(off_py)}"
            assert off_c == off_py, f"C reports offset {off_c} ({msg}), Python {off_py}"
            assert msg == msg_py, "C and Python word the error differently (one table: polykern/kbin/messages.py)"
            checked += 1
            accepted += ok_c
    assert checked >= 600 * len(seeds) and 0 < accepted < checked


def test_native_tables_header_is_generated_from_python():
    """native/src/kbin_tables.h (messages, escaping, kinds, attribute schema, the launch rules of
    polykern/runtime/launch_rules.py, ir/dynamic_shared.py and polykern_cuda's driver_limits.py / tensor_map_codes.py)
    is what tools/gen_native_tables.py makes from the Python tables; edit those, then run the tool."""
    gen = ROOT / "tools" / "gen_native_tables.py"
    header = NATIVE / "src" / "kbin_tables.h"
    if not (gen.exists() and header.exists()):
        pytest.skip("tools/ or native/src is not in this tree (a Bazel sandbox)")
    spec = importlib.util.spec_from_file_location("_gen_native_tables", gen)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert header.read_text(encoding="utf-8") == mod.render(), \
        "native/src/kbin_tables.h is stale: run `python tools/gen_native_tables.py`"




def _c_listing(clib, data: bytes, json_out: bool) -> str:
    """What kbin-inspect prints for valid ``data`` (pk_artifact_describe / _write_json into an
    open_memstream), without starting a process."""
    libc = ctypes.CDLL(None)
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.free.argtypes = [ctypes.c_void_p]
    fn = clib.lib.pk_artifact_write_json if json_out else clib.lib.pk_artifact_describe
    fn.restype, fn.argtypes = None, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    e = PkError()
    buf = ctypes.create_string_buffer(data, len(data))
    art = clib.lib.pk_artifact_parse(buf, len(data), ctypes.byref(e))
    assert art, e.message
    ptr, size = ctypes.c_void_p(), ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(ptr), ctypes.byref(size))
    try:
        fn(art, b"k.kbin", stream)
    finally:
        libc.fclose(stream)
        clib.lib.pk_artifact_free(art)
    text = ctypes.string_at(ptr, size.value).decode("utf-8")
    libc.free(ptr)
    return text


@needs_cc
def test_damaged_corpus_same_verdict_and_words(clib, native_build, tmp_path):
    """The whole generated corpus (tests/kbin_corpus.py, > 3000 artifacts of format versions 1
    and 2): libpolykern and polykern.artifact.load accept and refuse the same ones, at the same
    offset, with the same message, print the same listing (text and JSON) for those they accept
    and encode them again to the same bytes (pk_artifact_write == load().export(); for a version-2
    artifact, the bytes it was read from); every 16th also goes through the `kbin-inspect` and
    `polykern inspect` commands, compared byte for byte."""
    import kbin_corpus

    inspect = str(native_build / "kbin-inspect")
    n = refused = reexported = 0
    raw_control = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
    for i, (label, data) in enumerate(kbin_corpus.corpus()):
        ok_py, off_py, msg_py = python_verdict(data)
        ok_c, off_c, msg_c = clib.parse(data)
        assert (ok_c, off_c, msg_c) == (ok_py, off_py, msg_py), label
        assert not raw_control.search(msg_py), (label, "a raw control character in the message")
        f = tmp_path / "k.kbin"
        f.write_bytes(data)
        for flag in ([], ["--json"]) if ok_py else ():
            code, out, err = cli_in_process("inspect", *flag, str(f))
            assert code == 0 and not raw_control.search(out), (label, flag)
            assert _c_listing(clib, data, bool(flag)) == out, (label, flag)
        if ok_py:
            again = python_reexport(data)
            assert clib.reexport(data) == again, (label, "C and Python encode the artifact differently")
            assert again == data or data[8] == 1, (label, "a version-2 artifact did not export to its own bytes")
            reexported += 1
        if i % 16 == 0:
            for flag in ([], ["--json"]):
                code, out, err = cli_in_process("inspect", *flag, str(f))
                c = subprocess.run([inspect, *flag, str(f)], capture_output=True)
                assert c.returncode == code, (label, flag, c.stderr, err)
                assert c.stdout.decode("utf-8") == out, (label, flag)
                assert c.stderr.decode("utf-8").replace("kbin-inspect: ", "polykern: ", 1) == err, (label, flag)
        n += 1
        refused += not ok_py
    assert n > 3000 and 0.5 * n < refused < n and reexported == n - refused


@needs_cc
def test_kbin_inspect_escapes_like_polykern_inspect(native_build, tmp_path):
    """Hostile strings (NUL, ESC sequences, C1 controls, bidi overrides, long names): the same
    escaped bytes from both commands, in the listing, --json, --source and error messages;
    kbin-inspect no longer stops at a NUL byte."""
    import zlib

    import kbin_corpus

    for long_names in (False, True):
        f = tmp_path / f"hostile{int(long_names)}.kbin"
        data = kbin_corpus._hostile_root(long_names)
        bad = bytearray(data)
        at = bad.index(b"private_bytes") + len(b"private_bytes") + 8
        bad[at] = 0x1B
        bad[-4:] = zlib.crc32(bytes(bad[:-4])).to_bytes(4, "little")
        for content, flags in ((data, ([], ["--json"], ["--source", "asm"], ["--source", "src"])),
                               (bytes(bad), ([],))):
            f.write_bytes(content)
            for flag in flags:
                code, out, err = cli_in_process("inspect", *flag, str(f))
                c = subprocess.run([str(native_build / "kbin-inspect"), *flag, str(f)], capture_output=True)
                assert c.returncode == code, (flag, c.stderr)
                assert c.stdout.decode("utf-8") == out, flag
                assert c.stderr.decode("utf-8").replace("kbin-inspect:", "polykern:") == err, flag
                if flag != ["--source", "src"]:  # (that is the module's own text payload, no ESC in it)
                    assert ("\\u001b" if "--json" in flag else "\\x1b") in out + err
                assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", out + err)


@needs_cc
def test_kbin_inspect_refuses_what_is_not_a_regular_file(native_build, tmp_path):
    """A FIFO (no writer: must not block), /dev/zero (endless), a directory: refused by both
    readers, with the same message."""
    fifo = tmp_path / "k\x1b.kbin"
    os.mkfifo(fifo)
    for path, what in ((fifo, "a FIFO (named pipe)"), (Path("/dev/zero"), "a character device"),
                       (tmp_path, "a directory")):
        c = subprocess.run([str(native_build / "kbin-inspect"), str(path)], capture_output=True, text=True,
                           timeout=20)
        code, _, err = cli_in_process("inspect", str(path))
        shown = str(path).replace("\x1b", "\\x1b")
        assert c.returncode == code == 1
        assert err == f"polykern: error: cannot read {shown}: it is {what}, not a regular file\n"
        assert c.stderr == err.replace("polykern:", "kbin-inspect:")


@needs_cc
def test_kbin_inspect_reads_a_growing_file_only_up_to_its_size(native_build, tmp_path):
    kb = _golden()[0]
    path = tmp_path / "growing.kbin"
    path.write_bytes(kb.read_bytes())
    assert subprocess.run([str(native_build / "kbin-inspect"), str(path)], capture_output=True).returncode == 0
    with growing(path):
        for _ in range(5):
            c = subprocess.run([str(native_build / "kbin-inspect"), str(path)], capture_output=True, text=True,
                               timeout=20)
            assert c.returncode == 1, c.stdout
            assert "changed size while being read" in c.stderr or "trailing bytes" in c.stderr, c.stderr


# ------------------------------------------------------------------ running kernels from C


@needs_cc
@needs_cpu_loader
def test_run_saxpy_example_on_cpu(native_build, tmp_path):
    out = tmp_path / "saxpy.kbin"
    p = run_polykern("compile", str(EXAMPLES / "saxpy.py"), "-t", "llvm", "-o", str(out))
    assert p.returncode == 0, p.stderr
    r = subprocess.run([str(native_build / "run_saxpy"), str(out), "--n", "100003"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "on cpu: " in r.stdout and "OK: y = a*x + y" in r.stdout


@needs_cc
@needs_cpu_loader
def test_run_saxpy_prefers_cuda_then_says_why_it_fell_back(native_build, tmp_path):
    out = tmp_path / "saxpy2.kbin"
    p = run_polykern("compile", str(EXAMPLES / "saxpy.py"), "-t", "cuda -arch=sm_90", "-t", "llvm", "-o", str(out))
    if p.returncode != 0:
        pytest.skip(f"cannot compile a cuda+llvm artifact here: {p.stderr.strip().splitlines()[-1:]}")
    r = subprocess.run([str(native_build / "run_saxpy"), str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    if "on cuda: " in r.stdout:   # a GPU host
        assert "OK" in r.stdout
    else:
        assert "skipped: module 1 (cuda): CUDA runtime is not available" in r.stdout
        assert "on cpu: " in r.stdout
        r = subprocess.run([str(native_build / "run_saxpy"), str(out), "--on", "cuda"], capture_output=True,
                           text=True)
        assert r.returncode == 1 and "libcuda.so.1" in r.stderr


@needs_cc
@needs_cpu_loader
def test_unknown_kind_beside_llvm_read_shown_reexported_and_run_from_c(native_build, tmp_path):
    """Format version 2: a module of a kind no backend provides, first in the root's imports, beside
    a compiled llvm module. kbin-inspect shows it as polykern inspect does, --reexport writes the
    same bytes, and run_saxpy skips it (saying why) and runs the llvm module."""
    from polykern import artifact
    from polykern.module import RootModule
    from kbin_future import future_module

    compiled = tmp_path / "saxpy.kbin"
    p = run_polykern("compile", str(EXAMPLES / "saxpy.py"), "-t", "llvm", "-o", str(compiled))
    assert p.returncode == 0, p.stderr
    llvm = artifact.load(compiled).on("llvm")
    mixed = tmp_path / "mixed.kbin"
    data = RootModule.collect([future_module(llvm.functions), llvm], ["zz_future", "llvm"]).export(mixed)
    inspect = str(native_build / "kbin-inspect")
    for flag in ([], ["--json"]):
        c = subprocess.run([inspect, *flag, str(mixed)], capture_output=True, text=True)
        py = run_polykern("inspect", *flag, str(mixed))
        assert c.returncode == 0 and py.returncode == 0, c.stderr + py.stderr
        assert c.stdout == py.stdout and "zz_future" in c.stdout
    again = tmp_path / "again.kbin"
    c = subprocess.run([inspect, "--reexport", str(again), str(mixed)], capture_output=True, text=True)
    assert c.returncode == 0, c.stderr
    assert again.read_bytes() == data
    r = subprocess.run([str(native_build / "run_saxpy"), str(mixed), "--n", "10007"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "skipped: module 1 (zz_future)" in r.stdout and "on cpu: " in r.stdout and "OK" in r.stdout


@needs_cc
def test_c_reexports_version_1_golden_as_python_does(native_build, tmp_path):
    """A version-1 artifact encoded again by C (kbin-inspect --reexport) and by Python
    (load().export()) gives the same version-2 bytes."""
    v1_files = sorted(GOLDEN.glob("v1/*.kbin"))
    assert v1_files, "tests/golden/v1 has the version-1 golden files"
    for v1 in v1_files:
        out = tmp_path / v1.name
        c = subprocess.run([str(native_build / "kbin-inspect"), "--reexport", str(out), str(v1)],
                           capture_output=True, text=True)
        assert c.returncode == 0, c.stderr
        assert v1.read_bytes()[8] == 1 and out.read_bytes() == python_reexport(v1.read_bytes())
        assert out.read_bytes()[8] == 2


@needs_cc
@needs_cpu_loader
def test_foreign_machine_object_is_refused(native_build, tmp_path):
    other = "aarch64-linux-gnu" if platform.machine().lower() in ("x86_64", "amd64") else "x86_64-linux-gnu"
    out = tmp_path / "foreign.kbin"
    p = run_polykern("compile", str(EXAMPLES / "saxpy.py"), "-t", f"llvm -mtriple={other}", "-o", str(out))
    assert p.returncode == 0, p.stderr
    r = subprocess.run([str(native_build / "run_saxpy"), str(out)], capture_output=True, text=True)
    assert r.returncode == 1
    assert f"CPU object is for {other.split('-')[0]}" in r.stderr, r.stderr






@needs_cc
@pytest.mark.parametrize("kind", ["llvm", "cuda"])
@pytest.mark.parametrize("example", sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_")))
def test_examples_run_through_libpolykern(clib, example, kind):
    """Each example's kernels, compiled by polykern, run from C (CPU: in-process ELF loader and
    thread pool; CUDA: driver API) and pass the example's own check."""
    import polykern as pk
    from polykern.lang.kernel import Kernel

    if kind == "llvm" and not IS_ELF_HOST:
        pytest.skip("the native CPU loader runs on x86-64/aarch64 Linux")
    if kind == "cuda" and libcuda_reason():
        pytest.skip(libcuda_reason())

    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location(f"_native_example_{example}", EXAMPLES / f"{example}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except BackendUnavailableError as e:  # a framework example (torch_op.py) where the framework is absent
        pytest.skip(f"{example}.py: {e}")
    finally:
        sys.path.remove(str(EXAMPLES))
    if getattr(mod, "NOT_NATIVE", None):  # e.g. Hopper kernels: sm_90a only (tests/test_native_hopper.py)
        pytest.skip(f"{example}.py: {mod.NOT_NATIVE}")
    # an example with specialized kernels says which ones its run() launches in kernels()
    kernels = mod.kernels() if callable(getattr(mod, "kernels", None)) else \
        [v for v in vars(mod).values() if isinstance(v, Kernel)]
    assert kernels and hasattr(mod, "run"), f"{example}.py has no kernels / run()"
    root = pk.build(kernels, targets=[kind])
    cm = CModule(clib, root.export(), kind)
    cm.meta = root.functions
    try:
        summary = mod.run(cm, np.random.default_rng(0))
    finally:
        cm.close()
    assert "OK" in summary and cm.device.startswith("cpu: " if kind == "llvm" else "cuda: ")
    print(f"{example} on {cm.device}: {summary}")


@needs_cc
def test_c_launch_sizes_the_dynamic_shared_array(clib):
    """libpolykern reads the ``dynamic_shared`` attribute ("INDEX,BYTES", ir/dynamic_shared.py): a negative
    length is a launch error naming the argument, and a length the CPU workers' stacks cannot hold is
    refused before it runs (the launch used to look up an attribute the compiler never writes, so its
    bytes were never counted); a good length runs."""
    import polykern as pk

    if not IS_ELF_HOST:
        pytest.skip("the native CPU loader runs on x86-64/aarch64 Linux")
    from dynamic_shared_kernels import rev_tile

    root = pk.build([rev_tile], targets=["llvm"])
    cm = CModule(clib, root.export(), "llvm")
    cm.meta = root.functions
    try:
        x = np.arange(64, dtype=np.float32)
        y = np.zeros(64, np.float32)
        cm["rev_tile"](np.int32(64), x, y, grid=2, block=32, shared_size=32)
        np.testing.assert_array_equal(y, np.concatenate([x[:32][::-1], x[32:][::-1]]))
        for bad in (-1, 0):  # >= 1, as polykern/runtime/shared_launch.py requires on every runtime
            with pytest.raises(AssertionError, match=rf"argument 3 \('shared_size'.*is {bad}; it must be >= 1"):
                cm["rev_tile"](np.int32(64), x, y, grid=2, block=32, shared_size=bad)
        # the CPU's limit is the language's 64 KiB of shared arrays (the C runtime allowed what the stack
        # held: 1 MiB ran here, which the Python runtime refuses)
        cm["rev_tile"](np.int32(64), x, y, grid=2, block=32, shared_size=16384)
        for big in (16385, 2**18, 2**31 - 1):
            with pytest.raises(AssertionError, match=rf"need {4 * big} bytes .*the language's limit of shared "
                                                     r"arrays is 65536 bytes per work-group"):
                cm["rev_tile"](np.int32(64), x, y, grid=2, block=32, shared_size=big)
    finally:
        cm.close()


@needs_cc
@pytest.mark.parametrize("kind", ["llvm", "cuda"])
def test_c_launch_opts_in_when_static_and_dynamic_shared_pass_48_kib(clib, kind):
    """32 KiB of static shared memory and 20 KB of dynamic: CUDA's default limit of the dynamic bytes is
    48 KiB less the static ones, so the launch must opt in (libpolykern did only past 48 KiB of dynamic
    bytes alone, and cuLaunchKernel refused this one; the Python runtime opts in here)."""
    import polykern as pk

    if kind == "llvm" and not IS_ELF_HOST:
        pytest.skip("the native CPU loader runs on x86-64/aarch64 Linux")
    if kind == "cuda" and libcuda_reason():
        pytest.skip(libcuda_reason())
    from dynamic_shared_kernels import rev_tile_static

    root = pk.build([rev_tile_static], targets=[kind])
    assert root.functions["rev_tile_static"].shared_bytes == 32768
    cm = CModule(clib, root.export(), kind)
    cm.meta = root.functions
    try:
        x = np.arange(5000 * 2, dtype=np.float32)
        y = np.zeros_like(x)
        cm["rev_tile_static"](np.int32(x.size), x, y, grid=10, block=1000, shared_size=5000)
        np.testing.assert_array_equal(y, np.concatenate([t[::-1] for t in x.reshape(10, 1000)]))
    finally:
        cm.close()


@needs_cc
@pytest.mark.parametrize("attr", ["99,4", "0,0", "x", "", "1,4", "3,16", "3,3", " 3,4", "3,04", "+3,4", "3,4,",
                                  "3,4 ", "03,4", "3", "3,", ",4", "99999999999999999999,4"])
def test_c_launch_refuses_a_malformed_dynamic_shared_attribute(clib, attr):
    """A hostile artifact's ``dynamic_shared`` attribute is refused with a clear error, never a crash, and
    exactly where and as the Python runtimes refuse it (ir/dynamic_shared.py parse_attr: the C runtime accepted
    " 3,4", "3,04", "+3,4" and an element size of 16; polykern/runtime/launch_rules.py words it for both)."""
    import polykern as pk
    from polykern.errors import ArtifactError
    from polykern.runtime.shared_launch import dynamic_shared_of

    if not IS_ELF_HOST:
        pytest.skip("the native CPU loader runs on x86-64/aarch64 Linux")
    from dynamic_shared_kernels import rev_tile

    root = pk.build([rev_tile], targets=["llvm"])
    for m in root.walk():
        m.functions["rev_tile"].attrs["dynamic_shared"] = attr
    with pytest.raises(ArtifactError, match=r"attribute dynamic_shared = .* does not name an i32 size argument") as py:
        dynamic_shared_of(root.functions["rev_tile"])
    cm = CModule(clib, root.export(), "llvm")
    cm.meta = root.functions
    try:
        x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
        with pytest.raises(AssertionError, match=re.escape(repr(str(py.value).encode()))):
            cm["rev_tile"](np.int32(64), x, y, grid=2, block=32, shared_size=32)
    finally:
        cm.close()


# ------------------------------------------------------------------ sanitizers, fuzzing, aarch64


def _probe_cc(flags):
    if not CC:
        return False
    src = BUILD / "probe.c"
    BUILD.mkdir(parents=True, exist_ok=True)
    src.write_text("int main(void) { return 0; }\n")
    return subprocess.run([CC, *flags, str(src), "-o", str(BUILD / "probe")], capture_output=True).returncode == 0


@needs_cc
def test_c_tests_under_asan_and_ubsan(native_build):
    if not _probe_cc(["-fsanitize=address,undefined"]):
        pytest.skip(f"{CC} cannot link -fsanitize=address,undefined here")
    p = make_native("sanitize", f"CC={CC}", timeout=900)
    for name in ("test_kbin", "test_elf_loader", "test_runtime"):
        assert re.search(rf"{name}: all \d+ checks passed", p.stdout), p.stdout[-3000:]


@needs_cc
def test_fuzz_parser_briefly(tmp_path):
    """native/fuzz/run.sh for POLYKERN_FUZZ_SECONDS (default 20), seeded with the golden files
    and artifacts the compiler writes now (real ELF objects, PTX)."""
    secs = os.environ.get("POLYKERN_FUZZ_SECONDS", "20")
    for ex, target in (("saxpy", "llvm"), ("reduction", "llvm"), ("matmul", "cuda")):
        run_polykern("compile", str(EXAMPLES / f"{ex}.py"), "-t", target, "-o", str(tmp_path / f"{ex}_{target}.kbin"))
    env = dict(os.environ, FUZZ_SEEDS=str(tmp_path))
    with native_lock():
        p = subprocess.run([str(NATIVE / "fuzz" / "run.sh"), secs], capture_output=True, text=True, timeout=900,
                           env=env)
    if p.returncode == 77:
        pytest.skip(p.stderr.strip().splitlines()[-1])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "FOUND A CRASH" not in p.stdout + p.stderr




@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-gcc") and QEMU_AARCH64 and MAKE),
                    reason="no aarch64 cross compiler (gcc-aarch64-linux-gnu) or qemu-user(-static) here")
def test_aarch64_cross_build_under_qemu(tmp_path):
    """The aarch64 ELF relocator, tested for real: the C tests and a polykern-compiled aarch64
    saxpy run under qemu-aarch64 (qemu-user-static's binary, or qemu-user's)."""
    run = f"{QEMU_AARCH64} -L /usr/aarch64-linux-gnu"
    p = make_native("CC=aarch64-linux-gnu-gcc", "BUILD=build-aarch64", "KOBJ_CLANG=", f"RUN={run}", "check")
    for name in ("test_kbin", "test_elf_loader", "test_runtime"):
        assert re.search(rf"{name}: all \d+ checks passed", p.stdout), p.stdout[-3000:]
    out = tmp_path / "saxpy_a64.kbin"
    c = run_polykern("compile", str(EXAMPLES / "saxpy.py"), "-t", "llvm -mtriple=aarch64-linux-gnu", "-o", str(out))
    assert c.returncode == 0, c.stderr
    r = subprocess.run([*run.split(), str(NATIVE / "build-aarch64" / "run_saxpy"), str(out)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and "on cpu: aarch64" in r.stdout and "OK" in r.stdout, r.stdout + r.stderr
