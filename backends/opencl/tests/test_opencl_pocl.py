"""External validation: PoCL's OpenCL C compiler builds every emitted kernel (building only).

Plus a few runs of emitted kernels straight through pyopencl, checking the semantics the emitter is
responsible for (literals, integer wrap-around, f16 rounding); launching through polykern's runtime
is tested by the conformance suite.
"""
from __future__ import annotations

import numpy as np
import pytest

from polykern.testing.c_corpus import corpus
from polykern_opencl.codegen import opencl_source

from opencl_support import SUPPORTED, pocl_context


def test_pocl_builds_the_whole_corpus_as_one_program():
    cl, ctx = pocl_context()
    src, symbols = opencl_source([corpus()[n] for n in SUPPORTED])
    prg = cl.Program(ctx, src).build()
    assert sorted(k.function_name for k in prg.all_kernels()) == sorted(symbols.values())


@pytest.mark.parametrize("name", ["saxpy", "half_math", "atomics_f64"])
def test_pocl_builds_single_kernels(name):
    cl, ctx = pocl_context()
    cl.Program(ctx, opencl_source([corpus()[name]])[0]).build()


def test_pocl_rejects_what_is_not_opencl_c():
    cl, ctx = pocl_context()
    with pytest.raises(cl.RuntimeError):
        cl.Program(ctx, "__kernel void k(__global float* x) { x[0] = undefined_thing; }").build()


def _run(cl, ctx, name, arrays, scalars=(), size=1):
    src, symbols = opencl_source([corpus()[name]])
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, src).build()
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for a in arrays]
    kernel = getattr(prg, symbols[name])
    kernel(queue, (size,), None, *scalars, *bufs)
    for a, b in zip(arrays, bufs):
        cl.enqueue_copy(queue, a, b)
    queue.finish()


def test_special_values_run_on_pocl():
    cl, ctx = pocl_context()
    xf = np.array([0, 0, 0, 1, 2.0], np.float32)
    xd = np.array([0, 0, 1.0, 0], np.float64)
    xi = np.array([5], np.int32)
    xl = np.array([3], np.int64)
    xu = np.array([7], np.uint64)
    _run(cl, ctx, "special_values", [xf, xd, xi, xl, xu])
    assert xf[0] == np.inf and xf[1] == -np.inf and np.isnan(xf[2])
    assert xf[3] == 0 and np.signbit(xf[3]) and xf[4] == np.float32(3.4028234663852886e38)
    assert xd[0] == np.inf and np.isnan(xd[1]) and xd[2] == 1.0 / 0.1 and xd[3] == -2.5e-300
    assert xi[0] == -2147483643  # 5 - INT_MIN wraps
    assert xl[0] == np.int64(3) + np.int64(-2**63)
    assert xu[0] == np.uint64(7) ^ np.uint64(2**64 - 1)


def test_small_int_wraparound_runs_on_pocl():
    cl, ctx = pocl_context()
    a = np.array([100, -7], np.int8)
    b = np.array([200, 3], np.uint8)
    c = np.array([300, -2], np.int16)
    d = np.array([65535, 9], np.uint16)
    ref = [x.copy() for x in (a, b, c, d)]
    _run(cl, ctx, "small_ints", [a, b, c, d], size=1)
    with np.errstate(over="ignore"):
        a0, b0, c0, d0 = (r[0] for r in ref)
        want_a = np.int8(np.int8(np.int8(np.int8(a0 * a0) + np.int8(np.int32(a0) << 3)) - np.int8(int(a0 / 3)))
                         + np.int8(abs(int(a0)))) + max(a0, ref[0][0])
        want_b = np.uint8(np.uint8(b0 * b0) - (b0 >> 1)) + np.uint8(~b0)
        want_c = np.int16(np.int16(c0 * c0) + np.int16(np.int32(c0) << 9)) + c0 + min(c0, ref[2][0])
        want_d = np.uint16(np.uint16(np.uint32(d0) * np.uint32(d0)) + np.uint16(np.uint32(d0) << 15)) + d0 % 10
    assert (a[0], b[0], c[0], d[0]) == (np.int8(want_a), np.uint8(want_b), np.int16(want_c), np.uint16(want_d))


def test_half_arithmetic_rounds_like_numpy_float16_on_pocl():
    cl, ctx = pocl_context()
    n = 64
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 4, n).astype(np.float16)
    y = rng.uniform(0.5, 4, n).astype(np.float16)
    z = rng.uniform(-2, 2, n).astype(np.float32)
    s = np.float16(1.375)
    x0, y0, z0 = x.copy(), y.copy(), z.copy()
    _run(cl, ctx, "half_math", [x, y, z], scalars=(np.int32(3), s.view(np.uint16)), size=n)
    # Work-group size is chosen by PoCL; t[0] is the group's first y element, so compare only where
    # that is y[0]'s group for sure: work-item 0.
    h = x0[0] * s + y0[0]
    h = h - np.sqrt(h) + np.abs(h) + np.maximum(h, s) + np.fmod(h, s)
    assert x[0] == h / np.float16(3) + np.float16(z0[0])
    assert z[0] == np.float32(h) + np.float32(x[0] > y0[0])


def test_memory_accesses_around_atomics_keep_python_order_on_pocl():
    cl, ctx = pocl_context()
    x = np.array([5, 7, 0, 2], np.int32)
    out = np.zeros(1, np.int32)
    _run(cl, ctx, "atomic_order", [x, out])
    # x[0] read (5) before the add, read again (6) after it; x[1] == old x[1]; `and` short-circuits.
    assert out[0] == 5 + 5 * 10 + 6 * 100 + 1
    assert x.tolist() == [6, 0, 0, 2]
