"""The logical Vulkan device: created once per process on first use, destroyed at exit.

It owns the compute queue (submissions serialized by a lock), a pipeline cache, the buffer pool
(buffers.py), a free list of :class:`CommandContext` (command pool + command buffer + fence +
descriptor pool: one per concurrent launch, reused), creation counters (``stats``) and every
Vulkan object it created, so :func:`shutdown` (run at exit, before the instance goes) can wait
for the device and destroy whatever is left.

Completion (Vulkan 1.2 timeline semaphores, which lavapipe has): every submission signals the next
value of the device's one timeline semaphore, so "is submission v done" is one counter read and
waiting for it one ``vkWaitSemaphores``; a launch that needs no host copy back returns right after
``vkQueueSubmit`` (streams.py). A context is recorded again only once its own submissions are done; its
kept command buffers are submittable while pending (simultaneous use). Nothing is destroyed
(``release``) while submitted work may still use it: release first waits for the submitted work.
Every submission goes to the one queue and each command buffer starts with a full memory barrier
(``CommandContext.begin``), so submissions run in submission order. A device without timeline
semaphores (Vulkan 1.1) waits for a fence after every submission, as before.

Features: every optional shader feature polykern's codegen may use and the device supports is
enabled; a shader needing one that is missing is refused with a :class:`DeviceError` naming it.
The float-controls properties shaderSignedZeroInfNanPreserveFloat16/32/64 are read too (recorded
in ``enabled``): a shader asking NaN/inf/-0 preserved for a width the device lacks is refused.
"""
from __future__ import annotations

import collections
import itertools
import os
import threading
from typing import Callable, Dict, List, Optional, Tuple

import vulkan as vk

from polykern.errors import DeviceError
from polykern.runtime.lazy import Lazy

from . import coopmat
from .buffers import BufferPool
from .descriptor_sets import SETS, DescriptorSets
from .instance import Instance, instance
from .timestamps import TimestampQueries, env_wants_timestamps, support_problem
from .vkresult import BINDING_ERRORS, device_error, vk_call

_lib = vk._vulkan.lib  # the raw entry points: the per-launch calls skip the binding's argument conversion

__all__ = ["Device", "CommandContext", "get", "shutdown", "STAGING_ENV", "TIMEOUT_ENV"]

STAGING_ENV = "POLYKERN_VULKAN_STAGING"  # 1: always stage through host buffers; 0: never; unset: auto
TIMEOUT_ENV = "POLYKERN_VULKAN_TIMEOUT_S"

CORE_FEATURES = ("shaderFloat64", "shaderInt64", "shaderInt16")
V11_FEATURES = ("storageBuffer16BitAccess",)
V12_FEATURES = ("shaderInt8", "shaderFloat16", "storageBuffer8BitAccess", "shaderBufferInt64Atomics",
                "shaderSharedInt64Atomics", "vulkanMemoryModel", "timelineSemaphore")
#: SPIR-V capability -> the device features it needs
CAPABILITY_FEATURES = {
    "Int8": ("shaderInt8",), "Int16": ("shaderInt16",), "Int64": ("shaderInt64",),
    "Float16": ("shaderFloat16",), "Float64": ("shaderFloat64",),
    "StorageBuffer8BitAccess": ("storageBuffer8BitAccess",),
    "StorageBuffer16BitAccess": ("storageBuffer16BitAccess",),
    "Int64Atomics": ("shaderBufferInt64Atomics",),
    # pk.subgroup_* (VkPhysicalDeviceSubgroupProperties: compute stage and the operation class)
    "GroupNonUniform": ("subgroup operations in compute shaders",),
    "GroupNonUniformVote": ("subgroup vote operations",),
    "GroupNonUniformArithmetic": ("subgroup arithmetic operations",),
    "GroupNonUniformBallot": ("subgroup ballot operations",),
    "GroupNonUniformShuffle": ("subgroup shuffle operations",),
    # matrix fragments (SPV_KHR_cooperative_matrix, which needs the Vulkan memory model): coopmat.py
    "VulkanMemoryModel": ("vulkanMemoryModel",),
    "CooperativeMatrixKHR": ("cooperativeMatrix",),
}
#: VkSubgroupFeatureFlagBits of each pseudo-feature above (the basic class also needs the compute stage)
SUBGROUP_OPERATIONS = {"subgroup operations in compute shaders": 0x1, "subgroup vote operations": 0x2,
                       "subgroup arithmetic operations": 0x4, "subgroup ballot operations": 0x8,
                       "subgroup shuffle operations": 0x10}
#: SPIR-V version -> the Vulkan API version that consumes it
SPIRV_API = {(1, 0): (1, 0), (1, 1): (1, 1), (1, 2): (1, 1), (1, 3): (1, 1), (1, 4): (1, 2), (1, 5): (1, 2),
             (1, 6): (1, 3)}

ALL_ACCESS = (vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_READ_BIT
              | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
WRITES = vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT
WORK_STAGES = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT


def _query_features(handle, api) -> Dict[str, bool]:
    chain: List[object] = []
    if api >= (1, 2):
        f12 = vk.VkPhysicalDeviceVulkan12Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES)
        f11 = vk.VkPhysicalDeviceVulkan11Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                                  pNext=f12)
        chain = [(f11, V11_FEATURES), (f12, V12_FEATURES)]
    else:
        f11 = vk.VkPhysicalDevice16BitStorageFeatures(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES)
        chain = [(f11, V11_FEATURES)]
    top = vk.VkPhysicalDeviceFeatures2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=chain[0][0])
    vk.vkGetPhysicalDeviceFeatures2(handle, top)
    out = {name: bool(getattr(top.features, name)) for name in CORE_FEATURES}
    for struct_, names in chain:
        out.update({name: bool(getattr(struct_, name)) for name in names})
    return out


FLOAT_CONTROLS_EXT = "VK_KHR_shader_float_controls"  # core in Vulkan 1.2
PRESERVE_PROPERTIES = {bits: f"shaderSignedZeroInfNanPreserveFloat{bits}" for bits in (16, 32, 64)}


def _float_controls_extension(handle, api) -> List[str]:
    """The device extension to enable for SPV_KHR_float_controls: none on Vulkan 1.2+ (core), else
    VK_KHR_shader_float_controls where the device has it."""
    if api >= (1, 2):
        return []
    names = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(handle, None)}
    return [FLOAT_CONTROLS_EXT] if FLOAT_CONTROLS_EXT in names else []


def _query_preserve(handle, api, extensions) -> Dict[str, bool]:
    """shaderSignedZeroInfNanPreserveFloat16/32/64 (VkPhysicalDeviceFloatControlsProperties); all False
    where the device has neither Vulkan 1.2 nor VK_KHR_shader_float_controls."""
    if api < (1, 2) and FLOAT_CONTROLS_EXT not in extensions:
        return {name: False for name in PRESERVE_PROPERTIES.values()}
    fc = vk.VkPhysicalDeviceFloatControlsProperties(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES)
    top = vk.VkPhysicalDeviceProperties2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=fc)
    vk.vkGetPhysicalDeviceProperties2(handle, top)
    return {name: bool(getattr(fc, name)) for name in PRESERVE_PROPERTIES.values()}


def _query_subgroups(handle, api) -> Dict[str, bool]:
    """The subgroup operation classes usable in compute shaders (VkPhysicalDeviceSubgroupProperties,
    Vulkan 1.1), and the subgroup size (``subgroup_size``; 0 before Vulkan 1.1)."""
    if api < (1, 1):
        return dict({name: False for name in SUBGROUP_OPERATIONS}, subgroup_size=0)
    sg = vk.VkPhysicalDeviceSubgroupProperties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES)
    top = vk.VkPhysicalDeviceProperties2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=sg)
    vk.vkGetPhysicalDeviceProperties2(handle, top)
    compute = bool(sg.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT)
    out = {name: compute and bool(sg.supportedOperations & bit) for name, bit in SUBGROUP_OPERATIONS.items()}
    out["subgroup_size"] = int(sg.subgroupSize)
    return out


def _enable_chain(api, enabled: Dict[str, bool], extra=None):
    """A VkPhysicalDeviceFeatures2 chain with exactly ``enabled`` switched on (structs kept alive);
    ``extra``: an extension's feature struct to chain too (Vulkan 1.2+)."""
    on = {k: vk.VK_TRUE for k, v in enabled.items() if v}
    if api >= (1, 2):
        more = {"pNext": extra} if extra is not None else {}
        f12 = vk.VkPhysicalDeviceVulkan12Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                                  **more,
                                                  **{k: v for k, v in on.items() if k in V12_FEATURES})
        f11 = vk.VkPhysicalDeviceVulkan11Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                                  pNext=f12, **{k: v for k, v in on.items() if k in V11_FEATURES})
        keep = [f12, f11]
    else:
        f11 = vk.VkPhysicalDevice16BitStorageFeatures(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
            **{k: v for k, v in on.items() if k in V11_FEATURES})
        keep = [f11]
    core = vk.VkPhysicalDeviceFeatures(**{k: v for k, v in on.items() if k in CORE_FEATURES})
    top = vk.VkPhysicalDeviceFeatures2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=f11,
                                       features=core)
    return top, keep + [core]


class Limits:
    def __init__(self, lim):
        self.max_group_count = tuple(int(x) for x in lim.maxComputeWorkGroupCount)
        self.max_group_size = tuple(int(x) for x in lim.maxComputeWorkGroupSize)
        self.max_invocations = int(lim.maxComputeWorkGroupInvocations)
        self.max_shared_bytes = int(lim.maxComputeSharedMemorySize)
        self.max_storage_range = int(lim.maxStorageBufferRange)
        self.max_push_constants = int(lim.maxPushConstantsSize)
        self.max_bound_sets = int(lim.maxBoundDescriptorSets)
        self.max_storage_buffers = int(lim.maxPerStageDescriptorStorageBuffers)


_BARRIERS: Dict[Tuple[int, int], object] = {}  # (src, dst access) -> VkMemoryBarrier, made once


def _memory_barrier(src_access: int, dst_access: int):
    mb = _BARRIERS.get((src_access, dst_access))
    if mb is None:
        mb = _BARRIERS[(src_access, dst_access)] = vk.VkMemoryBarrier(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER, srcAccessMask=src_access, dstAccessMask=dst_access)
    return mb


class Submit:
    """A ``VkSubmitInfo*`` for one command buffer (``ptr``, for the raw ``vkQueueSubmit``) and the arrays it
    points at; with a timeline it signals the device's semaphore with the value in ``signal[0]``."""

    __slots__ = ("ptr", "alive")

    def __init__(self, ptr, alive):
        self.ptr, self.alive = ptr, alive


def submit_info(dev: "Device", cmd, signal) -> Submit:
    ffi = vk.ffi
    cmds = ffi.new("VkCommandBuffer[1]", [cmd])
    fields = {"sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, "commandBufferCount": 1, "pCommandBuffers": cmds}
    alive = [cmds]
    if dev.timeline is not None:
        sems = ffi.new("VkSemaphore[1]", [dev.timeline])
        tl = ffi.new("VkTimelineSemaphoreSubmitInfo*", {
            "sType": vk.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO, "signalSemaphoreValueCount": 1,
            "pSignalSemaphoreValues": signal})
        fields.update(pNext=tl, signalSemaphoreCount=1, pSignalSemaphores=sems)
        alive += [sems, tl, signal]
    return Submit(ffi.new("VkSubmitInfo*", fields), alive)


class CommandContext:
    """What one launch records into: its own command pool (so threads never share one), a command
    buffer, a fence, and its descriptor sets (descriptor_sets.py: kept across launches with the same
    bindings). The structs every launch passes (begin and submit info, barriers) are made once."""

    def __init__(self, dev: "Device", capacity: int):
        self.dev = dev
        d = dev.handle
        self.pool = vk.vkCreateCommandPool(d, vk.VkCommandPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, queueFamilyIndex=dev.family,
            flags=vk.VK_COMMAND_POOL_CREATE_TRANSIENT_BIT), None)
        self.cmd = vk.vkAllocateCommandBuffers(d, vk.VkCommandBufferAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=self.pool,
            level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        self.fence = vk.vkCreateFence(d, vk.VkFenceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO), None)
        self.begin_info = vk.VkCommandBufferBeginInfo(sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                                      flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        # Launches kept for replay (execute's ``keep``): key -> (command buffer, its submit info), recorded
        # once from keep_pool; they bind kept descriptor sets, so they go whenever those go.
        self.kept: Dict[tuple, Tuple[object, object]] = {}
        self.spare: List[object] = []  # kept command buffers reset to the initial state, to record again
        self.keep_pool = None
        # kept buffers are submitted again while an earlier submission of them may still run
        self.begin_kept = vk.VkCommandBufferBeginInfo(sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                                      flags=vk.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT)
        self.pending = 0  # the timeline value of this context's latest submission
        self.signal = vk.ffi.new("uint64_t[1]")  # the value the next submission signals
        self.submit_info = submit_info(dev, self.cmd, self.signal)
        self.sets = DescriptorSets(dev, capacity, on_reset=self._drop_kept)
        self.timer: Optional[TimestampQueries] = None  # made on the first timed launch (timestamps.py)
        self.timed = False  # this recording writes the timestamps
        self.token = dev.own(self._destroy)

    def _drop_kept(self) -> None:
        if self.keep_pool is not None and (self.kept or self.spare):
            vk.vkResetCommandPool(self.dev.handle, self.keep_pool, 0)  # every kept buffer to the initial state
        self.spare.extend(cmd for cmd, _ in self.kept.values())
        self.kept.clear()

    def _destroy(self) -> None:
        d = self.dev.handle
        self.sets.destroy()
        if self.keep_pool is not None:
            vk.vkDestroyCommandPool(d, self.keep_pool, None)
        if self.timer is not None:
            self.timer.destroy()
        vk.vkDestroyFence(d, self.fence, None)
        vk.vkDestroyCommandPool(d, self.pool, None)  # frees the command buffer

    # -- recording
    def prepare(self, record: Callable[["CommandContext"], None], descriptors: int, keep) -> object:
        """The submit info of this launch: recorded now by ``record(ctx)`` into the one-time command
        buffer, or, with a ``keep`` key (everything the recording depends on besides the context's
        descriptor sets: pipeline, bindings, push constants, grid), replayed from the command buffer a
        launch with the same key recorded (and timestamps the same way), else recorded into a new one
        and kept (at most SETS per context)."""
        if keep is not None and self.sets.epoch == self.dev.release_epoch:
            hit = self.kept.get((keep, self.dev.timestamps))
            if hit is not None:
                self.timed = self.dev.timestamps
                self.dev.count("launches_replayed")
                return hit[1]
        self.dev.wait_value(self.pending, "the former work of a command context")  # nothing of it in use now
        if descriptors > self.sets.capacity:
            self.sets.grow(max(descriptors, 2 * self.sets.capacity))
        if keep is None:
            self.begin(descriptors)
            record(self)
            self.end()
            return self.submit_info
        self.sets.check_epoch()
        key = (keep, self.dev.timestamps)
        hit = self.kept.get(key)
        if hit is not None:
            self.timed = self.dev.timestamps
            self.dev.count("launches_replayed")
            return hit[1]
        self.sets.make_room()  # no descriptor pool reset (which drops the kept buffers) while recording
        if len(self.kept) >= SETS:
            self._drop_kept()
        d = self.dev.handle
        if self.keep_pool is None:
            self.keep_pool = vk.vkCreateCommandPool(d, vk.VkCommandPoolCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, queueFamilyIndex=self.dev.family), None)
        cmd = self.spare.pop() if self.spare else vk.vkAllocateCommandBuffers(d, vk.VkCommandBufferAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=self.keep_pool,
            level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        one_time, self.cmd = self.cmd, cmd
        try:
            self.begin(descriptors, kept=True)
            record(self)
            self.end()
        except BaseException:
            self.spare.append(cmd)
            self._drop_kept()  # resets cmd (maybe left recording) with the others
            raise
        finally:
            self.cmd = one_time
        info = submit_info(self.dev, cmd, self.signal)
        self.kept[key] = (cmd, info)
        return info

    def begin(self, descriptors: int, kept: bool = False) -> None:
        d = self.dev.handle
        if not kept:
            vk.vkResetCommandPool(d, self.pool, 0)
        vk.vkBeginCommandBuffer(self.cmd, self.begin_kept if kept else self.begin_info)
        # Earlier submissions' device writes (kernels, copies) -> everything this one does.
        self.barrier(WORK_STAGES, WRITES, WORK_STAGES, ALL_ACCESS)
        self.timed = self.dev.timestamps
        if self.timed:
            if self.timer is None:
                self.timer = TimestampQueries(d, self.dev.timestamp_bits, self.dev.timestamp_period_ns)
            self.timer.start(self.cmd)

    def barrier(self, src_stage, src_access, dst_stage, dst_access) -> None:
        vk.vkCmdPipelineBarrier(self.cmd, src_stage, dst_stage, 0, 1, [_memory_barrier(src_access, dst_access)], 0,
                                None, 0, None)

    def descriptor_set(self, layout, buffers: List[Tuple[int, object, int]]):
        """The set for ``layout`` with binding b pointing at each (b, VkBuffer, range) (reused when a
        launch of this context bound the same ones: descriptor_sets.py)."""
        return self.sets.get(layout, buffers)

    def copy(self, src, dst, nbytes: int) -> None:
        vk.vkCmdCopyBuffer(self.cmd, src, dst, 1, [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=nbytes)])

    def end(self) -> None:
        if self.timed:
            self.timer.stop(self.cmd)
        # Device writes -> host reads after the fence.
        self.barrier(WORK_STAGES, WRITES, vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT)
        vk.vkEndCommandBuffer(self.cmd)


class Device:
    def __init__(self, inst: Instance):
        pd = inst.chosen
        self.instance = inst
        self.physical = pd
        self.index = pd.index
        self.name = pd.name
        self.description = pd.describe()
        self.api = min(inst.api, pd.api)
        self.family = pd.compute_family
        props = vk.vkGetPhysicalDeviceProperties(pd.handle)
        self.limits = Limits(props.limits)
        self.timestamp_period_ns = float(props.limits.timestampPeriod)
        fam = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd.handle)[self.family]
        self.timestamp_bits = int(fam.timestampValidBits)
        self.supported = _query_features(pd.handle, self.api)
        self.enabled = dict(self.supported)
        extensions = _float_controls_extension(pd.handle, self.api)
        self.enabled.update(_query_preserve(pd.handle, self.api, extensions))  # properties: always "on"
        subgroups = _query_subgroups(pd.handle, self.api)
        self.subgroup_size = subgroups.pop("subgroup_size")
        self.enabled.update(subgroups)  # properties too
        self.cooperative_matrix = coopmat.query(inst.handle, pd.handle, self.api)  # matrix fragments
        self.enabled["cooperativeMatrix"] = self.cooperative_matrix.missing is None
        try:
            self.handle = self._create_logical(pd, extensions)
        except DeviceError as e:
            # VK_KHR_shader_bfloat16 (for bf16 fragments) is the newest thing enabled here: a driver that
            # lists it but refuses it must not cost the device; bf16 fragments are then refused, naming why
            if not self.cooperative_matrix.uses_bf16:
                raise
            self.cooperative_matrix = self.cooperative_matrix.without_bf16(
                f"vkCreateDevice refused it ({str(e).splitlines()[0][:200]})")
            self.handle = self._create_logical(pd, extensions)
        self.queue = vk.vkGetDeviceQueue(self.handle, self.family, 0)
        mp = vk.vkGetPhysicalDeviceMemoryProperties(pd.handle)
        self.memory_types = [(int(mp.memoryTypes[i].propertyFlags), int(mp.memoryTypes[i].heapIndex))
                             for i in range(mp.memoryTypeCount)]
        forced = os.environ.get(STAGING_ENV, "").strip().lower()
        if forced in ("1", "true", "yes", "on"):
            self.staging = True
        elif forced in ("0", "false", "no", "off"):
            self.staging = False
        else:  # discrete GPUs: device-local memory + staging copies; UMA/CPU devices: map device memory
            self.staging = pd.type == vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
        self.timeout_ns = int(float(os.environ.get(TIMEOUT_ENV, "600")) * 1e9)
        self.closed = False
        self.stats: collections.Counter = collections.Counter()
        self._lock = threading.Lock()  # stats, owned objects, context free list
        self._queue_lock = threading.Lock()
        self._owned: Dict[int, Callable[[], None]] = {}
        self._tokens = itertools.count(1)
        self.release_epoch = 0  # advanced by every release: handles the driver may reuse (descriptor_sets.py)
        self._contexts: List[CommandContext] = []
        self.timestamps = False  # set_timestamps: GPU time of every launch into gpu_seconds (timestamps.py)
        self.gpu_seconds = 0.0
        self.last_gpu_seconds: Optional[float] = None
        if env_wants_timestamps():
            self.set_timestamps(True)
        self.pipeline_cache = vk.vkCreatePipelineCache(self.handle, vk.VkPipelineCacheCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO), None)
        self.timeline = None  # the timeline semaphore every submission signals (None: fences, Vulkan 1.1)
        self.submitted = 0  # the value of the latest submission
        self.completed = 0  # a value known to be reached
        if self.enabled.get("timelineSemaphore"):
            self.timeline = vk.vkCreateSemaphore(self.handle, vk.VkSemaphoreCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, pNext=vk.VkSemaphoreTypeCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                    semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE, initialValue=0)), None)
            self._wait_sems = vk.ffi.new("VkSemaphore[1]", [self.timeline])
        self.pool = BufferPool(self)
        inst.before_close(self.close)  # the logical device goes before the instance

    # -- bookkeeping

    def _create_logical(self, pd, extensions):
        """vkCreateDevice with ``extensions``, the cooperative-matrix ones and exactly ``enabled`` on."""
        extensions = list(extensions) + list(self.cooperative_matrix.extensions)
        top, keep = _enable_chain(self.api, self.enabled, self.cooperative_matrix.feature)
        queue = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                           queueFamilyIndex=self.family, queueCount=1, pQueuePriorities=[1.0])
        with vk_call(f"vkCreateDevice on {self.name}"):
            handle = vk.vkCreateDevice(pd.handle, vk.VkDeviceCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, pNext=top, queueCreateInfoCount=1,
                pQueueCreateInfos=[queue], enabledExtensionCount=len(extensions),
                ppEnabledExtensionNames=extensions or None), None)
        del keep
        return handle
    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.stats[key] += n

    def own(self, destroy: Callable[[], None]) -> int:
        with self._lock:
            token = next(self._tokens)
            self._owned[token] = destroy
            return token

    def release(self, token: int) -> None:
        """Destroy an owned object once the submitted work is done (no-op once the device is shut down:
        shutdown destroyed it)."""
        try:
            self.wait_all("work that may use an object about to be destroyed")
        except DeviceError:  # lost device / timeout: the work will never use it again; destroy it all the same
            self.count("release_wait_errors")
        with self._lock:
            destroy = self._owned.pop(token, None)
            self.release_epoch += 1
            if self.closed:
                return
        if destroy is not None:
            destroy()

    def check_open(self) -> None:
        if self.closed:
            raise DeviceError("the Vulkan device was shut down (interpreter exit)", name="VK_ERROR_DEVICE_LOST")

    def set_timestamps(self, on: bool = True) -> None:
        """Time every launch on the device from now on (or stop): ``gpu_seconds`` sums the launches'
        device times, ``last_gpu_seconds`` holds the latest. DeviceError where the queue cannot."""
        if on:
            why = support_problem(self.name, self.timestamp_bits, self.timestamp_period_ns)
            if why:
                raise DeviceError(f"Vulkan: cannot time launches on the device: {why}", name="timestamps")
        self.timestamps = bool(on)

    # -- memory types
    def memory_type(self, type_bits: int, preferences) -> int:
        for want in preferences:
            for i, (flags, _) in enumerate(self.memory_types):
                if type_bits & (1 << i) and flags & want == want:
                    return i
        raise DeviceError(f"Vulkan: no memory type with properties {preferences} for bits {type_bits:#x}",
                          name="no memory type")

    # -- capabilities
    def missing_for(self, capabilities, shared_bytes: int, preserved_widths=()) -> List[str]:
        """Device features (and float-controls properties, for the float widths whose NaN/inf/-0 the
        shader asks preserved) a shader with these SPIR-V capabilities needs but this device lacks."""
        need = {PRESERVE_PROPERTIES[bits] for bits in preserved_widths}
        for cap in capabilities:
            need.update(CAPABILITY_FEATURES.get(cap, ()))
        if "Int64Atomics" in capabilities and shared_bytes:
            need.add("shaderSharedInt64Atomics")
        return sorted(f for f in need if not self.enabled.get(f))

    # -- command execution
    def _acquire_context(self, descriptors: int, idle: bool = False) -> CommandContext:
        """A free context: the latest returned (its kept launches replay), or with ``idle`` one whose work is
        done (it records without waiting), else a new one."""
        if idle and self._contexts and self._contexts[-1].pending > self.completed:
            self.reached(self.submitted)  # refresh ``completed``
        with self._lock:
            for i in range(len(self._contexts) - 1, -1, -1):
                if not idle or self._contexts[i].pending <= self.completed:
                    return self._contexts.pop(i)
        self.count("command_contexts_created")
        with vk_call("creating a command context"):
            return CommandContext(self, max(16, descriptors))

    def execute(self, record: Callable[[CommandContext], None], descriptors: int = 0, what: str = "launch",
                keep=None, wait: bool = True, stream=None) -> None:
        """Record with ``record(ctx)``, submit, and (``wait``, or where the device has no timeline semaphore,
        or while launches are timed) wait. ``keep``: a hashable key of everything the recording depends on
        but the descriptor sets (CommandContext.prepare): a launch with a key a former launch of the context
        had replays that one's command buffer instead of recording. ``stream`` (streams.VulkanStream, None:
        the default stream, which is all of the device's work) learns the submission's timeline value. A
        failure after submission (timeout, device lost) raises DeviceError with ``submitted = True``: the
        context (and anything the caller bound) may still be in use by the device and must not be reused."""
        self.check_open()
        ctx = self._acquire_context(descriptors, idle=keep is None)
        submitted = False
        try:
            with vk_call(f"recording the {what}"):
                info = ctx.prepare(record, descriptors, keep)
            timeline = self.timeline is not None
            with self._queue_lock:
                self.check_open()
                value = self.submitted + 1
                ctx.signal[0] = value
                with vk_call(f"vkQueueSubmit ({what})"):
                    rc = _lib.vkQueueSubmit(self.queue, 1, info.ptr, vk.ffi.NULL if timeline else ctx.fence)
                    if rc != vk.VK_SUCCESS:
                        raise vk.exception_codes[rc]
                submitted = True
                if timeline:
                    self.submitted = ctx.pending = value
                    if stream is not None:
                        stream.last = value
            if not timeline:
                self._wait_fence(ctx, what)
            elif wait or ctx.timed:
                self.wait_value(value, f"the {what}")
            if ctx.timed:
                took = ctx.timer.seconds()
                with self._lock:
                    self.gpu_seconds += took
                    self.last_gpu_seconds = took
        except DeviceError as e:
            e.submitted = submitted  # type: ignore[attr-defined]
            if not submitted:
                self._recycle(ctx)
            raise
        except BaseException:
            if not submitted:
                self._recycle(ctx)
            raise
        self._recycle(ctx)

    def _wait_fence(self, ctx: CommandContext, what: str) -> None:
        try:
            vk.vkWaitForFences(self.handle, 1, [ctx.fence], vk.VK_TRUE, self.timeout_ns)
        except BINDING_ERRORS as e:
            raise self._wait_error(what, e) from None
        with vk_call("vkResetFences"):
            vk.vkResetFences(self.handle, 1, [ctx.fence])

    def _wait_error(self, what: str, e) -> DeviceError:
        err = device_error(f"waiting for the {what}", e)
        if isinstance(e, vk.VkTimeout):
            err = DeviceError(f"Vulkan: the {what} did not finish within {self.timeout_ns / 1e9:g} s "
                              f"({TIMEOUT_ENV})", code=err.code, name=err.name)
        return err

    # -- the timeline
    def reached(self, value: int) -> bool:
        """Whether the submission with timeline value ``value`` has finished (never waits)."""
        if value <= self.completed or self.timeline is None:
            return True
        counter = vk.ffi.new("uint64_t[1]")  # per call, no lock: a finalizer may wait on any thread at any time
        with vk_call("vkGetSemaphoreCounterValue"):
            rc = _lib.vkGetSemaphoreCounterValue(self.handle, self.timeline, counter)
            if rc != vk.VK_SUCCESS:
                raise vk.exception_codes[rc]
            got = int(counter[0])
        if got > self.completed:
            self.completed = got
        return got >= value

    def wait_value(self, value: int, what: str = "submitted work") -> None:
        """Wait until the submission with timeline value ``value`` (and every earlier one) has finished."""
        if value <= self.completed or self.timeline is None or self.closed:
            return
        values = vk.ffi.new("uint64_t[1]", [value])  # per call, no lock (see reached)
        info = vk.ffi.new("VkSemaphoreWaitInfo*", {"sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                                   "semaphoreCount": 1, "pSemaphores": self._wait_sems,
                                                   "pValues": values})
        rc = _lib.vkWaitSemaphores(self.handle, info, self.timeout_ns)
        if rc != vk.VK_SUCCESS:
            raise self._wait_error(what, vk.exception_codes[rc]())
        if value > self.completed:
            self.completed = value

    def wait_all(self, what: str = "submitted work") -> None:
        """Wait for everything submitted so far (before the host touches memory the device may use)."""
        self.wait_value(self.submitted, what)

    def _recycle(self, ctx: CommandContext) -> None:
        with self._lock:
            self._contexts.append(ctx)

    # -- shutdown
    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            owned = sorted(self._owned.items(), reverse=True)
            self._owned.clear()
        with self._queue_lock:
            try:
                vk.vkDeviceWaitIdle(self.handle)
            except BINDING_ERRORS:
                pass  # a lost device is destroyed all the same
            for _, destroy in owned:
                try:
                    destroy()
                except Exception:  # at exit: destroy the rest regardless
                    pass
            vk.vkDestroyPipelineCache(self.handle, self.pipeline_cache, None)
            if self.timeline is not None:
                vk.vkDestroySemaphore(self.handle, self.timeline, None)
            vk.vkDestroyDevice(self.handle, None)


_DEVICE: Lazy[Device] = Lazy(lambda: Device(instance()))


def get() -> Device:
    """The process-wide device (created on first call, thread-safe; a failed creation is retried)."""
    try:
        return _DEVICE.get()
    except BINDING_ERRORS as e:
        raise device_error("creating the Vulkan device", e) from None


def peek() -> Optional[Device]:
    """The device if it was created, else None (never creates it)."""
    return _DEVICE.get() if _DEVICE.done else None


def shutdown() -> None:
    dev = peek()
    if dev is not None:
        dev.close()
