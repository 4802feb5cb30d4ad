"""Checked mode (docs/language.md 7.4): ``pk.build(..., bounds_check=True)`` or ``POLYKERN_BOUNDS_CHECK=1``.

Every runtime here runs the same bad launches; the first violation is a LaunchError naming the kernel,
the buffer, the index and the source line, and the process (and the memory next to the buffers)
survives. In-bounds kernels give the same results checked and unchecked; the default build is unchanged.
"""
import copy
import inspect
import json
import re

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32, i64, u32
from polykern.runtime.checked_launch import CheckedKernel
from polykern.errors import ArtifactError, CompileError, LaunchError
from polykern.ir.nodes import walk_all_exprs
from polykern.ir.verifier import verify
from polykern.module import FunctionInfo
from polykern.passes.bounds_check import ATTR_LENGTHS, bounds_check, decode_accesses
from conformance import ALL_CASES
from runtimes import all_target_kinds, runnable_targets

TARGETS = [pytest.param((t, k), id=t.split()[0]) for t, k, _ in runnable_targets()
           if k in ("llvm", "opencl", "vulkan", "webgpu")]


@pk.kernel
def scale(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = x[i] * 2.0


@pk.kernel
def gather(n: i32, idx: Buffer[i32, "readonly"], x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = x[idx[i]]


@pk.kernel
def histogram(n: i32, keys: Buffer[i32, "readonly"], h: Buffer[i32]):
    i = pk.global_id(0)
    if i < n and keys[i] >= -100:
        pk.atomic_add(h, keys[i], 1)


@pk.kernel
def shifted(n: i32, off: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i + off] = 1.0


@pk.kernel
def private(n: i32, k: i32, y: Buffer[i32]):
    t = pk.local(i32, 4)
    i = pk.global_id(0)
    if i < n:
        t[i % 4] = i
        y[i] = t[i % 4 + k]


@pk.kernel
def compact(n: i32, x: Buffer[f32, "readonly"], count: Buffer[i32], out: Buffer[f32]):
    i = pk.global_id(0)
    if i < n and x[i] > 0.0:
        out[pk.atomic_add(count, 0, 1)] = x[i]


@pk.kernel
def tiled(k: i32, y: Buffer[i32]):
    s = pk.shared(i32, 64)
    lid = pk.local_id(0)
    s[lid] = lid * 10
    pk.barrier()
    y[pk.global_id(0)] = s[lid + k]


KERNELS = [scale, gather, histogram, shifted, private, compact, tiled]


@pytest.fixture(scope="module", params=TARGETS)
def checked(request):
    target, kind = request.param
    return pk.build(KERNELS, targets=[target], bounds_check=True).on(kind)


def _line(kernel, text: str) -> int:
    """The file line of ``text`` in a kernel's source (what the LaunchError must name)."""
    lines, first = inspect.getsourcelines(kernel.pyfunc)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _violation(mod, name, *args, n=64):
    with pytest.raises(LaunchError) as info:
        mod[name](*args, grid=(n + 63) // 64, block=64)
    return str(info.value)


def test_out_of_bounds_read(checked):
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    idx = np.array([0, 1, 2, 3, 4, 5, 6, 9], np.int32)
    text = _violation(checked, "gather", 8, idx, x, y)
    assert text.startswith("kernel 'gather': out-of-bounds read of buffer 'x' at index 9 (length 8)")
    assert f"test_bounds_check.py:{_line(gather, 'y[i] = x[idx[i]]')}:16: y[i] = x[idx[i]] (" in text


def test_out_of_bounds_write_keeps_the_neighbours(checked):
    big = np.zeros(16, np.float32)
    y = big[:8]  # the memory right after y belongs to the caller
    big[8:] = 5.0
    text = _violation(checked, "scale", 12, np.ones(12, np.float32), y)
    assert "kernel 'scale': out-of-bounds write to buffer 'y' at index 8 (length 8)" in text
    assert f"test_bounds_check.py:{_line(scale, 'y[i] = x[i] * 2.0')}:9: y[i] = x[i] * 2.0 (" in text
    assert (big[8:] == 5.0).all()


def test_out_of_bounds_atomic(checked):
    keys = np.array([0, 1, 2, 17, 3], np.int32)
    text = _violation(checked, "histogram", 5, keys, np.zeros(4, np.int32))
    assert "out-of-bounds atomic_add on buffer 'h' at index 17 (length 4)" in text
    assert "pk.atomic_add(h, keys[i], 1)" in text


def test_negative_index(checked):
    y = np.zeros(8, np.float32)
    text = _violation(checked, "shifted", 8, -3, y)
    assert "out-of-bounds write to buffer 'y' at index -3 (length 8)" in text
    assert "y[i + off] = 1.0" in text


def test_local_array(checked):
    text = _violation(checked, "private", 8, 2, np.zeros(8, np.int32))
    assert "out-of-bounds read of array 't' at index " in text and "(length 4)" in text
    assert "y[i] = t[i % 4 + k]" in text


def test_shared_array(checked):
    y = np.zeros(128, np.int32)
    checked["tiled"](0, y, grid=2, block=64)
    assert y.tolist() == [10 * (i % 64) for i in range(128)]
    text = _violation(checked, "tiled", 1, y, n=128)
    assert "out-of-bounds read of array 's' at index 64 (length 64)" in text and "s[lid + k]" in text


def test_index_holding_an_atomic_is_evaluated_once(checked):
    x = np.array([1, -1, 2, 3, -4, 5], np.float32)
    count, out = np.zeros(1, np.int32), np.zeros(4, np.float32)
    checked["compact"](6, x, count, out, grid=1, block=64)
    assert count[0] == 4 and sorted(out) == [1, 2, 3, 5]
    count[0] = 0
    text = _violation(checked, "compact", 6, x, count, np.zeros(3, np.float32))
    assert "out-of-bounds write to buffer 'out' at index 3 (length 3)" in text and count[0] == 4


def test_in_bounds_results_match_unchecked(checked, request):
    target, kind = request.node.callspec.params["checked"]
    plain = pk.build(KERNELS, targets=[target]).on(kind)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(300).astype(np.float32)
    idx = rng.integers(0, 300, 300).astype(np.int32)
    keys = rng.integers(0, 16, 300).astype(np.int32)
    outs = []
    for mod in (plain, checked):
        y, g, h, p = np.zeros(300, np.float32), np.zeros(300, np.float32), np.zeros(16, np.int32), np.zeros(300, np.int32)
        mod["scale"](300, x, y, grid=5, block=64)
        mod["gather"](300, idx, x, g, grid=5, block=64)
        mod["histogram"](300, keys, h, grid=5, block=64)
        mod["private"](300, 0, p, grid=5, block=64)
        outs.append((y, g, h, p))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    assert outs[0][2].sum() == 300


def test_empty_buffer_is_checked(checked):
    text = _violation(checked, "scale", 1, np.ones(1, np.float32), np.zeros(0, np.float32))
    assert "write to buffer 'y' at index 0 (length 0)" in text


# ---------------------------------------------------------------- build, artifact, environment


def test_default_build_is_unchecked_and_env_turns_it_on(monkeypatch):
    monkeypatch.delenv("POLYKERN_BOUNDS_CHECK", raising=False)
    plain = pk.build([scale])
    assert "bounds_check" not in plain.functions["scale"].attrs
    assert [a.name for a in plain.functions["scale"].args] == ["n", "x", "y"]
    for value, on in (("1", True), ("yes", True), ("0", False), ("false", False), ("", False)):
        monkeypatch.setenv("POLYKERN_BOUNDS_CHECK", value)
        assert (pk.build([scale]).functions["scale"].attrs.get("bounds_check") == "1") is on, value
    monkeypatch.setenv("POLYKERN_BOUNDS_CHECK", "1")
    assert "bounds_check" not in pk.build([scale], bounds_check=False).functions["scale"].attrs
    with pytest.raises(pk.errors.PolykernError, match="bounds_check must be True, False or None"):
        pk.build([scale], bounds_check="yes")


def test_artifact_records_checked_mode_and_still_checks_after_load(tmp_path):
    mod = pk.build([scale], bounds_check=True)
    info = mod.functions["scale"]
    assert info.attrs["bounds_check"] == "1"
    assert [a.name for a in info.args] == ["n", "x", "y", "bounds_lens", "bounds_err"]
    assert [a.type_str for a in info.args[3:]] == ["Buffer[u32, readonly]", "Buffer[i32]"]
    path = tmp_path / "checked.kbin"
    mod.export(str(path))
    loaded = pk.load(str(path))
    with pytest.raises(LaunchError, match="out-of-bounds write to buffer 'y' at index 4 "):
        loaded["scale"](6, np.ones(6, np.float32), np.zeros(4, np.float32), grid=1, block=8)
    from polykern.cli import main

    assert main(["inspect", str(path)]) == 0


def test_inspect_shows_checked_mode(tmp_path, capsys):
    from polykern.cli import main

    path = tmp_path / "c.kbin"
    pk.build([scale], bounds_check=True).export(str(path))
    capsys.readouterr()
    main(["inspect", str(path)])
    assert "bounds_check=1" in capsys.readouterr().out


def test_user_argument_errors_name_the_user_signature():
    k = pk.build([scale], bounds_check=True)["scale"]
    with pytest.raises(LaunchError, match=r"takes 3 arguments \(n: i32, x: Buffer\[f32, readonly\], y: "):
        k(4, np.ones(4, np.float32), grid=1, block=4)


@pk.kernel
def wide(n: i64, x: Buffer[f32]):
    i = i64(pk.global_id(0))
    if i < n:
        x[i * 4294967296 + i] = 1.0


def test_64_bit_indices():
    mod = pk.build([wide], bounds_check=True)
    assert mod.functions["wide"].attrs["bounds_index_bits"] == "64"
    x = np.zeros(4, np.float32)
    mod["wide"](1, x, grid=1, block=1)
    assert x[0] == 1.0
    with pytest.raises(LaunchError, match="at index 4294967297 "):
        mod["wide"](2, x, grid=1, block=2)


@pk.kernel
def atomic_inside_load_index(x: Buffer[f32], c: Buffer[i32]):
    x[0] = x[pk.atomic_add(c, 0, 1)] + 1.0


@pk.kernel
def atomic_in_loop_condition(x: Buffer[f32], c: Buffer[i32]):
    while x[pk.atomic_add(c, 0, 1)] < 5.0:
        x[1] = 1.0


def test_atomic_in_a_nested_index_runs_once():
    k = pk.build([atomic_inside_load_index], bounds_check=True)["atomic_inside_load_index"]
    x, c = np.array([0, 0, 5, 0], np.float32), np.array([2], np.int32)
    k(x, c, grid=1, block=1)
    assert x.tolist() == [6, 0, 5, 0] and c[0] == 3
    c[0] = 7
    with pytest.raises(LaunchError, match="read of buffer 'x' at index 7 "):
        k(x, c, grid=1, block=1)
    assert c[0] == 8


def test_atomic_index_in_a_loop_condition_is_a_located_refusal():
    with pytest.raises(CompileError, match=r"test_bounds_check.py:\d+:\d+: checked mode .* 'x': its index contains "
                                           "an atomic"):
        pk.build([atomic_in_loop_condition], bounds_check=True)
    pk.build([atomic_in_loop_condition], bounds_check=False)  # fine unchecked
    with pytest.raises(CompileError, match="default build for the CPU runtimes checks every access it cannot prove"):
        pk.build([atomic_in_loop_condition])  # the CPU's default checks what it cannot prove (docs/correctness.md 5.5)


def test_deeply_nested_indices_grow_the_kernel_linearly():
    @pk.kernel
    def chain(a: Buffer[i32], o: Buffer[i32]):
        o[0] = a[a[a[a[a[a[a[a[a[a[0] & 7] & 7] & 7] & 7] & 7] & 7] & 7] & 7] & 7] + 1 if o[1] > 0 or a[a[a[a[0]]]] > 0 else 0

    size = lambda fn: sum(1 for _ in walk_all_exprs(fn.body))  # noqa: E731
    before = copy.deepcopy(chain.ir)
    after = bounds_check(copy.deepcopy(chain.ir))
    assert size(after) < 30 * size(before)
    a, o = np.arange(8, dtype=np.int32)[::-1].copy(), np.array([0, 1], np.int32)
    pk.build([chain], bounds_check=True)["chain"](a, o, grid=1, block=1)
    plain = np.array([0, 1], np.int32)
    pk.build([chain])["chain"](a, plain, grid=1, block=1)
    assert o.tolist() == plain.tolist()


def test_pass_output_verifies_and_names_are_fresh():
    @pk.kernel
    def clash(y: Buffer[f32], bounds_lens: u32, bounds_err: i32):
        y[bounds_lens] = f32(bounds_err)

    fn = verify(bounds_check(copy.deepcopy(clash.ir)))
    assert [p.name for p in fn.params] == ["y", "bounds_lens", "bounds_err", "bounds_lens1", "bounds_err1"]
    assert fn.attrs[ATTR_LENGTHS] == "0"
    (acc,) = decode_accesses(fn.attrs)
    assert (acc.array, acc.op, acc.index_type, acc.length) == ("y", "write", "u32", -1)
    assert bounds_check(fn) is fn and len(fn.params) == 5  # idempotent

    @pk.kernel
    def no_buffers(k: i32):
        t = pk.local(i32, 4)
        t[k] = 1

    fn = verify(bounds_check(copy.deepcopy(no_buffers.ir)))
    assert [p.name for p in fn.params] == ["k", "bounds_err"] and fn.attrs[ATTR_LENGTHS] == ""
    with pytest.raises(LaunchError, match="write to array 't' at index 4 "):
        pk.build([no_buffers], bounds_check=True)["no_buffers"](4, grid=1, block=1)


def test_malformed_checked_attributes_are_artifact_errors():
    info = pk.build([scale], bounds_check=True).functions["scale"]
    for key, value in (("bounds_at_0", "[1]"), ("bounds_accesses", "9"), ("bounds_at_1", "{"), ("bounds_lengths", "0,7"), ("bounds_lengths", "2,2"), ("bounds_lengths", "2,1"),
                       ("bounds_user_args", "x"), ("bounds_index_bits", "16")):
        bad = FunctionInfo(info.name, info.args, info.launch_tags, info.shared_bytes, dict(info.attrs, **{key: value}))
        with pytest.raises(ArtifactError, match="checked kernel 'scale'"):
            CheckedKernel(bad, lambda *a, **k: None)
    rows = sorted(json.loads(info.attrs[f"bounds_at_{k}"])[:4] for k in range(int(info.attrs["bounds_accesses"])))
    assert rows == [["x", "read", "i32", -1], ["y", "write", "i32", -1]]


def test_cli_run_passes_the_hidden_arguments(tmp_path, capsys):
    from polykern.cli import main

    path = tmp_path / "c.kbin"
    pk.build([scale], bounds_check=True).export(str(path))
    capsys.readouterr()
    assert main(["run", str(path), "scale", "--n", "100"]) == 0
    out = capsys.readouterr().out
    assert "ran scale(n: i32, x: Buffer[f32, readonly], y: Buffer[f32]) on llvm" in out


def test_the_runtime_kernel_stays_reachable():
    k = pk.build([scale], bounds_check=True).on("llvm")["scale"]
    assert isinstance(k, CheckedKernel) and repr(k).startswith("<CheckedKernel scale(n: i32,")
    k(4, np.ones(4, np.float32), np.zeros(4, np.float32), grid=1, block=4)
    assert k.module.kind == "llvm" and k.last_threads  # the CPU kernel's own attributes


REPRESENTATIVE = ("example_saxpy", "example_matmul", "local_array_sort", "atomics_int", "control_flow")


@pytest.mark.parametrize("kind", all_target_kinds())
def test_every_code_generator_compiles_checked_kernels(kind, monkeypatch):
    """Where a case compiles unchecked (fallback modules: no device needed), it compiles checked too,
    and the artifact is deterministic and names source files without directories."""
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    cases = [c for c in ALL_CASES if c.name in REPRESENTATIVE]
    assert len(cases) == len(REPRESENTATIVE)
    for case in cases:
        try:
            pk.build(case.kernels, targets=[kind])
        except pk.errors.PolykernError:
            continue  # a feature this backend refuses either way
        first = pk.build(case.kernels, targets=[kind], bounds_check=True)
        assert first.export() == pk.build(case.kernels, targets=[kind], bounds_check=True).export()
        for info in first.functions.values():
            for k in range(int(info.attrs["bounds_accesses"])):
                assert "/" not in json.loads(info.attrs[f"bounds_at_{k}"])[4]


def test_fuzzer_in_checked_mode_finds_nothing():
    """tools/fuzz.py --bounds-check: random in-bounds programs give the oracle's results checked (no
    false violation, no changed value); a short budget on the CPU backend (the full run is a tool)."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    p = subprocess.run([sys.executable, str(repo / "tools" / "fuzz.py"), "--seed", "12", "--count", "200",
                        "--time-budget", "20", "--targets", "llvm", "--bounds-check", "--no-save"],
                       # every section: the inlining and fragment-guard fixes landed
                       capture_output=True, text=True, timeout=600, cwd=repo)
    assert "ignored" not in p.stdout, p.stdout[-2000:]
    last = p.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"fuzz: (\d+) programs x 1 targets, (\d+) disagreements", last)
    assert m and int(m.group(1)) >= 5 and m.group(2) == "0", p.stdout[-3000:] + p.stderr[-3000:]


def test_hidden_lengths_do_not_count_against_push_constants(tmp_path, monkeypatch):
    """Fuzz seed 79000013: 144 bytes of Vulkan push constants when each length was a scalar (128 allowed)."""
    import importlib.util

    from polykern.testing import kernelgen

    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    prog = kernelgen.generate(79000013, avoid=kernelgen.BEFORE_FUNCTIONS)  # the program of that run
    path = tmp_path / "fz79000013.py"
    path.write_text(prog.source)
    spec = importlib.util.spec_from_file_location("fz79000013", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = getattr(module, prog.name)
    pk.build([kernel], targets=["vulkan"])
    pk.build([kernel], targets=["vulkan"], bounds_check=True)
