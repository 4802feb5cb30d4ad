"""Operators whose operands are all constants (or the workgroup size) give the language's run-time result
on every backend: integers wrap, x // 0 == x, f16 overflows to infinity.

Found by the differential fuzzer (cases fz4000063_webgpu, fz5000062_webgpu): naga evaluates such
expressions when the shader or pipeline is created and rejected ``65504.0h - f16(-41i)`` ("Subtract
operation overflowed") and ``i32(pk_block_x) << 28u`` ("<< operation overflowed").
"""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, i32
from runtimes import runnable_targets

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


def _params():
    out = []
    for target, kind, skips in runnable_targets():
        reason = skips.get("f16")
        marks = [pytest.mark.skip(reason=f"{target}: {reason}")] if reason else []
        out.append(pytest.param(target, kind, id=kind, marks=marks))
    return out


@pk.kernel
def consts(o: Buffer[i32], h: Buffer[f16]):
    if pk.global_id(0) == 0:
        o[0] = pk.local_size(0) << 28
        o[1] = pk.local_size(0) * 1000000000
        o[2] = -(pk.local_size(0) * 268435456)
        o[3] = 2147483647 + pk.local_size(0)
        o[4] = pk.local_size(0) // (pk.local_size(0) - 8)
        h[0] = f16(65504.0) - f16(i32(-41))
        h[1] = f16(i32(100000))
        h[2] = f16(-65504.0) * f16(2.0)


@pytest.mark.parametrize("target,kind", _params())
def test_constant_operators_wrap_and_overflow_at_run_time(target, kind):
    o = np.zeros(5, np.int32)
    h = np.zeros(3, np.float16)
    pk.build([consts], targets=[target]).on(kind)["consts"](o, h, grid=1, block=8)
    assert o.tolist() == [-2**31, (8 * 10**9 + 2**31) % 2**32 - 2**31, -2**31, -2**31 + 7, 8], kind
    assert h.tolist() == [np.inf, np.inf, -np.inf], kind
