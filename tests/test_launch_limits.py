"""Launch shapes are checked against the language's and each device's limits before anything runs:
a LaunchError names the limit and the value, and the process survives."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, i32
from polykern.errors import LaunchError
from polykern.runtime.launch import MAX_GLOBAL_SIZE, check_args, check_global_size
from polykern.testing.synthetic import saxpy_info
from polykern.testing import tier_skip
from runtimes import runnable_targets

TARGETS = [pytest.param((t, k), id=t.split()[0]) for t, k, _ in runnable_targets()
           if k in ("llvm", "opencl", "vulkan", "webgpu")]


@pk.kernel
def fill(n: i32, y: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = i


@pk.kernel
def no_ids(y: Buffer[i32]):
    y[0] = 7


@pytest.fixture(scope="module", params=TARGETS)
def dev(request):
    target, kind = request.param
    return pk.build([fill, no_ids], targets=[target]).on(kind), kind


def test_the_issue_launch_is_refused_everywhere(dev):
    """grid=(2**20,)*3, block=1: PoCL aborted, llvm and WebGPU started 2**60 workgroups."""
    mod, kind = dev
    y = np.zeros(4, np.int32)
    for name, args in (("fill", (4, y)), ("no_ids", (y,))):
        with pytest.raises(LaunchError, match=r"grid \(1048576, 1048576, 1048576\).* in dimension [xy]"):
            mod[name](*args, grid=(2 ** 20, 2 ** 20, 2 ** 20), block=1)
    assert not y.any()
    mod["fill"](4, y, grid=1, block=4)  # the runtime still works
    assert y.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("grid,block", [((2 ** 30, 1, 1), (4, 1, 1)), ((1, 2 ** 16, 1), (1, 2 ** 15 + 1, 1))])
def test_global_id_is_an_i32(dev, grid, block):
    mod, _ = dev
    with pytest.raises(LaunchError, match=r"global_id\(\d\) is an i32: at most 2147483648"):
        mod["fill"](4, np.zeros(4, np.int32), grid=grid, block=block)


def test_grid_y_and_z_keep_cuda_limits(dev):
    mod, kind = dev
    with pytest.raises(LaunchError, match=r"65536 workgroups in dimension z|exceeds .*maximum workgroup count"):
        mod["no_ids"](np.zeros(1, np.int32), grid=(1, 1, 65536), block=1)


def test_opencl_counts_work_groups_in_32_bits():
    if not any(k == "opencl" for _, k, _ in runnable_targets()):
        tier_skip.skip("pocl", "no OpenCL runtime here")
    mod = pk.build([no_ids], targets=["opencl"]).on("opencl")
    with pytest.raises(LaunchError, match=r"6442450941 work-groups; the OpenCL runtime allows at most 4294967295"):
        mod["no_ids"](np.zeros(1, np.int32), grid=(2 ** 31 - 1, 3, 1), block=1)


def test_check_args_applies_the_language_limit_to_every_runtime():
    info = saxpy_info()
    args = (4, 1.0, np.ones(4, np.float32), np.ones(4, np.float32))
    check_args(info, args, grid=(2 ** 21, 1, 1), block=(1024, 1, 1))  # exactly 2**31 work-items: ids fit
    with pytest.raises(LaunchError, match=r"kernel 'saxpy': grid\[1\] \* block\[1\] = 65537 \* 32768"):
        check_args(info, args, grid=(1, 65537, 1), block=(1, 32768, 1))
    with pytest.raises(LaunchError, match="dimension z"):
        check_global_size("k", (1, 1, MAX_GLOBAL_SIZE), (1, 1, 2))
