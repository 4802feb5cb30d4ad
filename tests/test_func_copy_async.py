"""pk.copy_async inside a @pk.func whose Shared/Buffer parameters are named differently from the
caller's arrays, called with two different arrays: the inliner renames the copy's arrays like any
other reference (it left them under the parameter's name: 'dst' is not a declared buffer/array,
an internal error at build)."""
import numpy as np

import polykern as pk
from polykern import Buffer, f32
from polykern.testing.interp import interpret


@pk.func
def _fill(dst: pk.Shared[f32], src: Buffer[f32, "readonly"], first: pk.constexpr):
    i = pk.local_id(0)
    pk.copy_async(dst, i, src, first // 4 + i, 4)


@pk.kernel
def two_tiles(x: Buffer[f32, "readonly"], out: Buffer[f32]):
    ta = pk.shared(f32, 32)
    tb = pk.shared(f32, 64)
    _fill(ta, x, 0)
    _fill(tb, x, 32)
    pk.copy_commit()
    pk.copy_wait(0)
    pk.barrier()
    i = pk.local_id(0)
    for j in range(4):
        out[i * 4 + j] = ta[i * 4 + j] + tb[i * 4 + j]


def test_copy_async_in_a_function_called_with_two_arrays():
    x = np.arange(64, dtype=np.float32)
    want = x[:32] + x[32:]
    out = np.zeros(32, np.float32)
    pk.build([two_tiles], targets=["llvm"])["two_tiles"](x, out, grid=1, block=8)
    np.testing.assert_array_equal(out, want)
    res = interpret(two_tiles, [x, np.zeros(32, np.float32)], 1, 8)
    np.testing.assert_array_equal(res.buffers["out"], want)
