"""pk.subgroup_* (docs/language.md section 5.1) beyond the conformance cases (tests/conformance/
kernels_subgroups.py, which check every op against NumPy on every runtime here): the located refusals,
the device code each GPU backend emits (CUDA: shfl.sync / redux.sync in the PTX of nvcc and of LLVM's
NVPTX, through ptxas; ROCm: ds_bpermute, linked by ld.lld; Metal: simd_*; OpenCL: sub_group_*; SPIR-V:
spirv-val), the Vulkan device's subgroup properties, and the oracle."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import KernelTypeError
from polykern.testing import tier_skip

from conformance.kernels_subgroups import BLOCK, N, device_subgroups, sg_loop, sg_ops, sg_wide

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


@tier_skip.skipif("spirv-val", shutil.which("spirv-val") is None, reason="spirv-val not installed")
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


def test_webgpu_refuses_64_bit_values():
    with pytest.raises(KernelTypeError, match="i64"):
        pk.build([sg_wide], targets=["webgpu"])


def _have_lld() -> bool:
    try:
        from polykern_rocm import lld
    except ImportError:
        return False
    return bool(lld.candidates())


@tier_skip.skipif("ld.lld", not _have_lld(), reason="no ld.lld here (apt install lld)")
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
        tier_skip.skip("lavapipe", "no Vulkan device here")
    assert dev.subgroup_size in (4, 8, 16, 32, 64, 128)
    size, _ = device_subgroups(pk.build([sg_ops], targets=["vulkan"]).on("vulkan"))
    assert size == dev.subgroup_size  # the SubgroupSize built-in is the device's


def test_vulkan_refuses_a_device_without_the_operation_class():
    """A device whose VkPhysicalDeviceSubgroupProperties lack shuffles gets a DeviceError naming them
    when the shader is loaded (simulated on the real device by switching the property off)."""
    from polykern.errors import DeviceError

    dev = _vulkan_device()
    if dev is None:
        tier_skip.skip("lavapipe", "no Vulkan device here")
    key = "subgroup shuffle operations"
    saved = dev.enabled[key]
    dev.enabled[key] = False
    try:
        mod = pk.build([sg_loop], targets=["vulkan"])
        with pytest.raises(DeviceError, match=key):
            mod["sg_loop"](np.zeros(N, np.float32), np.zeros(N, np.float32), 1, grid=N // BLOCK, block=BLOCK)
    finally:
        dev.enabled[key] = saved


def test_opencl_device_without_the_extension_is_refused_at_load():
    """'opencl -subgroups' on a device that does not report cl_khr_subgroups (PoCL's CPU device): a
    DeviceError naming the extensions when the program is built for the device."""
    from polykern.errors import DeviceError

    mod = pk.build([sg_ops], targets=["opencl -subgroups"])
    try:
        from polykern_opencl.runtime import device
        dev = device.get()
    except Exception:  # noqa: BLE001 - no OpenCL runtime or device here
        tier_skip.skip("pocl", "no OpenCL device here")
    if dev.has_extension("cl_khr_subgroups") and dev.has_extension("cl_khr_subgroup_shuffle"):
        pytest.skip(f"{dev.name} has the subgroup extensions (the conformance probe runs it)")
    z = np.zeros(4 * N, np.float32)
    with pytest.raises(DeviceError, match="cl_khr_subgroups"):
        mod.on("opencl")["sg_ops"](z[:N], np.zeros(N, np.int32), np.zeros(N, np.uint32), z, z.astype(np.int32),
                                   np.zeros(2 * N, np.uint32), np.zeros(3 * N, np.int32), grid=N // BLOCK, block=BLOCK)


def test_a_collective_in_a_device_function_under_a_divergent_if_is_refused_with_the_call_site():
    @pk.func
    def total(v: f32) -> f32:
        return pk.subgroup_add(v)

    @pk.kernel
    def k(x: Buffer[f32], o: Buffer[f32]):
        i = pk.global_id(0)
        if x[i] > 0.0:
            o[i] = total(x[i])

    with pytest.raises(KernelTypeError, match="in a device function called at") as e:
        k.ir
    assert "pk.subgroup_add(v)" in e.value.loc.source_line
