"""The CPU runtimes' default build cannot touch memory outside the caller's arrays.

llvm and PoCL kernels run in the caller's process (hexagon's run in qemu's, whose default build stays raw:
test_hexagon_default_build_is_raw). Their default build proves
the guarded affine accesses in bounds under launch-time conditions (passes/bounds_proof.py, checked
before each launch by polykern.runtime.launch_proof) and keeps checked mode's guards for the others; a
failed condition or guard is an out-of-bounds LaunchError. ``bounds_check=False`` is the raw build.
"""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import ArtifactError, LaunchError
from runtimes import runnable_targets
from native_support import native_build  # noqa: F401 (fixture: make -C native)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from matmul import matmul  # noqa: E402
from reduction import block_sum  # noqa: E402
from saxpy import saxpy  # noqa: E402
from stencil2d import jacobi  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from tuned_kernels import jacobi_wide  # noqa: E402


@pk.kernel
def fill(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = 1.0


@pk.kernel
def scatter(n: i32, idx: Buffer[i32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[idx[i]] = 1.0


@pk.kernel
def groups_and_scatter(n4: i32, idx: Buffer[i32, "readonly"], x: Buffer[f32, "readonly"], y: Buffer[f32]):
    k = pk.global_id(0)
    if k < n4:
        a, b, c, d = pk.vload(x, k, 4)
        pk.vstore(y, k, (a, b, c, d))
        y[idx[k]] = 0.5  # the one checked access


@pk.kernel
def tile(n: i32, y: Buffer[f32]):
    s = pk.shared(f32, 64)
    lid = pk.local_id(0)
    s[lid] = 2.0
    pk.barrier()
    i = pk.global_id(0)
    if i < n:
        y[i] = s[lid]


@pk.kernel
def shifted_down(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i - 1] = 1.0  # i = 0 writes y[-1]


@pk.kernel
def walk(n: i32, y: Buffer[f32]):
    j = pk.global_id(0)
    for t in range(3):
        j = j + n  # reassigned in a loop: nothing is known about j
    y[j] = 1.0


@pk.kernel
def stale(n: i32, y: Buffer[f32]):
    j = pk.global_id(0) + 5
    v = j  # v keeps j's first value
    j = pk.global_id(0)
    if j >= 0 and j < n:  # says nothing about v
        y[v] = 1.0


@pk.kernel
def wrapped(n: i32, y: Buffer[f32]):
    g = pk.global_id(0) * 2
    j = g * 1073741824 + 2147483647  # i32 wraps: 2147483647, then -1 for every g > 0
    if j < n:  # compares the wrapped value
        y[j] = 1.0


@pk.kernel
def row_diff(h: i32, w: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    c = pk.global_id(0)
    r = pk.global_id(1)
    if r < h and c + 1 < w:
        i = r * w + c
        y[i] = x[i + 1]  # i + 1 holds the guarded sum c + 1 through i's definition

@pk.kernel
def quotients(n: i32, m: i32, y: Buffer[f32]):
    """Indexes by ``n // 4`` (truncates toward zero) and ``m >> 2`` (rounds down)."""
    if pk.global_id(0) == 0:
        y[n // 4] = 1.0
        y[(m >> 2) + 1] = 2.0


def _jacobi_reference(h, w, a):
    """A 5-point Jacobi step, edges copied (float64)."""
    g = a.reshape(h, w).astype(np.float64)
    out = g.copy()
    out[1:-1, 1:-1] = 0.2 * (g[1:-1, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] + g[:-2, 1:-1] + g[2:, 1:-1])
    return out.ravel()

def _opencl_on_cpu() -> bool:
    try:
        import pyopencl as cl
        from polykern_opencl.runtime import device

        return bool(device.get().cl_device.type & cl.device_type.CPU)
    except Exception:  # no OpenCL runtime or device here
        return False


CPU = [pytest.param(t, id=t.split()[0]) for t, k, _ in runnable_targets() if k == "llvm"]
CPU += [pytest.param("opencl", id="opencl-cpu", marks=pytest.mark.skipif(
    not any(k == "opencl" for _, k, _ in runnable_targets()) or not _opencl_on_cpu(),
    reason="the OpenCL device here is not a CPU (PoCL)"))]


@pytest.fixture
def guarded_memory():
    """A 32-element array whose first 8 elements are the kernel's buffer: the rest must stay 0."""
    return np.zeros(32, np.float32)


def _build(kernels, target, **kw):
    return pk.build(kernels, targets=[target], **kw)


@pytest.mark.parametrize("target", CPU)
def test_proven_write_past_the_end_is_refused_before_running(target, guarded_memory):
    k = _build([fill], target)["fill"]
    with pytest.raises(LaunchError, match=r"kernel 'fill': possible out-of-bounds access to 'y' at test_cpu_safety.py:\d+ "
                                          r".*len\(y\) = 8.*fails: n <= len\(y\) \(here 16 > 8\)"):
        k(16, guarded_memory[:8], grid=1, block=16)
    assert not guarded_memory.any()  # nothing ran
    k(8, guarded_memory[:8], grid=1, block=16)
    assert guarded_memory[:8].tolist() == [1.0] * 8 and not guarded_memory[8:].any()


@pytest.mark.parametrize("target", CPU)
def test_unproven_write_past_the_end_is_checked(target, guarded_memory):
    k = _build([scatter], target)["scatter"]
    idx = np.array([0, 1, 20], np.int32)
    with pytest.raises(LaunchError, match="out-of-bounds write to buffer 'y' at index 20 .length 8."):
        k(3, idx, guarded_memory[:8], grid=1, block=4)
    assert not guarded_memory[8:].any()


@pytest.mark.parametrize("target", CPU)
def test_shared_array_past_its_size_is_refused(target):
    k = _build([tile], target)["tile"]
    y = np.zeros(128, np.float32)
    with pytest.raises(LaunchError, match="out-of-bounds access to 's' at"):
        k(128, y, grid=1, block=128)  # s has 64 elements, local_id(0) reaches 127
    k(128, y, grid=2, block=64)
    assert (y == 2.0).all()


@pytest.mark.parametrize("target", CPU)
def test_what_is_not_provable_is_still_caught(target, guarded_memory):
    y = guarded_memory[8:16]  # its neighbours, both sides, must stay 0
    with pytest.raises(LaunchError, match="'y'"):
        _build([shifted_down], target)["shifted_down"](8, y, grid=1, block=8)
    with pytest.raises(LaunchError, match="out-of-bounds write to buffer 'y' at index 1[23] "):
        _build([walk], target)["walk"](4, y, grid=1, block=2)
    with pytest.raises(LaunchError, match="'y'"):  # a bound of the true value is no bound of a wrapped one
        _build([wrapped], target)["wrapped"](8, y, grid=1, block=4)
    with pytest.raises(LaunchError, match="write to buffer 'y' at index 5 "):
        _build([stale], target)["stale"](3, y[:3], grid=1, block=1)
    assert not guarded_memory[:8].any() and not guarded_memory[16:].any()


def test_a_divided_argument_keeps_its_correlations():
    """jacobi_wide (benchmarks/tuned_kernels.py) was refused in bounds (h*w == len, a grid past both
    dimensions): ``w // 4`` was a range, ``[(w-3)/4, w/4]``, so ``y*w4 + q - w4`` lost ``q < w4`` and
    the condition needed ``w <= 4``. It is now a symbol of its own, evaluated at launch."""
    k = _build([jacobi_wide], "llvm")["jacobi_wide"]
    for h, w, grid, block in ((37, 68, (1, 10, 1), (64, 4, 1)), (7, 12, (1, 3, 1), (8, 4, 1))):
        a = np.random.default_rng(h).random(h * w, dtype=np.float32)
        dst = np.zeros(h * w, np.float32)
        k(h, w, a, a, dst, grid=grid, block=block)
        np.testing.assert_allclose(dst, _jacobi_reference(h, w, a), rtol=1e-6)
    with pytest.raises(LaunchError, match=r"possible out-of-bounds access to 'src' at tuned_kernels.py:\d+"):
        k(h + 1, w, a, a, dst, grid=(1, 3, 1), block=(8, 4, 1))  # row 7 of a 7-row array


def test_a_guard_on_a_sum_serves_a_defined_local_holding_it():
    """``c + 1 < w`` bounds ``x[i + 1]`` with ``i = r*w + c`` (jacobi_wide's ``srcs[i + 4]`` under
    ``x0 + 4 < w``): the whole last row is in bounds when h*w == len(x) (y's bound, on ``c`` itself,
    takes the grid's width: y has room for it)."""
    k = _build([row_diff], "llvm")["row_diff"]
    x = np.arange(1, 13, dtype=np.float32)
    y = np.zeros(16, np.float32)
    k(3, 4, x, y, grid=(2, 2), block=(4, 2))
    assert y.tolist() == [2, 3, 4, 0, 6, 7, 8, 0, 10, 11, 12, 0, 0, 0, 0, 0]
    with pytest.raises(LaunchError, match="possible out-of-bounds access to 'x'"):
        k(3, 4, x[:11], y, grid=(2, 2), block=(4, 2))

def test_quotient_symbols_are_the_machine_values():
    """``n // 4`` truncates toward zero, ``m >> 2`` rounds down: the launch check evaluates each the way
    the kernel does (a rounding the other way would accept y[-1] or refuse y[0])."""
    k = _build([quotients], "llvm")["quotients"]
    y = np.zeros(4, np.float32)
    k(-3, -3, y, grid=1, block=1)  # -3 // 4 == 0 (truncated), (-3 >> 2) + 1 == 0 (rounded down)
    assert y.tolist() == [2.0, 0, 0, 0]
    k(-3, 11, y, grid=1, block=1)
    assert y.tolist() == [1.0, 0, 0, 2.0]
    for n, m in ((-4, 0), (0, -5), (16, 0), (0, 12)):  # y[-1], y[-1] (truncated: y[0]), y[4], y[4]
        with pytest.raises(LaunchError, match="possible out-of-bounds access to 'y'"):
            k(n, m, y, grid=1, block=1)


def test_a_refusal_names_the_failed_inequality_in_the_kernels_terms():
    k = _build([jacobi_wide], "llvm")["jacobi_wide"]
    a = np.zeros(84, np.float32)
    with pytest.raises(LaunchError) as e:
        k(8, 12, a, a, a, grid=(1, 3, 1), block=(8, 4, 1))
    msg = str(e.value)
    assert "h*(w // 4) <= " in msg and "len(src)" in msg and "block[1]*grid[1]" in msg, msg
    assert "(here " in msg and "bounds_check=True" in msg, msg
    assert not re.search(r"\b[aLbgqr][0-9]", msg), msg  # no internal symbol is left


def test_an_access_that_cannot_run_needs_no_condition():
    y = np.zeros(4, np.float32)
    _build([fill], "llvm")["fill"](-5, y, grid=1, block=64)  # i < -5 never holds: nothing to check
    assert not y.any()


def test_benchmark_kernels_are_proven_and_compile_to_the_raw_code():
    """No guard, no hidden argument: the emitted LLVM IR is the raw build's, byte for byte."""
    for k in (saxpy, matmul, block_sum, jacobi, fill):
        safe, raw = pk.build([k]), pk.build([k], bounds_check=False)
        info = safe.on("llvm").function_info(k.name)
        assert "bounds_check" not in info.attrs and int(info.attrs["bounds_proof"]) > 0, k.name
        assert safe.on("llvm").inspect_source("ll") == raw.on("llvm").inspect_source("ll"), k.name


def test_only_the_unproven_access_is_guarded():
    info = pk.build([scatter]).on("llvm").function_info("scatter")
    assert info.attrs["bounds_check"] == "1" and info.attrs["bounds_accesses"] == "1"  # y[idx[i]] only
    assert info.attrs["bounds_proof"] == "1"  # idx[i]


def test_proven_groups_stay_vector_accesses_beside_a_checked_access():
    mod = pk.build([groups_and_scatter]).on("llvm")
    assert mod.function_info("groups_and_scatter").attrs["bounds_accesses"] == "1"
    ll = mod.inspect_source("ll")
    assert re.search(r"load <4 x float>, ptr %[^,]+, align 16", ll), ll
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    mod["groups_and_scatter"](4, np.array([0, 1, 2, 3], np.int32), x, y, grid=1, block=4)
    assert y[:4].tolist() == [0.5] * 4 and y[4:].tolist() == x[4:].tolist()
    with pytest.raises(LaunchError, match="write to buffer 'y' at index 30 "):
        mod["groups_and_scatter"](4, np.array([0, 1, 2, 30], np.int32), x, y, grid=1, block=4)


def test_opt_out_is_the_raw_kernel(monkeypatch):
    raw = pk.build([fill], bounds_check=False).on("llvm")
    assert not any(a.startswith("bounds") for a in raw.function_info("fill").attrs)
    assert type(raw.get_function("fill")).__name__ == "CPUKernel"
    monkeypatch.setenv("POLYKERN_BOUNDS_CHECK", "0")
    env = pk.build([fill]).on("llvm")
    assert type(env.get_function("fill")).__name__ == "CPUKernel"
    monkeypatch.delenv("POLYKERN_BOUNDS_CHECK")
    assert type(pk.build([fill]).on("llvm").get_function("fill")).__name__ == "ProvenKernel"


def test_gpu_targets_keep_the_raw_default():
    mod = pk.build([fill], targets=["opencl", "llvm"])
    assert "bounds_proof" not in mod.on("opencl").function_info("fill").attrs
    assert "bounds_proof" in mod.on("llvm").function_info("fill").attrs


def test_artifact_keeps_the_conditions(tmp_path):
    path = tmp_path / "fill.kbin"
    pk.build([fill]).export(str(path))
    k = pk.load(str(path))["fill"]
    with pytest.raises(LaunchError, match="out-of-bounds access to 'y'"):
        k(9, np.zeros(8, np.float32), grid=1, block=16)


def test_malformed_condition_is_an_artifact_error():
    mod = pk.build([fill]).on("llvm")
    mod.functions["fill"].attrs["bounds_proof_0"] = "1*x9"
    with pytest.raises(ArtifactError, match="malformed launch-proof attributes"):
        mod.get_function("fill")
    mod.functions["fill"].attrs["bounds_proof_0"] = "1*L7"
    with pytest.raises(ArtifactError, match="launch-proof symbol L7"):
        mod.get_function("fill")


# ---------------------------------------------------------------- libpolykern (kbin-run): the same checks in C


def _kbin_run(native_build, tmp_path, kernel, items, launch):
    import subprocess

    from polykern.runtime import launch_stream as ls

    path = tmp_path / f"{kernel.name}.kbin"
    pk.build([kernel]).export(str(path))
    return subprocess.run([str(native_build / "kbin-run"), str(path), kernel.name], input=ls.encode(items, launch),
                          capture_output=True, timeout=120)


def test_libpolykern_checks_the_launch_conditions(native_build, tmp_path):
    from polykern.runtime import launch_stream as ls

    y = np.zeros(8, np.float32).tobytes()
    bad = _kbin_run(native_build, tmp_path, fill, [(ls.SCALAR, np.int32(16).tobytes()), (ls.WRITE, y)],
                    (1, 1, 1, 16, 1, 1))
    assert bad.returncode == 3 and b"out-of-bounds access to 'y' at test_cpu_safety.py" in bad.stderr, bad.stderr
    assert b"n <= len(y) (here 16 > 8)" in bad.stderr, bad.stderr  # the condition in the kernel's terms
    good = _kbin_run(native_build, tmp_path, fill, [(ls.SCALAR, np.int32(8).tobytes()), (ls.WRITE, y)],
                     (1, 1, 1, 16, 1, 1))
    assert good.returncode == 0, good.stderr
    assert np.frombuffer(ls.split_outputs(good.stdout, [32])[0], np.float32).tolist() == [1.0] * 8


def test_libpolykern_evaluates_quotients_as_the_kernel_does(native_build, tmp_path):
    from polykern.runtime import launch_stream as ls

    def run(n, m):
        items = [(ls.SCALAR, np.int32(n).tobytes()), (ls.SCALAR, np.int32(m).tobytes()),
                 (ls.WRITE, np.zeros(4, np.float32).tobytes())]
        return _kbin_run(native_build, tmp_path, quotients, items, (1, 1, 1, 1, 1, 1))
    good = run(-3, -3)  # -3 // 4 == 0, (-3 >> 2) + 1 == 0
    assert good.returncode == 0, good.stderr
    assert np.frombuffer(ls.split_outputs(good.stdout, [16])[0], np.float32).tolist() == [2.0, 0, 0, 0]
    for n, m, shown in ((-4, 0, b"(n // 4)"), (0, -5, b"(m >> 2)"), (16, 0, b"(n // 4)"), (0, 12, b"(m >> 2)")):
        bad = run(n, m)
        assert bad.returncode == 3 and b"possible out-of-bounds access to 'y'" in bad.stderr, bad.stderr
        assert shown in bad.stderr, bad.stderr

def test_libpolykern_adds_the_hidden_arguments_of_checked_accesses(native_build, tmp_path):
    from polykern.runtime import launch_stream as ls

    idx = np.array([0, 1, 20], np.int32).tobytes()
    items = [(ls.SCALAR, np.int32(3).tobytes()), (ls.READ, idx), (ls.WRITE, np.zeros(8, np.float32).tobytes())]
    bad = _kbin_run(native_build, tmp_path, scatter, items, (1, 1, 1, 4, 1, 1))
    assert bad.returncode == 3 and b"out-of-bounds access (index bits 0x14)" in bad.stderr, bad.stderr
    assert b'"y","write"' in bad.stderr
    items[1] = (ls.READ, np.array([0, 1, 7], np.int32).tobytes())
    good = _kbin_run(native_build, tmp_path, scatter, items, (1, 1, 1, 4, 1, 1))
    assert good.returncode == 0, good.stderr
    assert np.frombuffer(ls.split_outputs(good.stdout, [32])[0], np.float32).tolist() == [1, 1, 0, 0, 0, 0, 0, 1]


def test_opencl_runs_the_raw_kernels_on_a_gpu_and_the_safe_form_on_a_cpu():
    from types import SimpleNamespace

    import pyopencl as cl

    mod = pk.build([scatter], targets=["opencl"]).on("opencl")
    gpu = SimpleNamespace(cl_device=SimpleNamespace(type=cl.device_type.GPU))
    cpu = SimpleNamespace(cl_device=SimpleNamespace(type=cl.device_type.CPU))
    assert "bounds_err" not in mod.source_for(gpu) and "bounds_err" in mod.source_for(cpu)
    assert [a.name for a in mod.info_on(gpu, "scatter").args] == ["n", "idx", "y"]
    safe = mod.info_on(cpu, "scatter")
    assert safe.attrs["bounds_check"] == "1" and [a.name for a in safe.args][3:] == ["bounds_lens", "bounds_err"]
    raw = pk.build([scatter], targets=["opencl"], bounds_check=False).on("opencl")
    assert raw.source_for(cpu) == raw.source_for(gpu) == raw.source


def test_libpolykern_under_qemu_aarch64_checks_a_cross_built_artifact(tmp_path):
    """A cross triple (llvm -mtriple=aarch64-linux-gnu) run by the aarch64 kbin-run under QEMU."""
    import subprocess

    import native_support as emu

    if emu.AARCH64_MISSING:
        pytest.skip("aarch64 emulation needs " + ", ".join(emu.AARCH64_MISSING))
    runner = emu.build_kbin_run_aarch64()
    from polykern.runtime import launch_stream as ls

    path = tmp_path / "fill_a64.kbin"
    pk.build([scatter], targets=[emu.AARCH64_TARGET]).export(str(path))

    def run(idx):
        items = [(ls.SCALAR, np.int32(3).tobytes()), (ls.READ, np.array(idx, np.int32).tobytes()),
                 (ls.WRITE, np.zeros(8, np.float32).tobytes())]
        return subprocess.run([emu.QEMU_AARCH64, "-L", emu.SYSROOT_AARCH64, runner, str(path), "scatter"],
                              input=ls.encode(items, (1, 1, 1, 4, 1, 1)), capture_output=True, timeout=300)
    bad = run([0, 1, 20])
    assert bad.returncode == 3 and b"out-of-bounds access (index bits 0x14)" in bad.stderr, bad.stderr
    good = run([0, 1, 7])
    assert good.returncode == 0, good.stderr
    assert np.frombuffer(ls.split_outputs(good.stdout, [32])[0], np.float32).tolist() == [1, 1, 0, 0, 0, 0, 0, 1]


def test_hexagon_default_build_is_raw():
    """hexagon kernels run in qemu's process, not the caller's: the default build is the raw one (no launch
    conditions, no hidden arguments); bounds_check=True still checks every access."""
    import polykern as pk
    from polykern import Buffer, f32, i32

    @pk.kernel
    def put(n: i32, y: Buffer[f32]):
        i = pk.global_id(0)
        if i < n:
            y[i] = 1.0

    fi = pk.build(put, "hexagon").imports[0].functions["put"]
    assert not any(k.startswith("bounds") for k in fi.attrs), fi.attrs
    fi = pk.build(put, "hexagon", bounds_check=True).imports[0].functions["put"]
    assert fi.attrs.get("bounds_check") == "1"
