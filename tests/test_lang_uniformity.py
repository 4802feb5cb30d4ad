"""Barriers must be reached by every work-item of a workgroup or by none (docs/language.md 7.5): a barrier in
control flow that only some work-items take is a located KernelTypeError naming the non-uniform
condition's line; barriers in provably uniform control flow compile and run on every runtime."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from located_refusal import check_refusal
from runtimes import runnable_targets


# ---------------------------------------------------------------- refused: each marks the barrier (B:tag)
# and the line the message must name as the reason (W:tag)

@pk.kernel
def if_local_id(o: Buffer[i32]):
    if pk.local_id(0) < 2:  # W:iflid
        pk.barrier()  # B:iflid
    o[pk.global_id(0)] = 1


@pk.kernel
def through_variables(n: i32, o: Buffer[i32]):
    i = pk.global_id(0)
    j = i + n
    k = j * 2
    if k > 7:  # W:vars
        pk.barrier()  # B:vars


@pk.kernel
def early_return(n: i32, o: Buffer[i32]):
    i = pk.global_id(0)
    if i >= n:  # W:ret
        return
    pk.barrier()  # B:ret


@pk.kernel
def while_loaded(o: Buffer[i32]):
    k = 0
    while k < o[0]:  # W:whileload
        pk.barrier()  # B:whileload
        k += 1


@pk.kernel
def for_range(o: Buffer[i32]):
    for k in range(pk.local_id(0)):  # W:forrange
        pk.barrier()  # B:forrange


@pk.kernel
def divergent_break(o: Buffer[i32]):
    for k in range(8):
        pk.barrier()  # B:brk
        if k == pk.local_id(0):  # W:brk
            break


@pk.kernel
def divergent_continue(o: Buffer[i32]):
    for k in range(8):
        if pk.local_id(0) == k:  # W:cont
            continue
        pk.barrier()  # B:cont


@pk.kernel
def assigned_under_divergence(o: Buffer[i32]):
    flag = 0
    if pk.local_id(0) == 0:  # W:under
        flag = 1
    if flag == 1:
        pk.barrier()  # B:under


@pk.kernel
def shared_value(o: Buffer[i32]):
    s = pk.shared(i32, 4)
    s[0] = 1
    pk.barrier()
    if s[0] == 1:  # W:shared
        pk.barrier()  # B:shared


@pk.kernel
def atomic_value(o: Buffer[i32]):
    t = pk.atomic_add(o, 0, 1)
    if t == 0:  # W:atomic
        pk.barrier()  # B:atomic


@pk.kernel
def elif_branch(n: i32, o: Buffer[i32]):
    if n > 0:
        o[0] = 1
    elif pk.global_id(0) > 3:  # W:elif
        pk.barrier()  # B:elif


@pk.kernel
def short_circuit(n: i32, o: Buffer[i32]):
    if n > 0 and pk.local_id(0) == 1:  # W:andop
        pk.barrier()  # B:andop


@pk.kernel
def loop_carried(n: i32, o: Buffer[i32]):
    a = 0
    b = 0
    for k in range(n):
        if b > 5:  # W:carried
            pk.barrier()  # B:carried
        b = a
        a = pk.local_id(0)


REFUSED = [
    (if_local_id, "iflid", "depends on local_id(0)"),
    (through_variables, "vars", "depends on 'k' ("),
    (early_return, "ret", "the 'return' at line"),
    (while_loaded, "whileload", "a load from Buffer 'o', which is not readonly"),
    (for_range, "forrange", "the 'for' loop at line"),
    (divergent_break, "brk", "is left early by only some work-items"),
    (divergent_continue, "cont", "the 'continue' at line"),
    (assigned_under_divergence, "under", "'flag', which is assigned at line"),
    (shared_value, "shared", "a load from shared array 's'"),
    (atomic_value, "atomic", "atomic_add()"),
    (elif_branch, "elif", "the 'elif' at line"),
    (short_circuit, "andop", "local_id(0)"),
    (loop_carried, "carried", "local_id(0)"),
]


@pytest.mark.parametrize("kern,tag,why", REFUSED, ids=[c[1] for c in REFUSED])
def test_non_uniform_barrier_is_a_located_error(kern, tag, why):
    check_refusal(kern, __file__, "B", tag, "barrier() is reached only by some work-items of a workgroup", why)


# ---------------------------------------------------------------- accepted and run: uniform control flow

@pk.kernel
def uniform_kernel(n: i32, flags: Buffer[i32, "readonly"], x: Buffer[f32, "readonly"], out: Buffer[f32]):
    s = pk.shared(f32, 64)
    lid = pk.local_id(0)
    g = pk.group_id(0)
    i = pk.global_id(0)
    if g * pk.local_size(0) >= n:
        return  # a whole workgroup returns: uniform
    s[lid] = x[i] if i < n else 0.0
    pk.barrier()
    step = pk.local_size(0) // 2
    while step > 0:
        if lid < step:  # no barrier inside: fine
            s[lid] += s[lid + step]
        pk.barrier()
        step //= 2
    if flags[g] == 1:  # readonly buffer at a uniform index
        pk.barrier()
    for k in range(n // 1000):
        if k == 3:
            break  # uniform break
        pk.barrier()
    mine = 0.0
    if lid == 0:
        mine = s[0]
    if lid == 0:
        out[g] = mine


RUNTIMES = [pytest.param(t, k, id=t.split()[0]) for t, k, _ in runnable_targets()]


@pytest.mark.parametrize("target,kind", RUNTIMES)
def test_uniform_barriers_compile_and_run(target, kind):
    n, block = 200, 64
    groups = 4
    x = np.arange(n, dtype=np.float32)
    flags = np.array([1, 0, 1, 0], np.int32)
    out = np.zeros(groups, np.float32)
    pk.build([uniform_kernel], targets=[target]).on(kind)["uniform_kernel"](
        n, flags, x, out, grid=groups, block=block)
    want = np.pad(x, (0, groups * block - n)).reshape(groups, block).sum(1)
    np.testing.assert_array_equal(out, want)


def test_every_example_and_conformance_kernel_is_uniform():
    """Every kernel users copy from (the conformance suite holds the examples) passes the analysis."""
    from conformance import ALL_CASES

    kernels = [k for case in ALL_CASES for k in case.kernels]
    assert {"block_sum", "scan_blocks", "matmul"} <= {k.name for k in kernels}
    barriers = [k for k in kernels if pk.ir.uses_barrier(k.ir)]  # .ir runs the analysis
    assert len(barriers) >= 4
