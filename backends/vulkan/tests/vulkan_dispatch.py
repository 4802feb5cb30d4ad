"""A minimal Vulkan compute dispatcher for tests: runs one of our SPIR-V shaders on the first
Vulkan device (lavapipe on CI hosts) with the ``vulkan`` binding, following exactly the launch ABI
recorded in FunctionInfo.attrs (bindings, push-constant layout, specialization ids).

It is the reference the real runtime (a later issue) will grow from; it is deliberately simple:
host-visible coherent buffers, one descriptor set, one fence wait per dispatch.
"""
from __future__ import annotations

import struct
from typing import Dict, Optional, Sequence

import numpy as np

_PACK = {"i32": "<i", "u32": "<I", "f32": "<f", "i64": "<q", "u64": "<Q", "f64": "<d"}


def parse_push_constants(attr: str):
    """"n@0:i32,a@4:f32" -> [(name, offset, slot)]."""
    out = []
    for item in filter(None, attr.split(",")):
        name, rest = item.split("@")
        off, slot = rest.split(":")
        out.append((name, int(off), slot))
    return out


def pack_push_constants(info, values: Dict[str, object]) -> bytes:
    layout = parse_push_constants(info.attrs["push_constants"])
    data = bytearray(int(info.attrs["push_constant_size"]))
    for name, off, slot in layout:
        v = values[name]
        if slot in ("f32", "f64"):
            v = float(v)
        else:
            v = int(v)  # bool -> 0/1; narrow ints were range-checked by the caller
        struct.pack_into(_PACK[slot], data, off, v)
    return bytes(data)


class VulkanDevice:
    """One instance + device + compute queue, with every optional feature lavapipe offers enabled."""

    def __init__(self):
        import vulkan as vk

        self.vk = vk
        app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, pApplicationName="polykern-test",
                                   apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
        self.instance = vk.vkCreateInstance(
            vk.VkInstanceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app), None)
        devices = vk.vkEnumeratePhysicalDevices(self.instance)
        if not devices:
            raise RuntimeError("no Vulkan physical device")
        self.physical = devices[0]
        self.name = vk.vkGetPhysicalDeviceProperties(self.physical).deviceName
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        self.family = next(i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
        f12 = vk.VkPhysicalDeviceVulkan12Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES)
        f11 = vk.VkPhysicalDeviceVulkan11Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                                  pNext=f12)
        feats = vk.VkPhysicalDeviceFeatures2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=f11)
        vk.vkGetPhysicalDeviceFeatures2(self.physical, feats)  # enable everything the device has
        queue = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                           queueFamilyIndex=self.family, queueCount=1, pQueuePriorities=[1.0])
        self.device = vk.vkCreateDevice(self.physical, vk.VkDeviceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, pNext=feats, queueCreateInfoCount=1,
            pQueueCreateInfos=[queue]), None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self.memprops = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self.pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, queueFamilyIndex=self.family), None)

    def _memory_type(self, bits: int) -> int:
        vk = self.vk
        want = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        for i in range(self.memprops.memoryTypeCount):
            if bits & (1 << i) and (self.memprops.memoryTypes[i].propertyFlags & want) == want:
                return i
        raise RuntimeError("no host-visible coherent memory type")

    def _buffer(self, nbytes: int):
        vk = self.vk
        buf = vk.vkCreateBuffer(self.device, vk.VkBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, size=max(nbytes, 4),
            usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        req = vk.vkGetBufferMemoryRequirements(self.device, buf)
        mem = vk.vkAllocateMemory(self.device, vk.VkMemoryAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, allocationSize=req.size,
            memoryTypeIndex=self._memory_type(req.memoryTypeBits)), None)
        vk.vkBindBufferMemory(self.device, buf, mem, 0)
        return buf, mem, req.size

    def run(self, spirv: bytes, info, args: Sequence[object], grid=(1, 1, 1), block=(1, 1, 1)):
        """Dispatch; NumPy array arguments are copied in and back (in place)."""
        vk = self.vk
        dev = self.device
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        names = [a.name for a in info.args]
        values = dict(zip(names, args))
        buffers = [a for a in info.args if a.is_buffer]
        bindings = {k: int(v) for k, v in (b.split("=") for b in filter(None, info.attrs["bindings"].split(",")))}
        created = []
        try:
            allocs = {}
            for a in buffers:
                arr = np.ascontiguousarray(values[a.name])
                buf, mem, size = self._buffer(arr.nbytes)
                created.append((buf, mem))
                mapped = vk.vkMapMemory(dev, mem, 0, size, 0)
                mapped[:arr.nbytes] = arr.tobytes()
                vk.vkUnmapMemory(dev, mem)
                allocs[a.name] = (buf, mem, size, arr)
            layout_bindings = [vk.VkDescriptorSetLayoutBinding(
                binding=bindings[a.name], descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for a in buffers]
            dsl = vk.vkCreateDescriptorSetLayout(dev, vk.VkDescriptorSetLayoutCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, bindingCount=len(layout_bindings),
                pBindings=layout_bindings or None), None)
            pc_size = int(info.attrs["push_constant_size"])
            ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=pc_size)]
            playout = vk.vkCreatePipelineLayout(dev, vk.VkPipelineLayoutCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, setLayoutCount=1, pSetLayouts=[dsl],
                pushConstantRangeCount=1 if pc_size else 0, pPushConstantRanges=ranges if pc_size else None), None)
            shader = vk.vkCreateShaderModule(dev, vk.VkShaderModuleCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, codeSize=len(spirv), pCode=spirv), None)
            spec_entries = [vk.VkSpecializationMapEntry(constantID=i, offset=4 * i, size=4) for i in range(3)]
            spec_data = struct.pack("<3I", *block)
            spec = vk.VkSpecializationInfo(mapEntryCount=3, pMapEntries=spec_entries, dataSize=len(spec_data),
                                           pData=vk.ffi.from_buffer(spec_data))
            stage = vk.VkPipelineShaderStageCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                module=shader, pName=info.attrs["entry"], pSpecializationInfo=spec)
            pipeline = vk.vkCreateComputePipelines(dev, None, 1, [vk.VkComputePipelineCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, stage=stage, layout=playout)], None)[0]
            pool = vk.vkCreateDescriptorPool(dev, vk.VkDescriptorPoolCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, maxSets=1, poolSizeCount=1,
                pPoolSizes=[vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                    descriptorCount=max(len(buffers), 1))]), None)
            dset = vk.vkAllocateDescriptorSets(dev, vk.VkDescriptorSetAllocateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, descriptorPool=pool, descriptorSetCount=1,
                pSetLayouts=[dsl]))[0]
            writes = [vk.VkWriteDescriptorSet(
                sType=vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, dstSet=dset, dstBinding=bindings[name],
                descriptorCount=1, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=buf, offset=0, range=size)])
                for name, (buf, _, size, _) in allocs.items()]
            if writes:
                vk.vkUpdateDescriptorSets(dev, len(writes), writes, 0, None)
            cmd = vk.vkAllocateCommandBuffers(dev, vk.VkCommandBufferAllocateInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=self.pool,
                level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
            vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
            vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
            vk.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, playout, 0, 1, [dset], 0, None)
            if pc_size:
                data = pack_push_constants(info, values)
                vk.vkCmdPushConstants(cmd, playout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, pc_size,
                                      vk.ffi.from_buffer(data))
            vk.vkCmdDispatch(cmd, *grid)
            vk.vkEndCommandBuffer(cmd)
            fence = vk.vkCreateFence(dev, vk.VkFenceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO), None)
            vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                                             commandBufferCount=1, pCommandBuffers=[cmd])], fence)
            vk.vkWaitForFences(dev, 1, [fence], vk.VK_TRUE, 10_000_000_000)
            for name, (buf, mem, size, arr) in allocs.items():
                mapped = vk.vkMapMemory(dev, mem, 0, size, 0)
                out = np.frombuffer(bytes(mapped[:arr.nbytes]), dtype=arr.dtype).reshape(arr.shape)
                vk.vkUnmapMemory(dev, mem)
                np.copyto(values[name], out) if isinstance(values[name], np.ndarray) else None
            vk.vkDestroyFence(dev, fence, None)
            vk.vkFreeCommandBuffers(dev, self.pool, 1, [cmd])
            vk.vkDestroyDescriptorPool(dev, pool, None)
            vk.vkDestroyPipeline(dev, pipeline, None)
            vk.vkDestroyShaderModule(dev, shader, None)
            vk.vkDestroyPipelineLayout(dev, playout, None)
            vk.vkDestroyDescriptorSetLayout(dev, dsl, None)
        finally:
            for buf, mem in created:
                vk.vkDestroyBuffer(dev, buf, None)
                vk.vkFreeMemory(dev, mem, None)


_DEVICE: Optional[VulkanDevice] = None
_DEVICE_ERROR: Optional[str] = None


def device() -> Optional[VulkanDevice]:
    """The shared test device, or None (``unavailable_reason()`` says why)."""
    global _DEVICE, _DEVICE_ERROR
    if _DEVICE is None and _DEVICE_ERROR is None:
        try:
            _DEVICE = VulkanDevice()
        except Exception as e:  # recorded and reported as the skip reason
            _DEVICE_ERROR = f"{type(e).__name__}: {e}"
    return _DEVICE


def unavailable_reason() -> str:
    device()
    return _DEVICE_ERROR or ""
