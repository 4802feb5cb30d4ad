"""Asynchronous copies into shared memory: ``pk.copy_async``/``pk.copy_commit``/``pk.copy_wait``
(docs/language.md "Asynchronous copies"; polykern/passes/async_copy.py, interpreter/copies.py,
backends/cuda/polykern_cuda/cp_async.py).

A two-stage shared-memory ring on every runtime here against NumPy and the oracle; the oracle's
refusals of every misuse the language leaves undefined; the plain-copy lowering (fused into vector
loads) and checked mode; cp.async in the PTX of cuda and nvptx for sm_80/sm_90, assembled by ptxas,
and plain copies for sm_75; the launch-time alignment check; the language's located errors.
"""
import re

import numpy as np
import pytest

import polykern as pk
from kernel_sources import checked_ptx
from polykern import Buffer, capabilities, f16, f32, f64, i32, i64, u8, u16
from polykern.errors import KernelSyntaxError, KernelTypeError, LaunchError
from polykern.ir import nodes as ir
from polykern.ir.vector import ALIGN_ATTR, lane_of
from polykern.passes.async_copy import lower_async_copies
from polykern.passes.clone import clone_function
from polykern.testing.interp import OracleError, interpret
from runtimes import compile_targets, runnable_targets

TARGETS = runnable_targets()
_FEATURE = {"u8": "i8", "u16": "i16", "i64": "i64", "f64": "f64", "f16": "f16"}
LANES = 32  # work-items per group in these tests


def _ring(T, n):
    """Each group copies ``ntiles`` tiles of LANES * n elements of x, one copy of n elements per
    work-item, through a 2-stage shared ring (the next tile's copy is issued before this tile is
    used), and writes each tile reversed into y: every element is read by another work-item than the
    one that copied it."""
    tile = LANES * n

    @pk.kernel
    def ring(ntiles: i32, x: Buffer[T, "readonly"], y: Buffer[T]):
        buf = pk.shared(T, 2 * tile)
        l = pk.local_id(0)
        base = pk.group_id(0) * ntiles
        pk.copy_async(buf, l, x, base * LANES + l, n)
        pk.copy_commit()
        for t in range(ntiles):
            s = t % 2
            if t + 1 < ntiles:
                pk.copy_async(buf, (1 - s) * LANES + l, x, (base + t + 1) * LANES + l, n)
            pk.copy_commit()  # every iteration, so that copy_wait(1) always leaves exactly the next tile
            pk.copy_wait(1)
            pk.barrier()
            for j in range(n):
                y[(base + t) * tile + l * n + j] = buf[s * tile + tile - 1 - l * n - j]
            pk.barrier()  # before the next iteration's copy overwrites the stage read here

    return ring


def _params(cases):
    out = []
    for target, kind, skips in TARGETS:
        for T, n in cases:
            reason = skips.get(_FEATURE.get(T.name, ""))
            marks = [pytest.mark.skip(reason=f"{target}: {reason}")] if reason else []
            out.append(pytest.param(target, T, n, marks=marks, id=f"{target}-{T.name}x{n}"))
    return out


def _data(T, size, seed=3):
    rng = np.random.default_rng(seed)
    if T.is_float:
        return rng.uniform(-100, 100, size).astype(T.numpy)
    return rng.integers(0, 100, size).astype(T.numpy)


def _want(x, groups, ntiles, tile):
    return x.reshape(groups * ntiles, tile)[:, ::-1].ravel()


CASES = [(f32, 4), (f32, 1), (f16, 8), (i32, 2), (u8, 16), (f64, 2), (u16, 4)]


@pytest.mark.parametrize("target,T,n", _params(CASES))
def test_ring_matches_numpy_and_the_oracle(target, T, n):
    groups, ntiles, tile = 3, 3, LANES * n
    x = _data(T, groups * ntiles * tile)
    y = np.zeros_like(x)
    kern = _ring(T, n)
    pk.build([kern], [target])["ring"](np.int32(ntiles), x, y, grid=groups, block=LANES)
    np.testing.assert_array_equal(y, _want(x, groups, ntiles, tile))
    oracle = interpret(kern, [np.int32(ntiles), x, np.zeros_like(x)], groups, LANES)
    np.testing.assert_array_equal(oracle.buffers["y"], y)


@pytest.mark.parametrize("target", [t for t, _, _ in TARGETS])
def test_checked_mode_copies_and_names_the_source_overrun(target):
    """Checked mode builds the plain copies (every target) and checks each element."""
    n, groups, ntiles = 4, 1, 2
    x = _data(f32, groups * ntiles * LANES * n)
    y = np.zeros_like(x)
    mod = pk.build([_ring(f32, n)], [target], bounds_check=True)
    mod["ring"](np.int32(ntiles), x, y, grid=groups, block=LANES)
    np.testing.assert_array_equal(y, _want(x, groups, ntiles, LANES * n))
    with pytest.raises(LaunchError, match=r"buffer 'x' at index 256"):
        mod["ring"](np.int32(ntiles + 1), x, np.zeros(3 * LANES * n, np.float32), grid=groups, block=LANES)


@pytest.mark.parametrize("target", [t for t, _, _ in TARGETS])
def test_misaligned_source_is_refused_at_launch(target):
    """A copy of 16 bytes needs its buffer 16-byte aligned, as pk.vload does (aligned_launch.py)."""
    x = np.zeros(2 * LANES * 4 + 1, np.float32)
    k = pk.build([_ring(f32, 4)], [target])["ring"]
    with pytest.raises(LaunchError, match="'x'.*16"):
        k(np.int32(2), x[1:], np.zeros(2 * LANES * 4, np.float32), grid=1, block=LANES)


def test_alignment_is_recorded_for_the_source():
    assert _ring(f16, 8).ir.attrs[ALIGN_ATTR] == "x=16"
    assert _ring(u8, 4 * 2).ir.attrs[ALIGN_ATTR] == "x=8"
    assert _ring(f32, 1).ir.attrs[ALIGN_ATTR] == "x=4"


# ------------------------------------------------------------------ the plain-copy lowering


def test_lowering_leaves_plain_copies_in_vector_groups():
    fn = lower_async_copies(clone_function(_ring(f16, 8).ir))
    stmts = list(ir.walk_stmts(fn.body))
    assert not any(isinstance(s, ir.ASYNC_COPY_STMTS) for s in stmts)
    lanes = [lane_of(s) for s in stmts if lane_of(s) is not None]
    # 2 copies x 8 elements: per copy two load groups of 4 and two store groups of 4
    assert len(lanes) == 32 and {la.n for la in lanes} == {4} and len({la.group for la in lanes}) == 8


def test_cpu_fuses_the_copy_loads():
    ll = pk.build([_ring(f32, 4)], ["llvm"]).on("llvm").inspect_source("ll")
    assert re.search(r"load <4 x float>, ptr %[^,]+, align 16", ll)


# ------------------------------------------------------------------ what the oracle refuses


def _oracle(kernel, n=4, block=LANES):
    x = _data(f32, 2 * LANES * n)
    return interpret(kernel, [x, np.zeros_like(x)], 1, block)


@pk.kernel
def _read_before_wait(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 128)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, l, 4)
    pk.copy_commit()
    y[l] = t[l * 4]
    pk.copy_wait(0)


@pk.kernel
def _barrier_without_wait(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 128)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, l, 4)
    pk.copy_commit()
    pk.barrier()
    y[l] = t[127 - l]


@pk.kernel
def _wait_without_barrier(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 128)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, l, 4)
    pk.copy_commit()
    pk.copy_wait(0)
    pk.barrier()
    pk.copy_async(t, l, x, 31 - l, 4)
    pk.copy_commit()
    pk.copy_wait(0)
    y[l] = t[(l + 31) % 32 * 4]  # copied by another work-item: needs a barrier after its wait


@pk.kernel
def _uncommitted(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 128)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, l, 4)
    pk.copy_wait(0)  # waits for committed groups only
    y[l] = t[l * 4]


@pk.kernel
def _wait_leaves_the_newest(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 128)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, l, 2)
    pk.copy_commit()
    pk.copy_async(t, l + 32, x, l + 32, 2)
    pk.copy_commit()
    pk.copy_wait(1)
    y[l] = t[l * 2]  # the first group is complete
    y[l + 32] = t[64 + l * 2]  # the second may not be


@pk.kernel
def _source_written(x: Buffer[f32], y: Buffer[f32]):
    t = pk.shared(f32, 128)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, l, 4)
    pk.copy_commit()
    x[l * 4 + 3] = 0.0
    pk.copy_wait(0)


@pk.kernel
def _destination_written(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 128)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, l, 4)
    pk.copy_commit()
    t[l * 4 + 1] = 1.0
    pk.copy_wait(0)


@pk.kernel
def _copy_over_a_read(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 128)
    l = pk.local_id(0)
    t[l] = x[l]
    pk.barrier()
    y[l] = t[31 - l]
    pk.copy_async(t, l, x, l, 4)  # overwrites what another work-item read in this interval
    pk.copy_commit()
    pk.copy_wait(0)


@pytest.mark.parametrize("kernel,match", [
    (_read_before_wait, r"t\[0\] read by work-item 0 while an asynchronous copy into it is pending \(pk.copy_async "
                        r"by work-item 0 at .*test_async_copy.py:\d+"),
    (_barrier_without_wait, r"t\[127\] read by work-item 0 while an asynchronous copy into it is pending .* by "
                            r"work-item 31"),
    (_wait_without_barrier, r"data race on t\[0\]: read by work-item 1 after a write by another"),
    (_uncommitted, r"t\[0\] read by work-item 0 while an asynchronous copy into it is pending"),
    (_wait_leaves_the_newest, r"t\[64\] read by work-item 0 while an asynchronous copy"),
    (_source_written, r"x\[3\] written by work-item 0 while an asynchronous copy from it is pending"),
    (_destination_written, r"t\[1\] written by work-item 0 while an asynchronous copy into it is pending"),
    (_copy_over_a_read, r"data race on t\[\d+\]: written by work-item \d+ after another work-item read it"),
], ids=lambda v: getattr(v, "name", "")[1:] if hasattr(v, "name") else "")
def test_oracle_refuses_misuse(kernel, match):
    with pytest.raises(OracleError, match=match):
        _oracle(kernel)


def test_oracle_accepts_the_retired_group():
    @pk.kernel
    def older_group(x: Buffer[f32, "readonly"], y: Buffer[f32]):
        t = pk.shared(f32, 128)
        l = pk.local_id(0)
        pk.copy_async(t, l, x, l, 2)
        pk.copy_commit()
        pk.copy_async(t, l + 32, x, l + 32, 2)
        pk.copy_commit()
        pk.copy_wait(1)
        y[l] = t[l * 2 + 1]
        pk.copy_wait(0)
        y[l + 32] = t[64 + l * 2 + 1]

    x = _data(f32, 2 * LANES * 4)
    out = interpret(older_group, [x, np.zeros_like(x)], 1, LANES).buffers["y"]
    np.testing.assert_array_equal(out[:64], x[1:128:2])


# ------------------------------------------------------------------ cuda and nvptx


_ptx = checked_ptx  # kernel_sources.checked_ptx


@pk.kernel
def _sizes(x: Buffer[f16, "readonly"], z: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f16, 256)
    u = pk.shared(f32, 128)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, pk.group_id(0) * 32 + l, 8)
    pk.copy_async(u, l, z, i64(l), 2)
    pk.copy_commit()
    pk.copy_async(u, l + 64, z, l + 64, 1)
    pk.copy_commit()
    pk.copy_wait(1)
    pk.copy_wait(0)
    pk.barrier()
    y[l] = f32(t[255 - l]) + u[l] + u[l + 64]


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", "cuda -arch=sm_90", "nvptx -arch=sm_80",
                                    "nvptx -arch=sm_90"])
def test_cp_async_in_the_ptx(target):
    ptx = _ptx(_sizes, target)
    assert re.search(r"cp\.async\.cg\.shared\.global \[[^\]]+\], \[[^\]]+\], 16;", ptx)
    assert re.search(r"cp\.async\.ca\.shared\.global \[[^\]]+\], \[[^\]]+\], 8;", ptx)
    assert re.search(r"cp\.async\.ca\.shared\.global \[[^\]]+\], \[[^\]]+\], 4;", ptx)
    assert ptx.count("cp.async.commit_group;") == 2
    assert "cp.async.wait_group 1;" in ptx and "cp.async.wait_group 0;" in ptx


@pytest.mark.parametrize("target", ["cuda -arch=sm_75", "nvptx -arch=sm_75"])
def test_before_sm80_the_copies_are_plain(target):
    ptx = _ptx(_sizes, target)
    assert "cp.async" not in ptx and "ld.global" in ptx and "st.shared" in ptx


def test_cuda_checked_mode_has_no_cp_async():
    from polykern_cuda import toolchain

    if toolchain.available_compiler() is None:
        pytest.skip("neither NVRTC nor nvcc is installed here")
    src = pk.build([_sizes], ["cuda -arch=sm_90"], bounds_check=True).on("cuda").inspect_source("cuda")
    assert "cp.async" not in src


# ------------------------------------------------------------------ errors


def _error(kernel, exc=KernelTypeError):
    with pytest.raises(exc) as e:
        kernel.ir
    assert e.value.loc is not None and e.value.loc.line > 0
    return str(e.value)


def test_errors_are_located():
    @pk.kernel
    def into_buffer(x: Buffer[f32, "readonly"], y: Buffer[f32]):
        pk.copy_async(y, 0, x, 0, 4)

    assert "copies into a pk.shared (or pk.shared_dynamic) array; 'y' is a Buffer" in _error(into_buffer)

    @pk.kernel
    def into_local(x: Buffer[f32, "readonly"]):
        t = pk.local(f32, 8)
        pk.copy_async(t, 0, x, 0, 4)

    assert "'t' is a pk.local array" in _error(into_local)

    @pk.kernel
    def from_shared(y: Buffer[f32]):
        s = pk.shared(f32, 8)
        t = pk.shared(f32, 8)
        pk.copy_async(t, 0, s, 0, 4)

    assert "copies from a Buffer parameter; 's' is a pk.shared array" in _error(from_shared)

    @pk.kernel
    def converting(x: Buffer[f16, "readonly"]):
        t = pk.shared(f32, 8)
        pk.copy_async(t, 0, x, 0, 4)

    assert "'x' holds f16 but 't' holds f32" in _error(converting)

    @pk.kernel
    def three(x: Buffer[f32, "readonly"]):
        t = pk.shared(f32, 8)
        pk.copy_async(t, 0, x, 0, 3)

    assert "a count of 1 or 2 or 4 f32 elements, got 3" in _error(three)

    @pk.kernel
    def too_wide(x: Buffer[f16, "readonly"]):
        t = pk.shared(f16, 32)
        pk.copy_async(t, 0, x, 0, 16)

    assert "a count of 2 or 4 or 8 f16 elements, got 16" in _error(too_wide)

    @pk.kernel
    def run_time_count(x: Buffer[f32, "readonly"], n: i32):
        t = pk.shared(f32, 8)
        pk.copy_async(t, 0, x, 0, n)

    _error(run_time_count)

    @pk.kernel
    def negative_wait(x: Buffer[f32, "readonly"]):
        pk.copy_wait(-1)

    assert "count of groups >= 0, got -1" in _error(negative_wait)

    @pk.kernel
    def float_index(x: Buffer[f32, "readonly"]):
        t = pk.shared(f32, 8)
        pk.copy_async(t, 0.5, x, 0, 4)

    assert "index must be an integer" in _error(float_index)

    @pk.kernel
    def in_expression(x: Buffer[f32]):
        x[0] = pk.copy_wait(0)

    assert "pk.copy_wait() is a statement of its own" in _error(in_expression, KernelSyntaxError)

    @pk.kernel
    def commit_args(x: Buffer[f32]):
        pk.copy_commit(1)

    assert "pk.copy_commit() takes no arguments" in _error(commit_args)


# one target per kind that does not compile pk.copy_async itself (Capabilities.async_copy: all but cuda/nvptx)
PLAIN_COPIES = [t for t in compile_targets() if capabilities.of(t.split()[0]).async_copy is None]


def test_only_the_cuda_kinds_copy_asynchronously():
    assert {t.split()[0] for t in compile_targets()} - {t.split()[0] for t in PLAIN_COPIES} == {"cuda", "nvptx"}


@pytest.mark.parametrize("target", PLAIN_COPIES)
def test_every_other_backend_compiles_plain_copies(target, monkeypatch):
    """The kernel that uses cp.async on sm_80+ compiles everywhere else, as plain copies."""
    if target.startswith("rocm"):
        from polykern.testing.tier_skip import skip_if_absent

        skip_if_absent("ld.lld")  # the hsaco is linked (the GPU machine has no ld.lld)
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")  # compile only (no runtime needed)
    root = pk.build([_ring(f16, 8)], [target])
    (dev,) = root.device_modules()
    assert dev.source_formats()
    for fmt in dev.source_formats():
        src = dev.inspect_source(fmt)
        assert "copy_async" not in src and "cp.async" not in src


@pk.kernel
def _into_dynamic(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared_dynamic(f32)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, pk.group_id(0) * LANES + l, 4)
    pk.copy_commit()
    pk.copy_wait(0)
    pk.barrier()
    for j in range(4):
        y[pk.group_id(0) * LANES * 4 + l * 4 + j] = t[LANES * 4 - 1 - l * 4 - j]


@pytest.mark.parametrize("target", [t for t, _, _ in TARGETS])
def test_copy_into_dynamic_shared_memory(target):
    x = _data(f32, 2 * LANES * 4)
    y = np.zeros_like(x)
    pk.build([_into_dynamic], [target])["_into_dynamic"](x, y, grid=2, block=LANES, shared_size=LANES * 4)
    np.testing.assert_array_equal(y, x.reshape(2, -1)[:, ::-1].ravel())


@pytest.mark.parametrize("target", ["cuda -arch=sm_90", "nvptx -arch=sm_90"])
def test_cp_async_into_dynamic_shared_memory(target):
    assert re.search(r"cp\.async\.cg\.shared\.global", _ptx(_into_dynamic, target))
