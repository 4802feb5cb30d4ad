"""What a body records for its kernel (lang/body_facts.py), recorded inside device functions.

Inlining a @pk.func used to keep only the function's statements and declarations: a pk.shared_dynamic
array declared in one lost its hidden size parameter and its ``dynamic_shared`` attribute (WebGPU
returned zeros, lavapipe aborted, llvm/hexagon/the oracle raised ``KeyError: None``, OpenCL failed with
CL_INVALID_KERNEL_ARGS, CUDA launched 0 dynamic bytes, and ``shared_size=`` was refused), and
pk.vload/pk.vstore/pk.copy_async lost their buffers' alignment (an offset view was no longer refused).

For every field of BodyFacts (a new field without kernels here fails ``test_every_fact_has_kernels``)
the same body is compiled in the kernel, one device function down and two down, and the kernels must
come out alike; then each fact is checked where it matters, on every runtime here and in the CUDA C /
NVPTX sources.
"""
import collections
import dataclasses
import os
import re
import sys

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, Local, Shared, f32, i32
from polykern.errors import KernelTypeError, LaunchError
from polykern.ir import nodes as ir
from polykern.ir.vector import lane_of
from polykern.lang.body_facts import ARRAY_LIMITS, BodyFacts
from polykern.runtime.shared_launch import dynamic_shared_of
from polykern.testing.interp import interpret
from dynamic_shared_kernels import rev_tile as dyn_0  # _rev's body in the kernel
from runtimes import runnable_targets

TARGETS = [t for t, _, _ in runnable_targets()]
DEPTHS = (0, 1, 2)  # the body in the kernel, in a device function, in a function called by a function


# ---------------------------------------------------------------------- dynamic_shared


@pk.func
def _rev(x: Buffer[f32], y: Buffer[f32], n: i32):
    tile = pk.shared_dynamic(f32)
    l = pk.local_id(0)
    b = pk.local_size(0)
    g = pk.group_id(0) * b + l
    if g < n:
        tile[l] = x[g]
    pk.barrier()
    if g < n:
        y[g] = tile[b - 1 - l]


@pk.func
def _rev_outer(x: Buffer[f32], y: Buffer[f32], n: i32):
    _rev(x, y, n)


@pk.kernel
def dyn_1(n: i32, x: Buffer[f32], y: Buffer[f32]):
    _rev(x, y, n)


@pk.kernel
def dyn_2(n: i32, x: Buffer[f32], y: Buffer[f32]):
    _rev_outer(x, y, n)


# ---------------------------------------------------------------------- vector_align (vload, vstore, copy_async)


@pk.func
def _wide(x: Buffer[f32, "readonly"], y: Buffer[f32], z: Buffer[f32, "readonly"], out: Buffer[f32]):
    i = pk.local_id(0)
    tile = pk.shared(f32, 64)
    pk.copy_async(tile, i, z, i, 2)
    pk.copy_commit()
    a, b, c, d = pk.vload(x, i, 4)
    pk.vstore(y, i, (d + c, b + a))
    pk.copy_wait(0)
    pk.barrier()
    out[i] = tile[2 * i] - tile[2 * i + 1]


@pk.func
def _wide_outer(x: Buffer[f32, "readonly"], y: Buffer[f32], z: Buffer[f32, "readonly"], out: Buffer[f32]):
    _wide(x, y, z, out)


@pk.kernel
def wide_0(x: Buffer[f32, "readonly"], y: Buffer[f32], z: Buffer[f32, "readonly"], out: Buffer[f32]):
    i = pk.local_id(0)
    tile = pk.shared(f32, 64)
    pk.copy_async(tile, i, z, i, 2)
    pk.copy_commit()
    a, b, c, d = pk.vload(x, i, 4)
    pk.vstore(y, i, (d + c, b + a))
    pk.copy_wait(0)
    pk.barrier()
    out[i] = tile[2 * i] - tile[2 * i + 1]


@pk.kernel
def wide_1(x: Buffer[f32, "readonly"], y: Buffer[f32], z: Buffer[f32, "readonly"], out: Buffer[f32]):
    _wide(x, y, z, out)


@pk.kernel
def wide_2(x: Buffer[f32, "readonly"], y: Buffer[f32], z: Buffer[f32, "readonly"], out: Buffer[f32]):
    _wide_outer(x, y, z, out)


# ---------------------------------------------------------------------- vector_groups


@pk.func
def _pair_sum(x: Buffer[f32, "readonly"], k: i32) -> f32:
    a, b = pk.vload(x, k, 2)
    return a + b


@pk.func
def _pair_sum_outer(x: Buffer[f32, "readonly"], k: i32) -> f32:
    a, b = pk.vload(x, k + 1, 2)
    return a * b + _pair_sum(x, k)


@pk.kernel
def groups_0(x: Buffer[f32, "readonly"], out: Buffer[f32]):
    i = pk.global_id(0)
    c, d, e, f = pk.vload(x, i, 4)
    a, b = pk.vload(x, 2 * i + 1, 2)
    g, h = pk.vload(x, 2 * i, 2)
    out[i] = c + d + e + f + a * b + (g + h)


@pk.kernel
def groups_1(x: Buffer[f32, "readonly"], out: Buffer[f32]):
    i = pk.global_id(0)
    c, d, e, f = pk.vload(x, i, 4)
    a, b = pk.vload(x, 2 * i + 1, 2)
    out[i] = c + d + e + f + a * b + _pair_sum(x, 2 * i)


@pk.kernel
def groups_2(x: Buffer[f32, "readonly"], out: Buffer[f32]):
    i = pk.global_id(0)
    c, d, e, f = pk.vload(x, i, 4)
    out[i] = c + d + e + f + _pair_sum_outer(x, 2 * i)


# ---------------------------------------------------------------------- array_bytes (the kernel's limits)

assert ARRAY_LIMITS["shared"] == ARRAY_LIMITS["local"]
_ALL = ARRAY_LIMITS["shared"] // 4  # f32 elements of the limit
_BIG = _ALL - 1000  # with _scratch's 1000: one element over the limit


@pk.func
def _scratch(out: Buffer[f32]):
    s = pk.shared(f32, 1001)
    p = pk.local(f32, 1001)
    s[0] = 1.0
    p[0] = 2.0
    out[0] = s[0] + p[0]


@pk.func
def _scratch_outer(out: Buffer[f32]):
    _scratch(out)


@pk.kernel
def bytes_0(out: Buffer[f32]):
    big = pk.shared(f32, _BIG)
    priv = pk.local(f32, _BIG)
    big[0] = 0.0
    priv[0] = 0.0
    s = pk.shared(f32, 1001)
    p = pk.local(f32, 1001)
    s[0] = 1.0
    p[0] = 2.0
    out[0] = s[0] + p[0] + big[0] + priv[0]


@pk.kernel
def bytes_1(out: Buffer[f32]):
    big = pk.shared(f32, _BIG)
    priv = pk.local(f32, _BIG)
    big[0] = 0.0
    priv[0] = 0.0
    _scratch(out)


@pk.kernel
def bytes_2(out: Buffer[f32]):
    big = pk.shared(f32, _BIG)
    priv = pk.local(f32, _BIG)
    big[0] = 0.0
    priv[0] = 0.0
    _scratch_outer(out)


# ---------------------------------------------------------------------- swizzled (tiles a tensor copy or wgmma uses)


@pk.func
def _tile_mma(acc: pk.WgAcc, tiles: Shared[pk.f16]):
    pk.wgmma(acc, tiles, 0, tiles, 1024)


@pk.func
def _tile_mma_outer(acc: pk.WgAcc, tiles: Shared[pk.f16]):
    _tile_mma(acc, tiles)


@pk.kernel
def swz_0(out: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 16)
    tiles = pk.shared_dynamic(pk.f16)
    pk.wg_fill(acc, 0.0)
    pk.wgmma(acc, tiles, 0, tiles, 1024)
    pk.wgmma_commit()
    pk.wgmma_wait(0)
    pk.wg_store(out, 0, 16, acc)


@pk.kernel
def swz_1(out: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 16)
    tiles = pk.shared_dynamic(pk.f16)
    pk.wg_fill(acc, 0.0)
    _tile_mma(acc, tiles)
    pk.wgmma_commit()
    pk.wgmma_wait(0)
    pk.wg_store(out, 0, 16, acc)


@pk.kernel
def swz_2(out: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 16)
    tiles = pk.shared_dynamic(pk.f16)
    pk.wg_fill(acc, 0.0)
    _tile_mma_outer(acc, tiles)
    pk.wgmma_commit()
    pk.wgmma_wait(0)
    pk.wg_store(out, 0, 16, acc)


KERNELS = {
    "dynamic_shared": (dyn_0, dyn_1, dyn_2),
    "vector_align": (wide_0, wide_1, wide_2),
    "vector_groups": (groups_0, groups_1, groups_2),
    "array_bytes": (bytes_0, bytes_1, bytes_2),
    "swizzled": (swz_0, swz_1, swz_2),  # where it matters: tests/test_hopper_funcs.py
}
FACTS = [f.name for f in dataclasses.fields(BodyFacts)]


def test_every_fact_has_kernels():
    assert sorted(KERNELS) == sorted(FACTS), "give each BodyFacts field kernels here (and checks below)"


def _outcome(kernel):
    """What the kernel records beside its statements: its parameters, attributes, arrays and the size of
    each wide-access group id (the statements carrying it); or, refused, the limit it broke."""
    try:
        fn = kernel.ir
    except KernelTypeError as exc:
        return "refused", re.search(r"the limit of \w+ arrays is \d+ bytes per [\w-]+", exc.message).group(0)
    ids = collections.Counter(lane_of(s).group for s in ir.walk_stmts(fn.body) if lane_of(s) is not None)
    return ([(p.name, str(p.type)) for p in fn.params], fn.attrs, sorted(map(str, fn.arrays.values())),
            sorted(ids.values()), fn.hopper.swizzled if fn.hopper is not None else None)


@pytest.mark.parametrize("fact", FACTS)
@pytest.mark.parametrize("depth", DEPTHS[1:])
def test_the_kernel_records_the_same_through_device_functions(fact, depth):
    direct, called = (KERNELS[fact][d] for d in (0, depth))
    assert _outcome(called) == _outcome(direct)


# ---------------------------------------------------------------------- where each fact matters


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_dynamic_shared_runs(target, depth):
    kernel = KERNELS["dynamic_shared"][depth]
    k = pk.build([kernel], [target])[kernel.name]
    for block in (8, 32):
        n = 4 * block
        x = np.arange(n, dtype=np.float32)
        y = np.zeros(n, np.float32)
        k(n, x, y, grid=4, block=block, shared_size=block)
        np.testing.assert_array_equal(y, x.reshape(4, block)[:, ::-1].ravel())
    with pytest.raises(LaunchError, match="has a pk.shared_dynamic array: give its length"):
        k(8, np.zeros(8, np.float32), np.zeros(8, np.float32), grid=1, block=8)


@pytest.mark.parametrize("depth", DEPTHS)
def test_dynamic_shared_in_the_oracle(depth):
    x = np.arange(64, dtype=np.float32)
    r = interpret(KERNELS["dynamic_shared"][depth], [np.int32(64), x, np.zeros(64, np.float32), np.int32(32)],
                  grid=2, block=32)
    np.testing.assert_array_equal(r.buffers["y"], x.reshape(2, 32)[:, ::-1].ravel())


@pytest.mark.parametrize("depth", DEPTHS)
def test_dynamic_shared_launch_facts_of_cuda_c_and_nvptx(depth):
    kernel = KERNELS["dynamic_shared"][depth]
    cuda = pk.build([kernel], ["cuda -arch=sm_90"]).on("cuda")
    src = cuda.inspect_source("cuda")
    assert re.search(rf"void {kernel.name}\(int n, float\* x, float\* y, int shared_size\)", src), src
    assert "extern __shared__ __align__(16) unsigned char pk_dynamic_shared[];" in src
    ptx = pk.build([kernel], ["nvptx -arch=sm_90"]).on("cuda")
    text = ptx.inspect_source("ptx")
    assert f".extern .shared .align 16 .b8 pk_dynamic_shared_{kernel.name}[];" in text
    assert re.search(rf"\.param \.u32 {kernel.name}_param_3\s*\)", text), text[:3000]
    for dev in (cuda, ptx):  # what the CUDA runtime launches: shared_size * 4 bytes, from argument 3
        assert dynamic_shared_of(dev.functions[kernel.name]) == (3, 4)


def test_hidden_size_parameter_avoids_the_callers_names():
    @pk.kernel
    def named(shared_size: i32, x: Buffer[f32], y: Buffer[f32]):
        _rev(x, y, shared_size)

    assert [p.name for p in named.ir.params] == ["shared_size", "x", "y", "shared_size_1"]
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    pk.build([named], ["llvm"])["named"](8, x, y, grid=1, block=8, shared_size=8)
    np.testing.assert_array_equal(y, x[::-1])


def test_a_second_dynamic_array_from_a_device_function_is_refused():
    @pk.kernel
    def twice(n: i32, x: Buffer[f32], y: Buffer[f32]):
        _rev(x, y, n)
        _rev_outer(y, x, n)

    @pk.kernel
    def own_first(n: i32, x: Buffer[f32], y: Buffer[f32]):
        t = pk.shared_dynamic(f32)
        t[0] = 1.0
        _rev(x, y, n)

    @pk.kernel
    def own_after(n: i32, x: Buffer[f32], y: Buffer[f32]):
        _rev(x, y, n)
        t = pk.shared_dynamic(f32)
        t[0] = 1.0

    tile = _rev.pyfunc.__code__.co_firstlineno + 2  # tile = pk.shared_dynamic(f32) in _rev
    line = twice.pyfunc.__code__.co_firstlineno
    with pytest.raises(KernelTypeError, match=rf"device function '_rev_outer' declares a pk.shared_dynamic array "
                                              rf"\(at \S*test_func_facts.py:{tile}:\d+, in it or in a function it "
                                              rf"calls\), and the kernel already has one \(declared at "
                                              rf"\S*test_func_facts.py:{tile}:\d+\): a kernel has at most one") as info:
        twice.ir
    assert info.value.loc.line == line + 3  # the second call
    with pytest.raises(KernelTypeError, match=rf"the kernel already has one \(declared at \S*:{own_first.pyfunc.__code__.co_firstlineno + 2}:"):
        own_first.ir
    with pytest.raises(KernelTypeError, match=rf"at most one pk.shared_dynamic array \(the first is declared at "
                                              rf"\S*test_func_facts.py:{tile}:\d+\)") as info:
        own_after.ir
    assert info.value.loc.line == own_after.pyfunc.__code__.co_firstlineno + 3


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_offset_views_are_refused_and_aligned_ones_run(target, depth):
    kernel = KERNELS["vector_align"][depth]
    assert kernel.ir.attrs["vector_align"] == "x=16,y=8,z=8"  # vload 4 x f32, vstore 2, copy_async 2
    k = pk.build([kernel], [target])[kernel.name]
    x = np.arange(33, dtype=np.float32)
    y = np.zeros(17, np.float32)
    z = np.arange(17, dtype=np.float32) * 3
    out = np.zeros(8, np.float32)
    k(x[:32], y[:16], z[:16], out, grid=1, block=8)
    np.testing.assert_array_equal(y[:16].reshape(8, 2), x[:32].reshape(8, 2, 2).sum(axis=2)[:, ::-1])
    np.testing.assert_array_equal(out, -np.full(8, 3, np.float32))
    for name, args in (("x", (x[1:], y[:16], z[:16], out)), ("y", (x[:32], y[1:], z[:16], out)),
                       ("z", (x[:32], y[:16], z[1:], out))):
        with pytest.raises(LaunchError, match=rf"\('{name}'\) is at address 0x[0-9a-f]+, which is not aligned to"):
            k(*args, grid=1, block=8)


def test_the_async_gemm_example_records_its_copies_alignment():
    """examples/gemm_f16.py issues its copies (and its pk.vload/pk.vstore) in device functions: the
    kernel must ask for 16-byte aligned A and B, so an offset view never reaches cp.async."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
    import gemm_f16 as G

    for variant in ("sync", "async", "dyn3"):
        kernel = G.specialized(G.SMALL_TILES, variant)
        assert kernel.ir.attrs["vector_align"] == "a=16,b=16", variant
        info = pk.build([kernel], ["cuda -arch=sm_90"]).on("cuda").functions[kernel.name]
        assert info.attrs["vector_align"] == "a=16,b=16", variant
    mod = pk.build(G.kernels(G.SMALL_TILES, ("async",)), ["llvm"])
    (bm, bn, bk), _, _ = G.config(G.SMALL_TILES, "async")
    m, n, k = bm, bn, 2 * bk
    a = np.ones(m * k + 1, np.float16)
    b = np.ones(k * n, np.float16)
    c = np.zeros(m * n, np.float32)
    with pytest.raises(LaunchError, match=r"\('a'\) is at address 0x[0-9a-f]+, which is not aligned to 16 bytes"):
        G.launch(mod, a[1:], b, c, m, n, k, G.SMALL_TILES, G.device_subgroup_size(mod), "async")


@pytest.mark.parametrize("depth", DEPTHS)
def test_wide_access_groups_run_on_the_cpu_and_the_oracle(depth):
    kernel = KERNELS["vector_groups"][depth]
    x = np.arange(64, dtype=np.float32)
    want = x[:32].reshape(8, 4).sum(axis=1) + x[2:34:4] * x[3:35:4] + x[0:32:4] + x[1:33:4]
    out = np.zeros(8, np.float32)
    pk.build([kernel], ["llvm"])[kernel.name](x, out, grid=1, block=8)
    np.testing.assert_array_equal(out, want)
    r = interpret(kernel, [x, np.zeros(8, np.float32)], grid=1, block=8)
    np.testing.assert_array_equal(r.buffers["out"], want)


def test_a_device_function_called_twice_gets_two_group_ids():
    @pk.kernel
    def twice(x: Buffer[f32, "readonly"], out: Buffer[f32]):
        i = pk.global_id(0)
        out[i] = _pair_sum(x, 2 * i) + _pair_sum(x, 2 * i + 1)

    ids = collections.Counter(lane_of(s).group for s in ir.walk_stmts(twice.ir.body) if lane_of(s) is not None)
    assert sorted(ids.values()) == [2, 2]


@pytest.mark.parametrize("depth", DEPTHS[1:])
def test_arrays_of_device_functions_count_against_the_kernels_limits(depth):
    kernel = KERNELS["array_bytes"][depth]
    callee = "_scratch" if depth == 1 else "_scratch_outer"
    with pytest.raises(KernelTypeError, match=rf"the (shared|local) arrays of device function '{callee}' are too "
                                              rf"large for this kernel: 4004 bytes \(with the {4 * _BIG} bytes of "
                                              r"this kernel's other \w+ arrays\); the limit of \w+ arrays is 65536"):
        kernel.ir

    @pk.kernel
    def fits(out: Buffer[f32]):
        big = pk.shared(f32, _BIG - 1)  # with _scratch's 1001: exactly the limit
        priv = pk.local(f32, _BIG - 1)
        big[0] = 0.0
        priv[0] = 0.0
        _scratch(out)

    assert len(fits.ir.arrays) == 4  # within the limits: compiles


def test_shared_and_local_parameters_still_alias():
    """Arrays passed to device functions are the caller's, not new ones: they count once."""
    @pk.func
    def _touch(s: Shared[f32], p: Local[f32]):
        s[0] = p[0]

    @pk.kernel
    def full(out: Buffer[f32]):
        s = pk.shared(f32, _ALL)
        p = pk.local(f32, _ALL)
        _touch(s, p)
        _touch(s, p)
        out[0] = s[0]

    assert len(full.ir.arrays) == 2
