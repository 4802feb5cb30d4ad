"""Edge cases of pk.copy_async found red-teaming the feature (docs/language.md "Asynchronous copies")."""
import re

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, i32
from polykern.errors import LaunchError
from polykern.testing.interp import OracleError, interpret


@pk.kernel
def frag_of_pending(x: Buffer[f16, "readonly"], y: Buffer[f32]):
    t = pk.shared(f16, 256)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, l, 8)
    pk.copy_commit()
    a = pk.frag_a(f16, 16, 16, 16)
    b = pk.frag_b(f16, 16, 16, 16)
    c = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_fill(c, 0.0)
    pk.frag_load(a, t, 0, 16)  # the copies are still pending
    pk.frag_load(b, x, 0, 16)
    c = pk.mma(a, b, c)
    pk.copy_wait(0)
    pk.frag_store(y, 0, 16, c)


def test_frag_load_of_a_pending_copy_names_the_copy():
    """The oracle refused it as a read of memory 'no work-item has written', hiding the cause."""
    with pytest.raises(OracleError, match=r"t\[0\] read by frag_load of the subgroup of work-item 0 while an "
                                          r"asynchronous copy into it is pending \(pk.copy_async by work-item 0"):
        interpret(frag_of_pending, [np.ones(256, np.float16), np.zeros(256, np.float32)], grid=1, block=32)


@pk.kernel
def copy16(x: Buffer[f16, "readonly"], y: Buffer[f16]):
    t = pk.shared(f16, 8)
    pk.copy_async(t, 0, x, 0, 8)
    pk.copy_commit()
    pk.copy_wait(0)
    y[0] = t[7]


def test_a_misaligned_copy_source_names_the_copy():
    """The launch error said the kernel's 'pk.vload/pk.vstore accesses' need the alignment (it has none)."""
    from polykern.errors import LaunchError

    x = np.arange(16, dtype=np.float16)
    with pytest.raises(LaunchError, match=r"argument 0 \('x'\) .* not aligned to 16 bytes; its wide accesses "
                                          r"\(pk.vload/pk.vstore, pk.copy_async\) need that alignment"):
        pk.build([copy16], ["llvm"])["copy16"](x[1:9], np.zeros(1, np.float16), grid=1, block=1)



@pk.kernel
def far(k: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 4)
    pk.copy_async(t, 0, x, k, 4)
    pk.copy_commit()
    pk.copy_wait(0)
    a, b = pk.vload(x, k, 2)
    y[0] = t[1] + b


@pk.func
def _second_of_group(x: Buffer[f32, "readonly"], k: i32) -> f32:
    a, b, c, d = pk.vload(x, k, 4)
    return b


@pk.kernel
def far_vload(k: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    y[0] = _second_of_group(x, k)


def test_a_group_index_past_the_index_type_is_refused_by_the_oracle():
    """4 * k for k = 2^30 does not fit i32 (docs/language.md: n*k + n-1 must fit the index's type). The
    oracle refused pk.copy_async (as out of bounds) but ran pk.vload, wrapping to x[0..3], while an
    unchecked llvm build fuses the group into a vector access 16 GiB past x (a segfault): the oracle
    accepted a program whose backends may crash. Checked builds wrapped to x[0..3], inside the array, and
    reported nothing: they now report the group (tests/test_bounds_check_groups.py)."""
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(OracleError, match=r"index 4294967296 is out of bounds of 'x'"):
        interpret(far, [np.int32(2 ** 30), x, np.zeros(1, np.float32)], grid=1, block=1)
    with pytest.raises(OracleError, match=r"test_async_copy_edges.py:\d+:\d+: pk.vload/pk.vstore of 4 elements at "
                                          r"group index 1073741824: elements 4294967296 .. 4294967299 do not fit its "
                                          r"index type i32"):
        interpret(far_vload, [np.int32(2 ** 30), x, np.zeros(1, np.float32)], grid=1, block=1)
    assert interpret(far_vload, [np.int32(1), x, np.zeros(1, np.float32)], grid=1, block=1).buffers["y"][0] == 5.0
    y = np.zeros(1, np.float32)
    with pytest.raises(LaunchError, match=r"group index 1073741824 of a 4-element group: its elements 4294967296 "
                                             r"\.\. 4294967299 do not fit the index type i32 \(length 8\)"):
        pk.build([far_vload], ["llvm"], bounds_check=True)["far_vload"](np.int32(2 ** 30), x, y, grid=1, block=1)
    assert y[0] == 0.0


@pk.kernel
def huge_wait(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 64)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, l, 2)
    pk.copy_commit()
    pk.copy_wait(2 ** 40)      # more than are committed: retires nothing
    pk.copy_wait(2 ** 31 - 1)
    pk.copy_wait(0)
    pk.barrier()
    y[l] = t[63 - 2 * l]


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", "nvptx -arch=sm_90"])
def test_a_huge_copy_wait_count_is_clamped_in_the_ptx(target):
    """pk.copy_wait(2**40) reached the PTX as 'cp.async.wait_group 1099511627776': the count is emitted as
    at most 2^31 - 1 (the operand's i32; waiting for more groups than asked keeps the promise)."""
    from kernel_sources import checked_ptx

    ptx = checked_ptx(huge_wait, target)
    counts = [int(c) for c in re.findall(r"cp\.async\.wait_group (\d+);", ptx)]
    assert sorted(counts) == [0, 2 ** 31 - 1, 2 ** 31 - 1]


def test_a_huge_copy_wait_count_runs_everywhere():
    x = np.arange(64, dtype=np.float32)
    want = x[63 - 2 * np.arange(32)]
    assert np.array_equal(interpret(huge_wait, [x, np.zeros(32, np.float32)], grid=1, block=32).buffers["y"], want)
    for target in ("llvm", "opencl"):
        y = np.zeros(32, np.float32)
        pk.build([huge_wait], [target])["huge_wait"](x, y, grid=1, block=32)
        assert np.array_equal(y, want), target
