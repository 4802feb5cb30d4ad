"""Checked mode reports a pk.vload/pk.vstore/pk.copy_async group whose elements ``n*k .. n*k + n-1`` do
not fit the type of its group index ``k`` (docs/language.md "Wide access", 7.4). The checked lanes used
to wrap: ``pk.vload(x, k, 4)`` at ``k = 2**30`` (i32) read x[0..3], inside the array, and reported
nothing, while the oracle refuses the program and an unchecked llvm build faults. Now the group is
checked (``passes/bounds_check.py`` fit_guard) before its elements, on every runtime here and in the
checked CUDA code (compile-only here), and the message names the group index and its elements."""
import re

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, i8, i32, i64, u32
from polykern.errors import LaunchError
from polykern.testing.interp import OracleError, interpret
from runtimes import runnable_targets

TARGETS = [pytest.param(t, id=t.split()[0]) for t, k, _ in runnable_targets()
           if k in ("llvm", "opencl", "vulkan", "webgpu", "cuda")]  # cuda: on a GPU machine


@pk.kernel
def vl(k: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    a, b, c, d = pk.vload(x, k, 4)
    y[0] = a + b + c + d


@pk.kernel
def vs(k: i32, y: Buffer[f32]):
    pk.vstore(y, k, (1.0, 2.0))


@pk.kernel
def vl_shared(k: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 16)
    l = pk.local_id(0)
    t[l] = x[l]
    pk.barrier()
    if l == 0:
        a, b, c, d = pk.vload(t, k, 4)
        y[0] = a + b + c + d


@pk.kernel
def cp_src(k: i32, x: Buffer[f16, "readonly"], y: Buffer[f16]):
    t = pk.shared(f16, 8)
    pk.copy_async(t, 0, x, k, 8)   # 16 bytes: two chunks of 4 lanes, whose own indices would wrap too
    pk.copy_commit()
    pk.copy_wait(0)
    y[0] = t[3]


@pk.kernel
def cp_dst(k: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 4)
    pk.copy_async(t, k, x, 0, 4)
    pk.copy_commit()
    pk.copy_wait(0)
    y[0] = x[0]


def _msg(name, what, k, n, t, length):
    return (rf"kernel '{name}': out-of-bounds {what} at group index {k} of a {n}-element group: its elements "
            rf"{n * k} \.\. {n * k + n - 1} do not fit the index type {t} \(length {length}\), at "
            rf"test_bounds_check_groups\.py:\d+:\d+: ")


CASES = [  # kernel, arguments, message
    (vl, lambda: [np.int32(2 ** 30), np.arange(8, dtype=np.float32), np.zeros(1, np.float32)],
     _msg("vl", "read of buffer 'x'", 2 ** 30, 4, "i32", 8)),
    (vl, lambda: [np.int32(-(2 ** 30)), np.arange(8, dtype=np.float32), np.zeros(1, np.float32)],
     _msg("vl", "read of buffer 'x'", -(2 ** 30), 4, "i32", 8)),
    (vs, lambda: [np.int32(2 ** 31 - 1), np.zeros(4, np.float32)],  # 2k wraps to -2: its lanes to -2, -1
     _msg("vs", "write to buffer 'y'", 2 ** 31 - 1, 2, "i32", 4)),
    (vs, lambda: [np.int32(2 ** 31 - 2 ** 30), np.zeros(4, np.float32)],  # 2k wraps to -2^31
     _msg("vs", "write to buffer 'y'", 2 ** 31 - 2 ** 30, 2, "i32", 4)),
    (vl_shared, lambda: [np.int32(2 ** 30), np.arange(16, dtype=np.float32), np.zeros(1, np.float32)],
     _msg("vl_shared", "read of array 't'", 2 ** 30, 4, "i32", 16)),
    (cp_src, lambda: [np.int32(2 ** 29), np.arange(16, dtype=np.float16), np.zeros(1, np.float16)],
     _msg("cp_src", "read of buffer 'x'", 2 ** 29, 8, "i32", 16)),
    (cp_dst, lambda: [np.int32(2 ** 30), np.arange(4, dtype=np.float32), np.zeros(1, np.float32)],
     _msg("cp_dst", "write to array 't'", 2 ** 30, 4, "i32", 4)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kernel,args,msg", CASES, ids=[f"{c[0].name}{i}" for i, c in enumerate(CASES)])
def test_a_group_past_its_index_type_is_reported(target, kernel, args, msg):
    a = args()
    with pytest.raises(OracleError, match="do not fit its index type|out of bounds"):
        interpret(kernel, args(), grid=1, block=16 if kernel is vl_shared else 1)
    if target.startswith("webgpu") and kernel in (cp_src,):
        pytest.skip("WebGPU has no f16 buffers here")
    before = [x.copy() for x in a]
    with pytest.raises(LaunchError, match=msg):
        pk.build([kernel], [target], bounds_check=True)[kernel.name](*a, grid=1, block=16 if kernel is vl_shared else 1)
    if kernel is vs:  # the group's lanes were skipped: nothing was written (they wrapped to y[2], y[3]
        np.testing.assert_array_equal(a[1], before[1])  # or y[0], y[1] before)


@pk.kernel
def vl8(k: i8, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    a, b = pk.vload(x, k, 2)
    y[0] = a + b


@pk.kernel
def vl_u32(k: u32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    a, b, c, d = pk.vload(x, k, 4)
    y[0] = a + b + c + d


@pytest.mark.parametrize("target", TARGETS)
def test_the_last_group_that_fits_is_checked_as_elements(target):
    """An i8 group index: k = 63 covers 126..127 (fits; in bounds of 256 elements), k = 64 covers 128..129
    (in bounds of the buffer, but past i8: reported as the group), k = -64 covers -128..-127 (fits; an
    element out of bounds, reported as the element). u32: the largest group that fits is an element
    overrun, one past it a group error."""
    if target.startswith("webgpu"):
        pytest.skip("WGSL has no 8-bit integers")
    x = np.arange(256, dtype=np.float32)
    m = pk.build([vl8, vl_u32], [target], bounds_check=True)
    y = np.zeros(1, np.float32)
    m["vl8"](np.int8(63), x, y, grid=1, block=1)
    assert y[0] == 126 + 127
    with pytest.raises(LaunchError, match=_msg("vl8", "read of buffer 'x'", 64, 2, "i8", 256)):
        m["vl8"](np.int8(64), x, y, grid=1, block=1)
    with pytest.raises(LaunchError, match=r"read of buffer 'x' at index -128 \(length 256\)"):
        m["vl8"](np.int8(-64), x, y, grid=1, block=1)
    last = (2 ** 32 - 4) // 4
    with pytest.raises(LaunchError, match=rf"read of buffer 'x' at index {4 * last} \(length 256\)"):
        m["vl_u32"](np.uint32(last), x, y, grid=1, block=1)
    with pytest.raises(LaunchError, match=_msg("vl_u32", "read of buffer 'x'", last + 1, 4, "u32", 256)):
        m["vl_u32"](np.uint32(last + 1), x, y, grid=1, block=1)


@pytest.mark.parametrize("target", TARGETS)
def test_in_bounds_groups_still_agree_with_unchecked_builds(target):
    x = np.arange(16, dtype=np.float32)
    for k in (0, 1, 3):
        got = []
        for checked in (False, True):
            y = np.zeros(1, np.float32)
            pk.build([vl], [target], bounds_check=checked)["vl"](np.int32(k), x, y, grid=1, block=1)
            got.append(y[0])
        assert got[0] == got[1] == sum(range(4 * k, 4 * k + 4))


def test_checked_cuda_code_has_the_group_checks():
    """The checked CUDA C and NVPTX code (compile-only here) carry the same guard: k's bounds for n = 4
    in i32 are -536870912 .. 536870911, for the 8-element copy -268435456 .. 268435455 (LLVM folds each
    pair into one unsigned compare of k + 536870912 or k + 268435456)."""
    from polykern.passes.bounds_check import decode_accesses
    from polykern_cuda import toolchain

    bounds = {"cuda": (536870911, -536870912, 268435455, -268435456), "llvm": (536870912, 268435456)}
    for target, fmt in (("cuda -arch=sm_90", "cuda"), ("nvptx -arch=sm_90", "llvm")):
        if target.startswith("cuda") and toolchain.available_compiler() is None:
            continue
        dev = pk.build([vl, cp_src], [target], bounds_check=True).on("cuda")
        for name, n in (("vl", 4), ("cp_src", 8)):
            assert n in {a.group for a in decode_accesses(dev.functions[name].attrs)}, (target, name)
        src = dev.inspect_source(fmt)
        for bound in bounds[fmt]:
            assert re.search(rf"(?<![0-9]){bound}\b", src), (target, bound)
        ptx = dev.inspect_source("ptx")
        assert "cp.async" not in ptx
        if toolchain.find_ptxas() is not None:
            toolchain.ptxas_check(ptx.encode(), "sm_90")


def test_a_constant_group_index_is_checked_at_build_time_only_when_needed():
    """A constant group index that fits needs no guard; one that does not fit is reported at run time."""
    from polykern.passes.bounds_check import bounds_check, decode_accesses
    from polykern.passes.clone import clone_function

    @pk.kernel
    def const_groups(x: Buffer[f32, "readonly"], y: Buffer[i64]):
        a, b = pk.vload(x, 3, 2)
        c, d = pk.vload(x, i64(2 ** 62), 2)
        y[0] = i64(a + b + c + d)

    fn = bounds_check(clone_function(const_groups.ir))
    assert [a.group for a in decode_accesses(fn.attrs)].count(2) == 2  # one per lane of the second group
    with pytest.raises(LaunchError, match=_msg("const_groups", "read of buffer 'x'", 2 ** 62, 2, "i64", 8)):
        pk.build([const_groups], ["llvm"], bounds_check=True)["const_groups"](
            np.arange(8, dtype=np.float32), np.zeros(1, np.int64), grid=1, block=1)
