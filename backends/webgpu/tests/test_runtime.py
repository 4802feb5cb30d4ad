"""Kernels run on a real WebGPU device (lavapipe on a CPU-only host) and compared to NumPy."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32, u32
from polykern.errors import LaunchError

from helpers import build
from ir_kernels import KERNELS

pytestmark = pytest.mark.usefixtures("wgpu_context")


@pk.kernel
def saxpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@pk.kernel
def block_sum(n: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    tile = pk.shared(f32, 256)
    lid = pk.local_id(0)
    i = pk.global_id(0)
    tile[lid] = pk.select(i < n, x[i] if i < n else 0.0, 0.0)
    pk.barrier()
    s = pk.local_size(0) // 2
    while s > 0:
        if lid < s:
            tile[lid] = tile[lid] + tile[lid + s]
        pk.barrier()
        s = s // 2
    if lid == 0:
        out[pk.group_id(0)] = tile[0]


@pk.kernel
def histogram(n: i32, nbins: i32, data: Buffer[i32, "readonly"], hist: Buffer[u32]):
    i = pk.global_id(0)
    if i >= n:
        return
    b = data[i] % nbins
    if b < 0:
        b += nbins
    pk.atomic_add(hist, b, u32(1))


@pk.kernel
def float_atomics(n: i32, x: Buffer[f32, "readonly"], acc: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        pk.atomic_add(acc, 0, x[i])
        pk.atomic_min(acc, 1, x[i])
        pk.atomic_max(acc, 2, x[i])


@pk.kernel
def first_wins(n: i32, slot: Buffer[i32], winners: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        old = pk.atomic_cas(slot, 0, 0, i + 1)
        if old == 0:
            pk.atomic_add(winners, 0, 1)


@pk.kernel
def int_semantics(n: i32, a: Buffer[i32, "readonly"], b: Buffer[i32, "readonly"], out: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        x = a[i]
        y = b[i]
        out[5 * i + 0] = x // y
        out[5 * i + 1] = x % y
        out[5 * i + 2] = x << (y & 31)
        out[5 * i + 3] = x >> (y & 31)
        out[5 * i + 4] = i32(f32(x) * 0.5) + x * 65599


@pk.kernel
def loops(n: i32, out: Buffer[i32]):
    i = pk.global_id(0)
    if i >= n:
        return
    acc = 0
    for k in range(i):
        if k % 3 == 1:
            continue
        if k > 20:
            break
        acc += k
    j = 10
    while j > 0:
        j -= 3
        if i % 2 == 0 and j < 4:
            break
        acc = acc * 3 + j
    out[i] = acc


def loops_ref(i):
    acc = 0
    for k in range(i):
        if k % 3 == 1:
            continue
        if k > 20:
            break
        acc += k
    j = 10
    while j > 0:
        j -= 3
        if i % 2 == 0 and j < 4:
            break
        acc = acc * 3 + j
    return acc


@pk.kernel
def math_fns(n: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        v = x[i]
        out[6 * i + 0] = pk.sqrt(v) + pk.rsqrt(v)
        out[6 * i + 1] = pk.exp(v * 0.1) + pk.log(v) + pk.log2(v) + pk.exp2(v * 0.1)
        out[6 * i + 2] = pk.sin(v) + pk.cos(v) + pk.tanh(v - 4.0)
        out[6 * i + 3] = pk.pow(v, 1.5) + pk.fma(v, 2.0, 1.0)
        out[6 * i + 4] = pk.floor(v * 1.7) + pk.ceil(v * 1.3) + pk.abs(-v)
        out[6 * i + 5] = pk.min(v, 3.0) + pk.max(v, 3.0)


@pk.kernel
def fused(n: i32, a: Buffer[f32, "readonly"], b: Buffer[f32, "readonly"], c: Buffer[f32, "readonly"],
          out: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        out[i] = pk.fma(a[i], b[i], c[i])


@pk.kernel
def group_ids(n: i32, gid: Buffer[i32], ng: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        gid[i] = pk.group_id(0)
        if i == 0:
            ng[0] = pk.num_groups(0)


@pytest.fixture(scope="module")
def mod():
    from polykern_webgpu.runtime import WebGPUModule

    m = build([saxpy, block_sum, histogram, float_atomics, first_wins, int_semantics, loops, math_fns, fused,
               group_ids]).realize()  # built while the runtime may not be imported yet: the real module
    assert isinstance(m, WebGPUModule) and m.is_runnable
    return m


@pytest.mark.parametrize("n,block", [(1, 1), (63, 64), (1000, 64), (4097, 256), (333, 7)])
def test_saxpy_odd_sizes(mod, n, block):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    x0, expect = x.copy(), (np.float32(2.5) * x + y)
    mod["saxpy"](n, 2.5, x, y, grid=(n + block - 1) // block, block=block)
    np.testing.assert_allclose(y, expect, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(x, x0)  # readonly: never copied back


@pytest.mark.parametrize("n,block", [(1000, 64), (4099, 256), (5, 8)])
def test_shared_memory_reduction_with_barrier(mod, n, block):
    x = (np.arange(n) % 17).astype(np.float32)
    groups = (n + block - 1) // block
    out = np.full(groups, -1, np.float32)
    mod["block_sum"](n, x, out, grid=groups, block=block)
    expect = np.add.reduceat(np.concatenate([x, np.zeros(groups * block - n, np.float32)]),
                             np.arange(0, groups * block, block))
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("n", [1, 777, 20001])
def test_atomic_histogram(mod, n):
    data = np.random.default_rng(n).integers(-1000, 1000, n).astype(np.int32)
    hist = np.zeros(13, np.uint32)
    mod["histogram"](n, 13, data, hist, grid=(n + 127) // 128, block=128)
    expect = np.bincount(np.mod(data, 13), minlength=13)
    np.testing.assert_array_equal(hist, expect)
    assert hist.sum() == n


def test_float_atomics_emulated_with_cas(mod):
    n = 3000
    x = (np.arange(n) % 50 - 20).astype(np.float32)  # integers: exact sums in any order
    acc = np.array([0.0, 1e30, -1e30], np.float32)
    mod["float_atomics"](n, x, acc, grid=(n + 63) // 64, block=64)
    assert acc[0] == x.sum() and acc[1] == x.min() and acc[2] == x.max()


def test_compare_exchange_is_strong(mod):
    slot, winners = np.zeros(1, np.int32), np.zeros(1, np.int32)
    mod["first_wins"](5000, slot, winners, grid=79, block=64)
    assert winners[0] == 1 and 1 <= slot[0] <= 5000


def test_c_integer_semantics(mod):
    a = np.array([7, -7, 7, -7, 2**31 - 1, -2**31, 5, 123456], np.int32)
    b = np.array([2, 2, -2, -2, 3, 7, 33, -1], np.int32)
    out = np.zeros(5 * len(a), np.int32)
    mod["int_semantics"](len(a), a, b, out, grid=1, block=len(a))
    r = out.reshape(-1, 5)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    np.testing.assert_array_equal(r[:, 0], np.trunc(a64 / b64).astype(np.int64))  # C truncating division
    np.testing.assert_array_equal(r[:, 1], np.fmod(a64, b64))  # C remainder
    sh = (b & 31).astype(np.uint32)
    np.testing.assert_array_equal(r[:, 2], (a.astype(np.uint32) << sh).astype(np.int32))
    np.testing.assert_array_equal(r[:, 3], a >> sh)  # arithmetic shift
    halves = np.trunc(a.astype(np.float32) * np.float32(0.5)).astype(np.int64)
    wrapped = (halves + a64 * 65599 + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(r[:, 4], wrapped)


def test_loops_break_continue_return(mod):
    n = 40
    out = np.full(n + 5, -99, np.int32)
    mod["loops"](n, out, grid=2, block=32)
    np.testing.assert_array_equal(out[:n], [loops_ref(i) for i in range(n)])
    assert (out[n:] == -99).all()  # early return: nothing written past n


def test_math_builtins(mod):
    x = np.linspace(0.5, 9.5, 37).astype(np.float32)
    out = np.zeros(6 * len(x), np.float32)
    mod["math_fns"](len(x), x, out, grid=1, block=64)
    v = x.astype(np.float64)
    expect = np.stack([
        np.sqrt(v) + 1 / np.sqrt(v), np.exp(v * 0.1) + np.log(v) + np.log2(v) + np.exp2(v * 0.1),
        np.sin(v) + np.cos(v) + np.tanh(v - 4.0), v ** 1.5 + (v * 2 + 1),
        np.floor(np.float32(1.7) * x) + np.ceil(np.float32(1.3) * x) + v, np.minimum(v, 3) + np.maximum(v, 3),
    ], axis=1)
    np.testing.assert_allclose(out.reshape(-1, 6), expect, rtol=2e-5, atol=2e-5)


def test_fma_rounds_once(mod):
    """WGSL's fma() may round twice (lavapipe does); polykern's fma is fused like C's fmaf."""
    rng = np.random.default_rng(7)
    n = 4096
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    exact_ab = a.astype(np.float64) * b
    c = (-exact_ab * (1 + rng.standard_normal(n) * 1e-5)).astype(np.float32)  # heavy cancellation
    out = np.zeros(n, np.float32)
    mod["fused"](n, a, b, c, out, grid=n // 64, block=64)
    ref = (exact_ab + c).astype(np.float32)
    ulps = np.abs(out.astype(np.float64) - ref) / np.spacing(np.abs(ref))
    assert ulps.max() <= 1 and (out == ref).mean() > 0.99


def test_grid_beyond_the_dispatch_limit_is_chunked(mod, wgpu_context):
    limit = wgpu_context.limits["max-compute-workgroups-per-dimension"]
    n = limit + 1234
    gid, ng = np.full(n, -1, np.int32), np.zeros(1, np.int32)
    mod["group_ids"](n, gid, ng, grid=n, block=1)
    np.testing.assert_array_equal(gid, np.arange(n, dtype=np.int32))
    assert ng[0] == n


def test_2d_grid_and_all_special_registers():
    m = build([KERNELS["grid_2d"]()])
    w, h = 37, 19
    out = np.full(w * h, -1, np.int32)
    grid, block = ((w + 7) // 8, (h + 3) // 4), (8, 4)
    m["grid_2d"](w, h, out, grid=grid, block=block)
    assert (out == grid[0] * 1000 + grid[1]).all()


def test_device_arrays_and_pipeline_cache():
    from polykern_webgpu import runtime

    m = build([saxpy])
    n = 1001
    x = np.arange(n, dtype=np.float32)
    dx, dy = runtime.to_device(x), runtime.zeros(n, np.float32)
    for _ in range(3):
        m["saxpy"](n, 1.0, dx, dy, grid=(n + 63) // 64, block=64)
    np.testing.assert_array_equal(dy.numpy(), 3 * x)
    assert m.pipelines_built == 1  # same block: the pipeline is reused
    m["saxpy"](n, 1.0, dx, dy, grid=(n + 127) // 128, block=128)
    assert m.pipelines_built == 2  # a new block size is a new pipeline (override constants)
    np.testing.assert_array_equal(dy.numpy(), 4 * x)
    host = np.zeros(n, np.float32)
    m["saxpy"](n, 2.0, dx, host, grid=(n + 63) // 64, block=64)  # mixed device + host arguments
    np.testing.assert_array_equal(host, 2 * x)


def test_concurrent_first_launches_build_one_pipeline():
    m = build([saxpy])
    n = 513
    x = np.arange(n, dtype=np.float32)
    ys = [np.full(n, t, np.float32) for t in range(6)]
    errors = []

    def run(y):
        try:
            m["saxpy"](n, 2.0, x, y, grid=(n + 63) // 64, block=64)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(y,)) for y in ys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for t, y in enumerate(ys):
        np.testing.assert_array_equal(y, 2 * x + t)
    assert m.pipelines_built == 1


def test_launch_errors(mod, wgpu_context):
    x = np.zeros(4, np.float32)
    too_big = wgpu_context.limits["max-compute-invocations-per-workgroup"] * 2
    with pytest.raises(LaunchError, match="invocations"):
        mod["saxpy"](4, 1.0, x, x.copy(), grid=1, block=too_big)
    with pytest.raises(LaunchError, match="float32"):
        mod["saxpy"](4, 1.0, x.astype(np.float64), x.copy(), grid=1, block=4)
    with pytest.raises(LaunchError, match="takes 4 arguments"):
        mod["saxpy"](4, 1.0, x, grid=1, block=4)


def test_half_precision(wgpu_context):
    if "shader-f16" not in wgpu_context.features:
        pytest.skip("the WebGPU device lacks shader-f16")
    m = build([KERNELS["half_precision"]()], "webgpu -shader_f16=true")
    x = np.arange(7, dtype=np.float16)  # odd size: 14 bytes, padded to 16 on the device
    m["half_precision"](7, np.float16(1.5), x, grid=1, block=8)
    np.testing.assert_array_equal(x, np.arange(7, dtype=np.float16) * np.float16(2.0))


def test_devices_lists_an_adapter():
    from polykern_webgpu import runtime

    found = runtime.devices()
    assert found and all(isinstance(d, str) and "(" in d for d in found)


def test_device_array_factories_follow_the_base_class():
    """WebGPU's DeviceArray behaves as every runtime's (polykern.runtime.device_array): len() of a 0-d array is a
    TypeError (it answered 1), ``empty``/``zeros``/``to_device`` are the shared factories taking ``device=``
    (``empty`` was ``zeros`` and neither took a device), and zeros skips the fill because new buffers read 0."""
    from polykern_webgpu import runtime as rt

    with pytest.raises(TypeError, match="0-d"):
        len(rt.empty((), np.float32))
    assert rt.empty is not rt.zeros and rt.DeviceArray._zero_initialized
    z = rt.zeros((3, 2), np.int32, device=rt.DeviceArray._default_device())
    np.testing.assert_array_equal(z.numpy(), np.zeros((3, 2), np.int32))
    np.testing.assert_array_equal(rt.to_device(np.arange(5), device=None).numpy(), np.arange(5))
