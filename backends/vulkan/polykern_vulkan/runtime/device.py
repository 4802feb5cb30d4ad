"""The logical Vulkan device: created once per process on first use, destroyed at exit.

It owns the compute queues (queues.py: one per stream, where the family has several; submissions to one
VkQueue serialized by its lock), a pipeline cache, the buffer pool
(buffers.py), a free list of :class:`CommandContext` (command pool + command buffer + fence +
descriptor pool: one per concurrent launch, reused), creation counters (``stats``) and every
Vulkan object it created, so :func:`shutdown` (run at exit, before the instance goes) can wait
for the device and destroy whatever is left.

Completion (Vulkan 1.2 timeline semaphores, which lavapipe has): every submission signals the next
value of its queue's timeline semaphore, so "is submission v of queue i done" is one counter read and
waiting for it one ``vkWaitSemaphores``; a launch that needs no host copy back returns right after
``vkQueueSubmit`` (streams.py). A point of the device's work is {queue index: value} (``wait_for``);
``wait_all`` waits for every queue's latest. A context is recorded again only once its own submissions
(on any queue: ``pending``) are done; its kept command buffers are submittable while pending
(simultaneous use), to any queue of the family. Nothing is destroyed (``release``) while submitted work
may still use it: release first waits for the work submitted to every queue. Each command buffer starts
with a full memory barrier (``CommandContext.begin``), so a queue runs its submissions in order; a
submission on another queue is ordered by the semaphore waits it carries (``execute``). A device without
timeline semaphores (Vulkan 1.1) uses one queue and waits for a fence after every submission.

Features: every optional shader feature polykern's codegen may use and the device supports is
enabled; a shader needing one that is missing is refused with a :class:`DeviceError` naming it.
The float-controls properties shaderSignedZeroInfNanPreserveFloat16/32/64 are read too (recorded
in ``enabled``): a shader asking NaN/inf/-0 preserved for a width the device lacks is refused.
"""
from __future__ import annotations

import collections
import contextlib
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
from .queues import Queue, lane_queues, make_queues, queue_cap, stream_lane
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
WAIT_STAGES = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT  # a semaphore wait holds back all of the submission


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
    points at; with timelines it signals the semaphore in the context's ``signal_sem[0]`` with the value in
    its ``signal[0]`` and waits for the first ``waits(n)`` entries of its wait arrays (``tl``: the
    VkTimelineSemaphoreSubmitInfo, None without timelines)."""

    __slots__ = ("ptr", "tl", "alive")

    def __init__(self, ptr, tl, alive):
        self.ptr, self.tl, self.alive = ptr, tl, alive

    def waits(self, n: int) -> None:
        self.ptr.waitSemaphoreCount = n
        self.tl.waitSemaphoreValueCount = n


def submit_info(ctx: "CommandContext", cmd) -> Submit:
    ffi = vk.ffi
    cmds = ffi.new("VkCommandBuffer[1]", [cmd])
    fields = {"sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, "commandBufferCount": 1, "pCommandBuffers": cmds}
    alive = [cmds]
    tl = None
    if ctx.dev.timelines:
        tl = ffi.new("VkTimelineSemaphoreSubmitInfo*", {
            "sType": vk.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO, "signalSemaphoreValueCount": 1,
            "pSignalSemaphoreValues": ctx.signal, "pWaitSemaphoreValues": ctx.wait_values})
        fields.update(pNext=tl, signalSemaphoreCount=1, pSignalSemaphores=ctx.signal_sem,
                      pWaitSemaphores=ctx.wait_sems, pWaitDstStageMask=ctx.wait_stages)
        alive.append(tl)
    return Submit(ffi.new("VkSubmitInfo*", fields), tl, alive)


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
        self.pending: Dict[int, int] = {}  # queue index -> the value of this context's latest submission there
        # what the next submission signals and waits for (every submit info of the context points here)
        lanes = len(dev.queues)
        self.signal = vk.ffi.new("uint64_t[1]")
        self.signal_sem = vk.ffi.new("VkSemaphore[1]")
        self.wait_sems = vk.ffi.new("VkSemaphore[]", lanes)
        self.wait_values = vk.ffi.new("uint64_t[]", lanes)
        self.wait_stages = vk.ffi.new("VkPipelineStageFlags[]", [WAIT_STAGES] * lanes)
        self.submit_info = submit_info(self, self.cmd)
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
        if keep is not None and self.replays(keep):
            self.timed = self.dev.timestamps
            self.dev.count("launches_replayed")
            return self.kept[(keep, self.dev.timestamps)][1]
        self.dev.wait_for(self.pending, "the former work of a command context")  # nothing of it in use now
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
        info = submit_info(self, cmd)
        self.kept[key] = (cmd, info)
        return info

    def replays(self, keep) -> bool:
        """Whether ``prepare`` would replay a kept command buffer for ``keep`` (no recording, no wait)."""
        return (keep, self.dev.timestamps) in self.kept and self.sets.epoch == self.dev.release_epoch

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
        self.family_queue_count = int(fam.queueCount)
        self.timelines = bool(self.enabled.get("timelineSemaphore"))  # else fences (Vulkan 1.1): one queue
        plan = lane_queues(self.family_queue_count, queue_cap()) if self.timelines else [0]
        try:
            self.handle = self._create_logical(pd, extensions, plan)
        except DeviceError as e:
            # VK_KHR_shader_bfloat16 (for bf16 fragments) is the newest thing enabled here: a driver that
            # lists it but refuses it must not cost the device; bf16 fragments are then refused, naming why
            if not self.cooperative_matrix.uses_bf16:
                raise
            self.cooperative_matrix = self.cooperative_matrix.without_bf16(
                f"vkCreateDevice refused it ({str(e).splitlines()[0][:200]})")
            self.handle = self._create_logical(pd, extensions, plan)
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
        self._lock = threading.Lock()  # stats, owned objects, context free list, stream count
        self._streams = 0  # non-default streams made (stream_queue hands out their queues in turn)
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
        # lane i on family queue plan[i]; queue 0 is the default stream's (queues.py)
        self.queues: List[Queue] = make_queues(self, plan, self.timelines)
        self.pool = BufferPool(self)
        inst.before_close(self.close)  # the logical device goes before the instance

    # -- bookkeeping

    def _create_logical(self, pd, extensions, plan: List[int]):
        """vkCreateDevice with ``extensions``, the cooperative-matrix ones, exactly ``enabled`` on and the
        family queues ``plan`` names (all of one priority)."""
        extensions = list(extensions) + list(self.cooperative_matrix.extensions)
        top, keep = _enable_chain(self.api, self.enabled, self.cooperative_matrix.feature)
        count = max(plan) + 1
        queue = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                           queueFamilyIndex=self.family, queueCount=count,
                                           pQueuePriorities=[1.0] * count)
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
    def _free(self, pending: Dict[int, int], q: Optional[Queue]) -> bool:
        """Whether a context's work (``pending``) is known finished but maybe that on ``q`` (no Vulkan call:
        ``completed`` as last read)."""
        queues = self.queues
        return all(v <= queues[i].completed or queues[i] is q for i, v in pending.items())

    def _acquire_context(self, descriptors: int, keep, q: Queue) -> CommandContext:
        """A free context for a submission to ``q`` that waits for no other queue's work: for a launch kept for
        replay (``keep``) the latest returned that kept it (it replays), else the latest whose work on other
        queues is done (recording waits for its work on ``q``, which this submission follows anyway); for
        others (one-time recordings) the latest whose work is all done (it records without waiting); else a
        new one. (Recording into a context busy on another queue would make the host wait for that stream.)"""
        ctxs = self._contexts
        if keep is not None and ctxs and ctxs[-1].replays(keep):  # the usual repeated launch
            with self._lock:
                if ctxs and ctxs[-1].replays(keep):
                    return ctxs.pop()
        on = q if keep is not None else None
        for refresh in (False, True):
            if refresh:
                for o in self.queues:  # read the semaphores' counters: ``completed`` may be behind
                    o.reached(o.submitted)
            with self._lock:
                if keep is not None:
                    for i in range(len(ctxs) - 1, -1, -1):
                        if ctxs[i].replays(keep):
                            return ctxs.pop(i)
                for i in range(len(ctxs) - 1, -1, -1):
                    if self._free(ctxs[i].pending, on):
                        return ctxs.pop(i)
            if not ctxs:
                break
        self.count("command_contexts_created")
        with vk_call("creating a command context"):
            return CommandContext(self, max(16, descriptors))

    def stream_queue(self) -> Queue:
        """The queue of a new non-default stream: the next of queues 1.. in turn (queue 0 where there is one)."""
        with self._lock:
            k, self._streams = self._streams, self._streams + 1
        return self.queues[stream_lane(len(self.queues), k)]

    def _waits(self, q: Queue, stream) -> Tuple[Dict[int, int], Dict[int, int]]:
        """(the {queue: value} a submission to ``q`` for ``stream`` waits for, the stream's waits it took).
        The default stream (None, or ``everything``) waits for the latest submission of every other queue, a
        stream's submission for queue 0's (CUDA's legacy default stream); a stream's ``wait_event`` values are
        taken. What ``q`` already waited for (``seen``: a queue runs in order) is left out."""
        queues, seen = self.queues, q.seen
        want: Dict[int, int] = {}
        for o in (queues if stream is None or stream.everything else queues[:1]):
            v = o.submitted
            if o is not q and v > seen[o.index]:
                want[o.index] = v
        taken: Dict[int, int] = {}
        if stream is not None and stream.waits:
            taken, stream.waits = stream.waits, {}
            for j, v in taken.items():
                if j != q.index and v > seen[j] and v > want.get(j, 0):
                    want[j] = v
        return want, taken

    def execute(self, record: Callable[[CommandContext], None], descriptors: int = 0, what: str = "launch",
                keep=None, wait: bool = True, stream=None) -> None:
        """Record with ``record(ctx)``, submit to the queue of ``stream`` (streams.VulkanStream; None: the
        default stream, queue 0, ordered after all of the device's work) and (``wait``, or where the device has
        no timeline semaphore, or while launches are timed) wait. ``keep``: a hashable key of everything the
        recording depends on but the descriptor sets (CommandContext.prepare): a launch with a key a former
        launch of the context had replays that one's command buffer instead of recording. ``stream`` learns
        the submission's timeline value. A failure after submission (timeout, device lost) raises DeviceError
        with ``submitted = True``: the context (and anything the caller bound) may still be in use by the
        device and must not be reused."""
        self.check_open()
        q = self.queues[0] if stream is None else stream.queue
        ctx = self._acquire_context(descriptors, keep, q)
        submitted = False
        try:
            with vk_call(f"recording the {what}"):
                info = ctx.prepare(record, descriptors, keep)
            timeline = self.timelines
            with q.lock:
                self.check_open()
                value = q.submitted + 1
                want = taken = None
                if timeline:
                    ctx.signal[0] = value
                    ctx.signal_sem[0] = q.semaphore
                    if len(self.queues) > 1:
                        want, taken = self._waits(q, stream)
                        for n, (j, v) in enumerate(want.items()):
                            ctx.wait_sems[n] = self.queues[j].semaphore
                            ctx.wait_values[n] = v
                        info.waits(len(want))
                with vk_call(f"vkQueueSubmit ({what})"):
                    rc = _lib.vkQueueSubmit(q.handle, 1, info.ptr, vk.ffi.NULL if timeline else ctx.fence)
                    if rc != vk.VK_SUCCESS:
                        if taken:  # not submitted: the stream's next submission still waits
                            for j, v in taken.items():
                                stream.waits[j] = max(v, stream.waits.get(j, 0))
                        raise vk.exception_codes[rc]
                submitted = True
                if timeline:
                    q.submitted = ctx.pending[q.index] = value
                    if stream is not None:
                        stream.last = value
                    if want:
                        for j, v in want.items():
                            q.seen[j] = v
                        self.count("queue_waits", len(want))
            if not timeline:
                self._wait_fence(ctx, f"the {what}")
            elif wait or ctx.timed:
                self.wait_for({q.index: value}, f"the {what}")
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
        err = device_error(f"waiting for {what}", e)
        if isinstance(e, vk.VkTimeout):
            err = DeviceError(f"Vulkan: {what} did not finish within {self.timeout_ns / 1e9:g} s "
                              f"({TIMEOUT_ENV})", code=err.code, name=err.name)
        return err

    # -- points of the work: {queue index: timeline value}
    def submitted_point(self) -> Dict[int, int]:
        """Everything submitted so far: each queue's latest value."""
        return {q.index: q.submitted for q in self.queues if q.submitted}

    def reached(self, point: Dict[int, int]) -> bool:
        """Whether the work up to ``point`` has finished (never waits)."""
        queues = self.queues
        return all(queues[i].reached(v) for i, v in point.items())

    def wait_for(self, point: Dict[int, int], what: str = "submitted work") -> None:
        """Wait until the work up to ``point`` (each queue's submission with that value and every earlier one
        of the queue) has finished."""
        queues = self.queues
        for i, v in point.items():
            queues[i].wait(v, what)

    def wait_all(self, what: str = "submitted work") -> None:
        """Wait for everything submitted so far to every queue (before the host touches memory the device
        may use)."""
        self.wait_for(self.submitted_point(), what)

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
        with contextlib.ExitStack() as held:  # vkDeviceWaitIdle: every queue externally synchronized
            for lock in {id(q.lock): q.lock for q in self.queues}.values():
                held.enter_context(lock)
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
            for q in self.queues:
                q.destroy()
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
