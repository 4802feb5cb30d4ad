"""pk.subgroup_* (docs/language.md "Subgroups"): every op against NumPy on every runtime here, the
located refusals, and the device code each GPU backend emits (CUDA: shfl.sync / redux.sync in nvcc's
PTX; Metal: simd_*; OpenCL: sub_group_*; SPIR-V: spirv-val).

The expected values are computed from the mapping the device reports (each work-item writes its
subgroup_id and subgroup_local_id), so the test holds for any subgroup size and any mapping."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, f64, i32, i64, u32
from polykern.errors import KernelTypeError

from runtimes import runnable_targets

N, BLOCK = 96, 48  # two groups of 48: with 32-lane warps the second warp of a group is partial


@pk.kernel
def sg_ops(xf: Buffer[f32], xi: Buffer[i32], xu: Buffer[u32], of: Buffer[f32], oi: Buffer[i32],
           ou: Buffer[u32], ids: Buffer[i32]):
    i = pk.global_id(0)
    v = xf[i]
    w = xi[i]
    of[i * 4 + 0] = pk.subgroup_add(v)
    of[i * 4 + 1] = pk.subgroup_min(v) + pk.subgroup_max(v) * 100.0
    of[i * 4 + 2] = pk.subgroup_shuffle(v, pk.subgroup_local_id() + 1)
    of[i * 4 + 3] = pk.subgroup_shuffle_xor(v, 1) + pk.subgroup_broadcast_first(v) * 100.0
    oi[i * 4 + 0] = pk.subgroup_add(w)
    oi[i * 4 + 1] = pk.subgroup_min(w) * 1000 + pk.subgroup_max(w)
    oi[i * 4 + 2] = i32(pk.subgroup_any(w > 8)) + 2 * i32(pk.subgroup_all(w > -9))
    oi[i * 4 + 3] = pk.subgroup_shuffle(w, -1) * 1000 + pk.subgroup_shuffle_xor(w, 2)
    ou[i * 2 + 0] = pk.subgroup_add(xu[i])
    ou[i * 2 + 1] = pk.subgroup_max(xu[i]) - pk.subgroup_min(xu[i])
    ids[i * 3] = pk.subgroup_size()
    ids[i * 3 + 1] = pk.subgroup_id()
    ids[i * 3 + 2] = pk.subgroup_local_id()


@pk.kernel
def sg_loop(x: Buffer[f32], out: Buffer[f32], rounds: i32):
    """Collectives inside a uniform loop, with values carried across them."""
    i = pk.global_id(0)
    acc = 0.0
    v = x[i]
    for r in range(rounds):
        v = pk.subgroup_shuffle_xor(v, r + 1) + 1.0
        acc = acc + pk.subgroup_max(v)
    out[i] = acc


@pk.kernel
def sg_wide(a: Buffer[i64], d: Buffer[f64], oa: Buffer[i64], od: Buffer[f64]):
    i = pk.global_id(0)
    oa[i * 3] = pk.subgroup_add(a[i])
    od[i * 3] = pk.subgroup_add(d[i])
    oa[i * 3 + 1] = pk.subgroup_min(a[i])
    od[i * 3 + 1] = pk.subgroup_max(d[i])
    oa[i * 3 + 2] = pk.subgroup_shuffle_xor(a[i], 1)
    od[i * 3 + 2] = pk.subgroup_shuffle(d[i], pk.subgroup_local_id() + 3)


def _groups(ids):
    """{(group, subgroup id): [work-item indices, by lane]} from the ids the device wrote."""
    size, sgid, lane = ids[0::3], ids[1::3], ids[2::3]
    assert (size == size[0]).all() and size[0] in (4, 8, 16, 32, 64, 128)
    out = {}
    for i in range(N):
        out.setdefault((i // BLOCK, int(sgid[i])), {})[int(lane[i])] = i
    return int(size[0]), out


def _targets():
    out = []
    for target, kind, skips in runnable_targets():
        if kind == "opencl":
            continue  # PoCL lacks cl_khr_subgroups: the refusal is tested below
        out.append(pytest.param(target, id=target))
    return out


@pytest.mark.parametrize("target", _targets())
def test_every_op_matches_numpy(target):
    rng = np.random.default_rng(7)
    xf = (rng.integers(-64, 64, N) / 8).astype(np.float32)  # exact sums in any order
    xi = rng.integers(-10, 11, N).astype(np.int32)
    xu = rng.integers(0, 1 << 31, N).astype(np.uint32)  # sums wrap
    of, oi = np.zeros(4 * N, np.float32), np.zeros(4 * N, np.int32)
    ou, ids = np.zeros(2 * N, np.uint32), np.zeros(3 * N, np.int32)
    mod = pk.build([sg_ops], targets=[target])
    mod["sg_ops"](xf, xi, xu, of, oi, ou, ids, grid=N // BLOCK, block=BLOCK)
    size, groups = _groups(ids)
    of, oi, ou = of.reshape(N, 4), oi.reshape(N, 4), ou.reshape(N, 2)
    for lanes in groups.values():
        mem = [lanes[k] for k in sorted(lanes)]
        n = len(mem)
        assert sorted(lanes) == list(range(n))
        full = n == size  # shuffles from lanes past a partial subgroup's end are unspecified
        for k, i in lanes.items():
            assert of[i, 0] == xf[mem].sum()
            assert of[i, 1] == xf[mem].min() + xf[mem].max() * 100
            assert oi[i, 0] == xi[mem].sum()
            assert oi[i, 1] == xi[mem].min() * 1000 + xi[mem].max()
            assert oi[i, 2] == int((xi[mem] > 8).any()) + 2 * int((xi[mem] > -9).all())
            assert ou[i, 0] == np.uint32(xu[mem].astype(np.uint64).sum() % (1 << 32))
            assert ou[i, 1] == xu[mem].max() - xu[mem].min()
            if full:
                assert of[i, 2] == xf[lanes[(k + 1) % size]]
                assert of[i, 3] == xf[lanes[k ^ 1]] + xf[mem[0]] * 100
                assert oi[i, 3] == xi[lanes[size - 1]] * 1000 + xi[lanes[k ^ (2 % size)]]


@pytest.mark.parametrize("target", _targets())
def test_collectives_in_a_loop(target):
    x = np.arange(N, dtype=np.float32)
    out = np.zeros(N, np.float32)
    ids = np.zeros(3 * N, np.int32)
    mod = pk.build([sg_loop, sg_ops], targets=[target])
    mod["sg_loop"](x, out, 3, grid=N // BLOCK, block=BLOCK)
    z = np.zeros(4 * N, np.float32)
    mod["sg_ops"](x, np.zeros(N, np.int32), np.zeros(N, np.uint32), z, z.astype(np.int32),
                  np.zeros(2 * N, np.uint32), ids, grid=N // BLOCK, block=BLOCK)
    size, groups = _groups(ids)
    for lanes in groups.values():
        if len(lanes) != size:
            continue
        v = {k: x[i] for k, i in lanes.items()}
        acc = 0.0
        for r in range(3):
            v = {k: v[k ^ ((r + 1) % size)] + 1 for k in v}
            acc += max(v.values())
        for i in lanes.values():
            assert out[i] == acc


@pk.kernel
def sg_float_first(o: Buffer[f32], x: Buffer[f32], s: u32):
    g = pk.global_id(0)
    o[g] = pk.subgroup_broadcast_first(x[g]) + pk.subgroup_broadcast_first(x[g] * 2.0) + f32(pk.subgroup_min(s + u32(g)))


@pytest.mark.parametrize("target", _targets())
def test_float_broadcasts_next_to_other_collectives(target):
    """Regression (fuzz seed 1000029): two float broadcast_first, or one beside another collective,
    aborted lavapipe's LLVM ('Cannot select scalar_to_vector') through Vulkan and WebGPU; a float
    broadcast_first is now a shuffle from lane 0."""
    x = np.arange(N, dtype=np.float32) + 0.5
    o, ids = np.zeros(N, np.float32), np.zeros(3 * N, np.int32)
    mod = pk.build([sg_float_first, sg_ops], targets=[target])
    mod["sg_float_first"](o, x, 5, grid=N // BLOCK, block=BLOCK)
    z = np.zeros(4 * N, np.float32)
    mod["sg_ops"](z[:N], np.zeros(N, np.int32), np.zeros(N, np.uint32), z, z.astype(np.int32),
                  np.zeros(2 * N, np.uint32), ids, grid=N // BLOCK, block=BLOCK)
    _, groups = _groups(ids)
    for lanes in groups.values():
        first = lanes[0]
        for i in lanes.values():
            assert o[i] == x[first] * 3 + 5 + min(lanes.values())


def test_non_uniform_control_flow_is_refused():
    with pytest.raises(KernelTypeError, match=r"subgroup_add\(\) is reached only by some work-items") as e:
        @pk.kernel
        def bad(x: Buffer[f32]):
            i = pk.global_id(0)
            if x[i] > 0.0:
                x[i] = pk.subgroup_add(x[i])

        bad.ir
    assert e.value.loc is not None and "x[i] = pk.subgroup_add" in e.value.loc.source_line


def test_bool_value_is_refused_with_a_hint():
    @pk.kernel
    def bad(x: Buffer[i32]):
        i = pk.global_id(0)
        x[i] = i32(pk.subgroup_shuffle(x[i] > 0, 1))

    with pytest.raises(KernelTypeError, match="subgroup_any/subgroup_all"):
        bad.ir


def test_opencl_without_declared_subgroups_is_refused():
    with pytest.raises(KernelTypeError, match="cl_khr_subgroups") as e:
        pk.build([sg_ops], targets=["opencl"])
    assert e.value.loc is not None


def test_opencl_with_subgroups_emits_sub_group_functions():
    src = pk.build([sg_ops], targets=["opencl -subgroups"]).on("opencl").inspect_source("cl")
    assert "#pragma OPENCL EXTENSION cl_khr_subgroups : enable" in src
    assert "sub_group_reduce_add(" in src and "sub_group_shuffle_xor(" in src


def test_vulkan_needs_spirv_1_3():
    with pytest.raises(KernelTypeError, match="SPIR-V 1.3"):
        pk.build([sg_ops], targets=["vulkan -spirv=1.2"])


@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="spirv-val not installed")
def test_vulkan_shaders_validate():
    for name, spv in pk.build([sg_ops, sg_loop], targets=["vulkan"]).on("vulkan").payload.items():
        r = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", "-"], input=spv, capture_output=True)
        assert r.returncode == 0, (name, r.stderr)


def test_metal_uses_simd_functions():
    src = pk.build([sg_ops], targets=["metal"]).on("metal").inspect_source("metal")
    for name in ("simd_sum(", "simd_min(", "simd_shuffle_xor(", "simd_broadcast_first(", "simd_any(",
                 "[[thread_index_in_simdgroup]]", "[[threads_per_simdgroup]]"):
        assert name in src


@pytest.mark.parametrize("arch, redux", [("sm_75", False), ("sm_90", True)])
@pytest.mark.parametrize("kind", ["cuda", "nvptx"])
def test_cuda_ptx_has_warp_shuffles(kind, arch, redux):
    if kind == "cuda" and shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    target = f"cuda -arch={arch} -fmt=ptx" if kind == "cuda" else f"nvptx -arch={arch}"
    ptx = pk.build([sg_ops, sg_wide], targets=[target]).on("cuda").inspect_source("ptx")
    assert "shfl.sync.bfly.b32" in ptx and "shfl.sync.idx.b32" in ptx and "vote.sync.any.pred" in ptx
    assert ("redux.sync.add.s32" in ptx) == redux
    assert ("redux.sync.min.u32" in ptx) == redux
    if shutil.which("ptxas"):
        r = subprocess.run(["ptxas", f"-arch={arch}", "-o", "/dev/null", "-"], input=ptx.encode(),
                           capture_output=True)
        assert r.returncode == 0, r.stderr.decode()


@pytest.mark.parametrize("target", [t for t in _targets() if not t.id.startswith("webgpu")])
def test_64_bit_values(target):
    """i64/f64 shuffles and reductions (the CUDA paths move them as two 32-bit halves)."""
    n = N
    a = (np.arange(n, dtype=np.int64) - 40) * (1 << 40)
    d = np.arange(n, dtype=np.float64) / 4 + 1e10
    oa, od = np.zeros(3 * n, np.int64), np.zeros(3 * n, np.float64)
    ids = np.zeros(3 * n, np.int32)
    mod = pk.build([sg_wide, sg_ops], targets=[target])
    mod["sg_wide"](a, d, oa, od, grid=n // BLOCK, block=BLOCK)
    z = np.zeros(4 * n, np.float32)
    mod["sg_ops"](z[:n], np.zeros(n, np.int32), np.zeros(n, np.uint32), z, z.astype(np.int32),
                  np.zeros(2 * n, np.uint32), ids, grid=n // BLOCK, block=BLOCK)
    size, groups = _groups(ids)
    oa, od = oa.reshape(n, 3), od.reshape(n, 3)
    for lanes in groups.values():
        mem = [lanes[k] for k in sorted(lanes)]
        for k, i in lanes.items():
            assert oa[i, 0] == a[mem].sum() and od[i, 0] == d[mem].sum()
            assert oa[i, 1] == a[mem].min() and od[i, 1] == d[mem].max()
            if len(mem) == size:
                assert oa[i, 2] == a[lanes[k ^ 1]] and od[i, 2] == d[lanes[(k + 3) % size]]


def test_webgpu_refuses_64_bit_values():
    with pytest.raises(KernelTypeError, match="i64"):
        pk.build([sg_wide], targets=["webgpu"])


def _have_lld() -> bool:
    try:
        from polykern_rocm import lld
    except ImportError:
        return False
    return bool(lld.candidates())


@pytest.mark.skipif(not _have_lld(), reason="no ld.lld here (apt install lld)")
@pytest.mark.parametrize("mcpu, wave", [("gfx90a", 64), ("gfx1100", 32)])
def test_rocm_wavefront_code_links(mcpu, wave):
    """The hsaco links (ld.lld, as every rocm build) and moves values with ds_bpermute; the wave size
    is the target's (the kernels also compile subgroup_size() to that constant)."""
    mod = pk.build([sg_ops, sg_wide, sg_loop], targets=[f"rocm -mcpu={mcpu}"]).on("rocm")
    asm = mod.inspect_source("asm")
    assert "ds_bpermute_b32" in asm
    assert (".amdhsa_wavefront_size32 1" in asm) == (wave == 32)


def test_oracle_agrees_with_the_cpu_and_knows_float_sums_may_reassociate():
    """The interpreter (the fuzzer's oracle) runs every op with the CPU's subgroup size; a float
    subgroup_add is compared as 'may reassociate' (numerics), integer results exactly."""
    from polykern.testing.compare import compare
    from polykern.testing.interp import interpret

    rng = np.random.default_rng(3)
    args = [(rng.integers(-64, 64, N) / 8).astype(np.float32), rng.integers(-10, 11, N).astype(np.int32),
            rng.integers(0, 1 << 31, N).astype(np.uint32), np.zeros(4 * N, np.float32),
            np.zeros(4 * N, np.int32), np.zeros(2 * N, np.uint32), np.zeros(3 * N, np.int32)]
    oracle = interpret(sg_ops, args, N // BLOCK, BLOCK)
    got = [a.copy() for a in args]
    pk.build([sg_ops], targets=["llvm"])["sg_ops"](*got, grid=N // BLOCK, block=BLOCK)
    names = [p.name for p in sg_ops.ir.params]
    result = compare(oracle, dict(zip(names, got)), "llvm")
    assert not result.mismatches, result.mismatches
    assert result.unchecked == N  # of[i*4+0]: the float sums
    assert (oracle.buffers["oi"] == got[4]).all() and (oracle.buffers["ids"] == got[6]).all()
    wrong = dict(zip(names, got))
    wrong["oi"] = wrong["oi"].copy()
    wrong["oi"][0] += 1
    assert compare(oracle, wrong, "llvm").mismatches


def test_oracle_refuses_a_shuffle_past_a_partial_subgroup():
    from polykern.testing.interp import OracleError, interpret

    @pk.kernel
    def rot(x: Buffer[i32]):
        i = pk.global_id(0)
        x[i] = pk.subgroup_shuffle(x[i], pk.subgroup_local_id() + 1)

    x = np.arange(12, dtype=np.int32)
    assert (interpret(rot, [x], 1, 8).buffers["x"][:8] == np.roll(x[:8], -1)).all()
    with pytest.raises(OracleError, match="partial subgroup"):
        interpret(rot, [x], 1, 12)
    assert (interpret(rot, [x], 1, 12, subgroup_size=4).buffers["x"][8:] == [9, 10, 11, 8]).all()


def _vulkan_device():
    try:
        from polykern_vulkan.runtime import device
    except Exception:  # noqa: BLE001 - no Vulkan runtime here
        return None
    try:
        return device.get()
    except Exception:  # noqa: BLE001 - no device
        return None


def test_vulkan_device_reports_subgroups():
    dev = _vulkan_device()
    if dev is None:
        pytest.skip("no Vulkan device here")
    assert dev.subgroup_size in (4, 8, 16, 32, 64, 128)
    ids = np.zeros(3 * N, np.int32)
    z = np.zeros(4 * N, np.float32)
    pk.build([sg_ops], targets=["vulkan"])["sg_ops"](z[:N], np.zeros(N, np.int32), np.zeros(N, np.uint32), z,
                                                    z.astype(np.int32), np.zeros(2 * N, np.uint32), ids,
                                                    grid=N // BLOCK, block=BLOCK)
    assert ids[0] == dev.subgroup_size  # the SubgroupSize built-in is the device's


def test_vulkan_refuses_a_device_without_the_operation_class():
    """A device whose VkPhysicalDeviceSubgroupProperties lack shuffles gets a DeviceError naming them
    when the shader is loaded (simulated on the real device by switching the property off)."""
    from polykern.errors import DeviceError

    dev = _vulkan_device()
    if dev is None:
        pytest.skip("no Vulkan device here")
    key = "subgroup shuffle operations"
    saved = dev.enabled[key]
    dev.enabled[key] = False
    try:
        mod = pk.build([sg_loop], targets=["vulkan"])
        with pytest.raises(DeviceError, match=key):
            mod["sg_loop"](np.zeros(N, np.float32), np.zeros(N, np.float32), 1, grid=N // BLOCK, block=BLOCK)
    finally:
        dev.enabled[key] = saved
