"""Red-team regressions for the issue-15 language features (device functions, specialization,
subgroups, wide access, dynamic shared memory): each case runs on every runtime here against the
IR interpreter and NumPy."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import KernelTypeError, LaunchError
from polykern.testing.interp import interpret
from polykern.testing import tier_skip
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


@pk.kernel
def writes_both(a: Buffer[i32], b: Buffer[i32]):
    i = pk.global_id(0)
    if i < 4:
        a[i] = 10 + i
    else:
        b[i - 2] = 20 + i  # through b: elements 2 + (i - 2) of the array when b = z[2:]


@pk.kernel
def reads_twice(a: Buffer[i32, "readonly"], b: Buffer[i32, "readonly"], c: Buffer[i32]):
    i = pk.global_id(0)
    c[i] = a[i] + b[i]


@pk.kernel
def in_place(x: Buffer[i32, "readonly"], y: Buffer[i32]):
    i = pk.global_id(0)
    y[i] = x[i] + 1


@pytest.mark.parametrize("target,kind,skips", TARGETS)
def test_one_host_array_for_two_written_parameters(target, kind, skips):
    """Runtimes that copy each host argument lost the writes through one of two views of one array
    (webgpu and hexagon with the same array twice; opencl, vulkan and webgpu with overlapping views):
    now it is the one memory the CPU gives, or a LaunchError naming both arguments."""
    f = pk.build([writes_both, reads_twice, in_place], targets=[target]).on(kind)
    for views in ("same", "overlapping"):
        z = np.zeros(10, np.int32)
        a, b = (z, z) if views == "same" else (z[:8], z[2:])
        try:
            f["writes_both"](a, b, grid=1, block=6)
        except LaunchError as e:
            assert "arguments 'a' and 'b'" in str(e) and "writes 'a'" in str(e)
            continue
        if views == "same":  # work-items 0-3 and 4-5 both write elements 2 and 3: either order
            assert z[:2].tolist() == [10, 11] and z[4:].tolist() == [0] * 6
        else:
            assert z[:6].tolist() == [10, 11, 12, 13, 24, 25]
    z, c = np.arange(8, dtype=np.int32), np.zeros(8, np.int32)
    f["reads_twice"](z, z, c, grid=1, block=8)  # read-only twice is fine everywhere
    assert c.tolist() == (2 * np.arange(8)).tolist()
    try:  # readonly and written: one memory, or refused (webgpu cannot bind a buffer both ways)
        f["in_place"](z, z, grid=1, block=8)
    except LaunchError as e:
        assert "arguments 'x' and 'y'" in str(e)
    else:
        assert z.tolist() == (np.arange(8) + 1).tolist()


@pk.kernel
def five_collectives(x: Buffer[f32], o: Buffer[f32]):
    i = pk.global_id(0)
    o[i] = (pk.subgroup_max(x[i]) + pk.subgroup_min(x[i]) + pk.subgroup_shuffle(x[i], 3)
            + pk.subgroup_broadcast_first(x[i]) + pk.subgroup_shuffle_xor(x[i], 1))


@pytest.mark.parametrize("target,kind,skips", TARGETS)
def test_five_f32_collectives_in_one_expression(request, target, kind, skips):
    if "subgroups" in skips:
        pytest.skip(skips["subgroups"])
    # hexagon: under qemu-hexagon the last two work-items of every work-group got subgroup_max wrong with
    # LLVM 22's Hexagon code generation at -O2/-O3; kernels with collectives are now code-generated at -O1.
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3], np.float32)
    o = np.zeros(16, np.float32)
    pk.build([five_collectives], targets=[target]).on(kind)["five_collectives"](x, o, grid=1, block=16)
    size = 8 if kind in ("llvm", "hexagon") else None
    if size is None:  # the device's subgroup size: compare with the oracle run at that size
        probe = np.zeros(16, np.int32)
        pk.build([size_before_barrier], targets=[target]).on(kind)["size_before_barrier"](probe, grid=1, block=16)
        size = int(probe[0])
    ref = interpret(five_collectives, [x, np.zeros(16, np.float32)], grid=1, block=16,
                    subgroup_size=size).buffers["o"]
    assert o.tolist() == ref.tolist()


@pk.kernel
def collective_in_while_condition(x: Buffer[i32], o: Buffer[i32]):
    i = pk.global_id(0)
    v = x[i]
    s = 0
    while pk.subgroup_any(v > 0):  # the same in a subgroup, not in the work-group
        s += v
        pk.barrier()  # a collective of the work-group: refused here (a subgroup's collective is accepted)
        v -= 1
    o[i] = s


def test_refusal_in_a_while_whose_condition_needs_statements_names_its_lines():
    """The exit a while condition with a collective (or a device function call) is lowered to was
    unlocated: the refusal said "the 'break' at an unknown line"."""
    with pytest.raises(KernelTypeError) as e:
        pk.build([collective_in_while_condition], targets=["llvm"])
    line = collective_in_while_condition.pyfunc.__code__.co_firstlineno + 5  # the decorator, def, three statements, the while
    msg = str(e.value)
    assert "unknown line" not in msg
    assert f"the 'break' at line {line} is taken only by some work-items" in msg


def test_webgpu_one_device_array_readonly_and_written_is_named():
    """wgpu refuses one buffer bound read-only and read-write in a dispatch; that was a DeviceError
    quoting wgpu's validation report, now a LaunchError naming both parameters."""
    if not any(k == "webgpu" for _, k, _ in runnable_targets()):
        tier_skip.skip("wgpu", "no WebGPU runtime here")
    from polykern_webgpu.runtime.device_array import to_device
    d = to_device(np.arange(8, dtype=np.int32))
    f = pk.build([in_place], targets=["webgpu"]).on("webgpu")["in_place"]
    with pytest.raises(LaunchError, match="arguments 'x' and 'y' are one buffer, one readonly and one written"):
        f(d, d, grid=1, block=8)
    e = to_device(np.zeros(8, np.int32))
    f(d, e, grid=1, block=8)
    assert e.numpy().tolist() == list(range(1, 9))


@pk.kernel
def sum_in_2d_block(o: Buffer[i32]):
    o[pk.local_id(1) * pk.local_size(0) + pk.local_id(0)] = pk.subgroup_add(1)


@pk.kernel
def lane_in_2d_block(o: Buffer[i32]):
    o[pk.local_id(1) * pk.local_size(0) + pk.local_id(0)] = pk.subgroup_local_id()


def test_webgpu_subgroups_in_a_2d_block():
    """WGSL declared all three subgroup built-ins in every subgroup kernel, and naga refuses the lane
    and id built-ins in a 2-D work-group: any subgroup kernel failed at pipeline creation with a
    DeviceError quoting wgpu. Now only the built-ins read are declared (a reduction runs), and a kernel
    that reads the lane or id in a 2-D block is a LaunchError saying why."""
    if not any(k == "webgpu" for _, k, _ in runnable_targets()):
        tier_skip.skip("wgpu", "no WebGPU runtime here")
    target = next(t for t, k, _ in runnable_targets() if k == "webgpu")
    mod = pk.build([sum_in_2d_block, lane_in_2d_block, size_before_barrier], targets=[target]).on("webgpu")
    probe = np.zeros(16, np.int32)
    mod["size_before_barrier"](probe, grid=1, block=16)
    size = int(probe[0])
    o = np.zeros(16, np.int32)
    mod["sum_in_2d_block"](o, grid=1, block=(8, 2))
    assert o.tolist() == [min(size, 16)] * 16
    with pytest.raises(LaunchError, match="refuses those built-ins in a work-group of more than one dimension"):
        mod["lane_in_2d_block"](o, grid=1, block=(8, 2))
    mod["lane_in_2d_block"](o, grid=1, block=16)
    assert o.tolist() == [i % size for i in range(16)]


@pk.kernel
def partials_by_subgroup_id(x: Buffer[i32], out: Buffer[i32]):
    part = pk.shared(i32, 16)
    lin = pk.local_id(1) * pk.local_size(0) + pk.local_id(0)
    s = pk.subgroup_add(x[lin])
    if pk.subgroup_local_id() == 0:
        part[pk.subgroup_id()] = s
    pk.barrier()
    if lin == 0:
        t = 0
        for k in range((pk.local_size(0) * pk.local_size(1) + pk.subgroup_size() - 1) // pk.subgroup_size()):
            t += part[k]
        out[0] = t


@pytest.mark.parametrize("target,kind,skips", TARGETS)
@pytest.mark.parametrize("block", [(4, 4), (8, 2), (16, 1)])
def test_per_subgroup_partials_in_a_2d_block(target, kind, skips, block):
    """lavapipe numbers the row-subgroups of a (4, 4) block as if linear, so two rows shared a
    subgroup id and the sum lost half the block (84 for 136) without an error; now the right sum or a
    LaunchError (Vulkan on lavapipe; WebGPU, whose naga refuses the id built-ins in 2-D blocks)."""
    if "subgroups" in skips:
        pytest.skip(skips["subgroups"])
    x = np.arange(16, dtype=np.int32) + 1
    out = np.zeros(1, np.int32)
    f = pk.build([partials_by_subgroup_id], targets=[target]).on(kind)["partials_by_subgroup_id"]
    try:
        f(x, out, grid=1, block=block)
    except LaunchError as e:
        assert block == (4, 4) or kind == "webgpu", e
        return
    assert int(out[0]) == 136
