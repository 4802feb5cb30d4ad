"""One kernel realized on the device: shader module, layouts, and its compute pipelines.

A :class:`KernelProgram` is created once per (module, kernel) — lazily and thread-safely, by the
module's ``LazyMap`` — after checking that the device can run the shader (SPIR-V version, device
features from the shader's capabilities, workgroup memory, push-constant size, buffer count).
Pipelines are specialized per block shape (specialization constants 0, 1, 2 = local size x, y, z;
3 = the length of the pk.shared_dynamic array) and cached per launch shape in a ``BoundedLazyMap``:
one ``vkCreateComputePipelines`` per (kernel, block, shared_size) however many threads launch at
once; a failed creation is retried next time. At most ``PIPELINES_PER_KERNEL`` are kept (least
recently used first out); an evicted pipeline is destroyed once no launch uses it (``Device.release``,
which also drops the command buffers recorded with it).
"""
from __future__ import annotations

import struct
from typing import List, Optional, Tuple

import vulkan as vk

from polykern.errors import DeviceError
from polykern.runtime.lazy import PIPELINES_PER_KERNEL, BoundedLazyMap

from . import coopmat, fma_probe
from .abi import KernelABI
from .device import SPIRV_API, Device
from .vkresult import vk_call

__all__ = ["KernelProgram"]

_SPEC_ENTRIES = None


def _spec_entries():
    """Specialization constants 0-2: the block shape; 3: a pk.shared_dynamic array's length; 4: the device's
    GLSL Fma is fused (runtime/fma_probe.py). An entry the shader does not declare has no effect."""
    global _SPEC_ENTRIES
    if _SPEC_ENTRIES is None:
        _SPEC_ENTRIES = [vk.VkSpecializationMapEntry(constantID=i, offset=4 * i, size=4) for i in range(5)]
    return _SPEC_ENTRIES


def check_supported(dev: Device, abi: KernelABI) -> None:
    """DeviceError if ``dev`` cannot run this shader at all."""
    k = abi.name
    need = SPIRV_API.get(abi.spirv_version)
    if need is None:
        raise DeviceError(f"kernel '{k}': unknown SPIR-V version {abi.spirv_version}", name="unsupported SPIR-V")
    if dev.api < need:
        raise DeviceError(f"kernel '{k}' is SPIR-V {abi.spirv_version[0]}.{abi.spirv_version[1]}, which needs Vulkan "
                          f"{need[0]}.{need[1]}; {dev.name} runs Vulkan {dev.api[0]}.{dev.api[1]} (rebuild with a "
                          "lower 'vulkan -spirv=')", name="unsupported SPIR-V")
    if "CooperativeMatrixKHR" in abi.capabilities:  # matrix fragments: the extension and each shape
        coopmat.check(k, dev.name, dev.cooperative_matrix, abi.matrix)
    missing = dev.missing_for(abi.capabilities, abi.shared_bytes, abi.preserved_widths)
    lost = [f for f in missing if f.startswith("shaderSignedZeroInfNanPreserve")]
    if lost:
        raise DeviceError(f"kernel '{k}' needs NaN/inf/-0 preserved ({', '.join(lost)}, "
                          f"VkPhysicalDeviceFloatControlsProperties), which {dev.name} does not report: "
                          "without it the driver may fold inf - inf or 0 / 0 to 0, breaking the IEEE "
                          "specials polykern.numerics promises", name="VK_ERROR_FEATURE_NOT_PRESENT")
    if missing:
        raise DeviceError(f"kernel '{k}' needs device features {', '.join(missing)} that {dev.name} does not "
                          "support (rebuild with a smaller 'vulkan -features=' and avoid the types/atomics that "
                          "need them)", name="VK_ERROR_FEATURE_NOT_PRESENT")
    lim = dev.limits
    if abi.shared_bytes > lim.max_shared_bytes:
        raise DeviceError(f"kernel '{k}' uses {abi.shared_bytes} bytes of shared memory; {dev.name} allows "
                          f"{lim.max_shared_bytes} (maxComputeSharedMemorySize)", name="limit exceeded")
    if abi.push_size > lim.max_push_constants:
        raise DeviceError(f"kernel '{k}' needs {abi.push_size} bytes of push constants; {dev.name} allows "
                          f"{lim.max_push_constants}", name="limit exceeded")
    if abi.buffer_count > lim.max_storage_buffers:
        raise DeviceError(f"kernel '{k}' binds {abi.buffer_count} storage buffers; {dev.name} allows "
                          f"{lim.max_storage_buffers} per stage", name="limit exceeded")


class KernelProgram:
    def __init__(self, dev: Device, abi: KernelABI, binary: bytes, fma_fused: Optional[bool] = None):
        """``fma_fused``: the value of specialization constant 4 for a kernel that declares it; None asks
        runtime/fma_probe.py (measured once per device)."""
        check_supported(dev, abi)
        self.dev, self.abi, self.fma_fused = dev, abi, fma_fused
        self.tokens: List[int] = []
        d = dev.handle
        try:
            with vk_call(f"vkCreateShaderModule (kernel '{abi.name}')"):
                self.shader = vk.vkCreateShaderModule(d, vk.VkShaderModuleCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, codeSize=len(binary), pCode=binary), None)
            self.tokens.append(dev.own(lambda s=self.shader: vk.vkDestroyShaderModule(d, s, None)))
            dev.count("shader_modules_created")
            bindings = [vk.VkDescriptorSetLayoutBinding(
                binding=b, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for b in range(abi.buffer_count)]
            with vk_call("vkCreateDescriptorSetLayout"):
                self.set_layout = vk.vkCreateDescriptorSetLayout(d, vk.VkDescriptorSetLayoutCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, bindingCount=len(bindings),
                    pBindings=bindings or None), None)
            self.tokens.append(dev.own(lambda s=self.set_layout: vk.vkDestroyDescriptorSetLayout(d, s, None)))
            ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=abi.push_size)]
            with vk_call("vkCreatePipelineLayout"):
                self.layout = vk.vkCreatePipelineLayout(d, vk.VkPipelineLayoutCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, setLayoutCount=1,
                    pSetLayouts=[self.set_layout], pushConstantRangeCount=1 if abi.push_size else 0,
                    pPushConstantRanges=ranges if abi.push_size else None), None)
            self.tokens.append(dev.own(lambda s=self.layout: vk.vkDestroyPipelineLayout(d, s, None)))
        except BaseException:
            self.close()
            raise
        self.pipelines: BoundedLazyMap = BoundedLazyMap(self._create_pipeline, PIPELINES_PER_KERNEL,
                                                        self._destroy_pipeline)

    def pipeline(self, block3: Tuple[int, int, int], shared_size: int = 0):
        """``(pipeline, lease)``: the compute pipeline for this block shape (and length of the
        pk.shared_dynamic array, if the kernel has one), created on first use, then cached; in use
        (never destroyed) until ``pipelines.release(lease)`` (or ``abandon(lease)``)."""
        (pipeline, _), lease = self.pipelines.acquire((block3, shared_size) if shared_size else block3)
        return pipeline, lease

    def _destroy_pipeline(self, value) -> None:
        self.dev.release(value[1])
        self.dev.count("pipelines_destroyed")

    def _create_pipeline(self, key):
        dev = self.dev
        dev.check_open()
        block3, shared = (key, 0) if isinstance(key[0], int) else key
        fused = False
        if self.abi.fma_fused_spec:
            fused = self.fma_fused if self.fma_fused is not None else fma_probe.fused(dev)
        data = struct.pack("<5I", *block3, shared or 1, int(fused))  # 1: the shader's default length
        spec = vk.VkSpecializationInfo(mapEntryCount=5, pMapEntries=_spec_entries(), dataSize=len(data),
                                       pData=vk.ffi.from_buffer(data))
        stage = vk.VkPipelineShaderStageCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            module=self.shader, pName=self.abi.entry, pSpecializationInfo=spec)
        info = vk.VkComputePipelineCreateInfo(sType=vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, stage=stage,
                                              layout=self.layout)
        with vk_call(f"vkCreateComputePipelines (kernel '{self.abi.name}', block {block3})"):
            pipeline = vk.vkCreateComputePipelines(dev.handle, dev.pipeline_cache, 1, [info], None)[0]
        d = dev.handle
        dev.count("pipelines_created")
        return pipeline, dev.own(lambda: vk.vkDestroyPipeline(d, pipeline, None))

    def close(self) -> None:
        """Destroy the pipelines, layouts and shader module (the module was garbage collected)."""
        pipelines = getattr(self, "pipelines", None)
        if pipelines is not None:
            pipelines.clear()
        tokens, self.tokens = self.tokens, []
        for t in reversed(tokens):
            self.dev.release(t)
