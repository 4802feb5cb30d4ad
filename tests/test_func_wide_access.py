"""pk.vload/pk.vstore inside a @pk.func: inlining renames the group's index temporary, and the lanes'
VecLane kept the old name, so no backend fused the group (scalar accesses only) and the oracle failed
with "unknown variable '_vk0'" where it checks the group's index (found red-teaming pk.copy_async)."""
import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.testing.interp import interpret


@pk.func
def _sum_of_middle(x: Buffer[f32, "readonly"], y: Buffer[f32], k: i32) -> f32:
    a, b, c, d = pk.vload(x, k, 4)
    pk.vstore(y, k, (d, c, b, a))
    return b + c


@pk.kernel
def wide_in_func(x: Buffer[f32, "readonly"], y: Buffer[f32], z: Buffer[f32]):
    i = pk.global_id(0)
    z[i] = _sum_of_middle(x, y, i)


def test_groups_in_a_device_function_are_fused():
    cl = pk.build([wide_in_func], ["opencl"]).on("opencl").inspect_source("cl")
    assert cl.count("float4") >= 2, cl  # the load and the store, as in a kernel


def test_the_oracle_runs_them():
    x = np.arange(16, dtype=np.float32)
    r = interpret(wide_in_func, [x, np.zeros(16, np.float32), np.zeros(4, np.float32)], grid=1, block=4)
    assert r.buffers["z"].tolist() == [3.0, 11.0, 19.0, 27.0]
    assert r.buffers["y"].tolist() == x.reshape(4, 4)[:, ::-1].ravel().tolist()
