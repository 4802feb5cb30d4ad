"""Red-team regressions for the issue-15 language features (device functions, specialization,
subgroups, wide access, dynamic shared memory): each case runs on every runtime here against the
IR interpreter and NumPy."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.testing.interp import interpret
from runtimes import runnable_targets

TARGETS = [pytest.param(t, k, skips, id=k) for t, k, skips in runnable_targets()]


@pk.kernel
def size_before_barrier(out: Buffer[i32]):
    sgs = pk.subgroup_size()  # uniform: the CPU's barrier fission computes it before the work-item loops
    pk.barrier()
    out[pk.global_id(0)] = sgs + pk.subgroup_id() * 100 + pk.subgroup_local_id() * 10000


@pytest.mark.parametrize("target,kind,skips", TARGETS)
def test_subgroup_size_read_before_a_barrier(target, kind, skips):
    if "subgroups" in skips:
        pytest.skip(skips["subgroups"])
    mod = pk.build([size_before_barrier], targets=[target]).on(kind)
    out = np.zeros(16, np.int32)
    mod["size_before_barrier"](out, grid=1, block=16)
    size = int(out[0])
    assert size in (1, 2, 4, 8, 16, 32, 64, 128)
    lin = np.arange(16)
    assert out.tolist() == (size + lin // size * 100 + lin % size * 10000).tolist()
    if kind in ("llvm", "hexagon"):  # the oracle's subgroup size is the CPU's
        assert interpret(size_before_barrier, [np.zeros(16, np.int32)], grid=1, block=16).buffers["out"].tolist() \
            == out.tolist()
