"""Launches on the IR interpreter (docs/language.md "Debugging"): ``targets=["interpret"]``,
``mod.on("interpret")`` and ``POLYKERN_INTERPRET=1``, through the normal launch API, writing results
into the caller's arrays as the CPU runtime does; races and reads of uninitialized shared memory raised
as named errors at the kernel line, naming the work-items."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32, u32
from polykern.errors import (DataRaceError, InterpretError, LaunchError, PolykernError, TargetError,
                             UninitializedReadError)
from polykern.interpret import INTERPRET_ENV
from polykern.testing.c_corpus import saxpy


@pk.kernel
def reverse_in_groups(o: Buffer[i32], src: Buffer[i32, "readonly"]):
    t = pk.shared(i32, 8)
    i = pk.local_id(0)
    g = pk.global_id(0)
    t[i] = src[g] * 3
    pk.barrier()
    o[g] = t[7 - i]


@pk.kernel
def racy(o: Buffer[i32]):
    t = pk.shared(i32, 1)
    t[0] = pk.local_id(0)
    pk.barrier()
    o[pk.global_id(0)] = t[0]


@pk.kernel
def missing_write(o: Buffer[f32]):
    t = pk.shared(f32, 8)
    i = pk.local_id(0)
    if i != 2:
        t[i] = 1.0
    pk.barrier()
    o[i] = t[(i + 1) % 8]


def _saxpy_args(n=37):
    x = np.linspace(-3, 3, n).astype(np.float32)
    y = np.linspace(5, -1, n).astype(np.float32)
    return n, np.float32(1.5), x, y


def test_environment_variable_sends_every_launch_to_the_interpreter(monkeypatch):
    n, a, x, y = _saxpy_args()
    expect = y.copy()
    pk.build([saxpy], targets=["llvm"])["saxpy"](n, a, x, expect, grid=3, block=16)
    monkeypatch.setenv(INTERPRET_ENV, "1")
    mod = pk.build([saxpy], targets=["llvm", "cuda -arch=sm_80"])
    assert [m.kind for m in mod.device_modules()] == ["interpret"] and mod.targets == ["interpret"]
    mod["saxpy"](n, a, x, y, grid=3, block=16)
    np.testing.assert_array_equal(y, expect)  # a*x+y is exact in f32 either way: one rounding each
    with pytest.raises(TargetError):  # the given targets are still parsed
        pk.build([saxpy], targets=["llvmm"])
    monkeypatch.setenv(INTERPRET_ENV, "0")
    assert [m.kind for m in pk.build([saxpy], targets=["llvm"]).device_modules()] == ["llvm"]


def test_explicit_target_and_on_run_the_interpreter_beside_a_real_target():
    src = np.arange(16, dtype=np.int32)
    mod = pk.build([reverse_in_groups], targets=["llvm", "interpret"])
    assert mod["reverse_in_groups"].module.kind == "llvm"  # the first runnable module, as always
    cpu, interpreted = np.zeros(16, np.int32), np.zeros(16, np.int32)
    mod["reverse_in_groups"](cpu, src, grid=2, block=8)
    mod.on("interpret")["reverse_in_groups"](interpreted, src, grid=2, block=8)
    np.testing.assert_array_equal(interpreted, cpu)
    assert list(interpreted[:8]) == [21, 18, 15, 12, 9, 6, 3, 0]
    assert "shared t: i32[8]" in mod.on("interpret").inspect_source("ir")


def test_only_written_elements_are_copied_back_bit_for_bit():
    @pk.kernel
    def evens(o: Buffer[f32]):
        i = pk.global_id(0)
        if i % 2 == 0:
            o[i] = f32(i)

    bits = np.array([0, 0x7FA00001, 0, 0xFFC12345, 0, 0x80000000], np.uint32)  # NaN payloads, -0.0
    o = bits.view(np.float32).copy()
    pk.build([evens], targets=["interpret"])["evens"](o, grid=1, block=6)
    got = o.view(np.uint32)
    assert list(got[1::2]) == [0x7FA00001, 0xFFC12345, 0x80000000]
    assert list(o[0::2]) == [0.0, 2.0, 4.0]


def test_a_data_race_names_the_line_and_both_work_items():
    mod = pk.build([racy], targets=["interpret"])
    o = np.full(8, -7, np.int32)
    with pytest.raises(DataRaceError) as ei:
        mod["racy"](o, grid=2, block=4)
    e = ei.value
    assert isinstance(e, InterpretError) and e.loc.line == racy.pyfunc.__code__.co_firstlineno + 3
    assert "data race on t[0]: written by work-item 1 after a write by another work-item" in str(e)
    assert "work-item 1: global_id (1, 0, 0), group_id (0, 0, 0), local_id (1, 0, 0)" in str(e)
    assert "work-item 0: global_id (0, 0, 0)" in str(e)
    assert "t[0] = pk.local_id(0)" in str(e)  # the source line, with a caret under it
    assert list(o) == [-7] * 8  # nothing copied back from a refused launch


def test_a_read_of_unwritten_shared_memory_names_the_line_and_the_work_item():
    mod = pk.build([missing_write], targets=["interpret"])
    with pytest.raises(UninitializedReadError) as ei:
        mod["missing_write"](np.zeros(16, np.float32), grid=2, block=8)
    msg = str(ei.value)
    assert "read of t[2], which no work-item has written (shared memory starts uninitialized)" in msg
    assert "work-item 1: global_id (1, 0, 0), group_id (0, 0, 0), local_id (1, 0, 0)" in msg
    assert ei.value.loc.line == missing_write.pyfunc.__code__.co_firstlineno + 7


def test_out_of_bounds_is_an_interpret_error_and_checked_mode_still_reports_its_own():
    @pk.kernel
    def past_end(o: Buffer[i32], k: i32):
        o[k] = 1

    o = np.zeros(4, np.int32)
    with pytest.raises(InterpretError, match=r"index 4 is out of bounds of 'o' \(4 elements\)"):
        pk.build([past_end], targets=["interpret"])["past_end"](o, 4, grid=1, block=1)
    with pytest.raises(LaunchError, match=r"past_end.*'o'"):
        pk.build([past_end], targets=["interpret"], bounds_check=True)["past_end"](o, 4, grid=1, block=1)
    assert list(o) == [0, 0, 0, 0]


def test_launches_are_validated_like_any_runtime():
    mod = pk.build([saxpy], targets=["interpret"])
    n, a, x, y = _saxpy_args(8)
    with pytest.raises(LaunchError, match="float32"):
        mod["saxpy"](n, a, x.astype(np.float64), y, grid=1, block=8)
    y.flags.writeable = False
    with pytest.raises(LaunchError, match="read-only"):
        mod["saxpy"](n, a, x, y, grid=1, block=8)
    with pytest.raises(LaunchError, match="grid"):
        mod["saxpy"](n, a, x, x.copy(), block=8)
    z = np.zeros(8, np.float32)
    with pytest.raises(LaunchError, match="same host memory"):  # no aliasing on copies of the arguments
        mod["saxpy"](n, a, z, z, grid=1, block=8)


def test_what_the_oracle_refuses_to_judge_still_runs():
    @pk.kernel
    def branchy(x: Buffer[f32, "readonly"], o: Buffer[i32]):
        i = pk.global_id(0)
        if pk.sqrt(x[i]) > 1.5:
            o[i] = 1

    o = np.zeros(4, np.int32)
    pk.build([branchy], targets=["interpret"])["branchy"](np.array([1, 4, 2, 9], np.float32), o, grid=1, block=4)
    assert list(o) == [0, 1, 0, 1]


def test_dynamic_shared_memory_and_unsigned_results():
    @pk.kernel
    def dyn(o: Buffer[u32]):
        t = pk.shared_dynamic(u32)
        i = pk.local_id(0)
        t[i] = u32(i) * u32(4000000000)
        pk.barrier()
        o[i] = t[i]

    o = np.zeros(4, np.uint32)
    pk.build([dyn], targets=["interpret"])["dyn"](o, grid=1, block=4, shared_size=4)
    assert list(o) == [(i * 4000000000) % 2**32 for i in range(4)]


def test_an_interpret_module_is_not_exported():
    mod = pk.build([saxpy], targets=["llvm", "interpret"])
    with pytest.raises(PolykernError, match="'interpret' module cannot be exported"):
        mod.export()
    pk.build([saxpy], targets=["llvm"]).export()  # the same kernels, a real target: exported
