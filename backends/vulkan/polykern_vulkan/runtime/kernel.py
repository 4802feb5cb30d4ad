"""``VulkanKernel``: ``mod["k"](*args, grid=, block=)`` on the Vulkan device.

One launch = ``check_args`` (LaunchError before anything touches the device), device-limit
checks, the cached pipeline for this block shape, pooled buffers for NumPy arguments (copied in;
copied back only for writable buffer parameters), DeviceArrays bound as they are, scalars packed
into push constants, one command buffer (staging copies, dispatch, barriers) submitted to the current
stream (polykern/streams.py) and, where host arrays are copied back, waited for. A launch with only
DeviceArrays and scalars returns once submitted. Launches from many threads run concurrently, each
with its own command context.

Fast path: a launch with only DeviceArrays of this device (of the declared dtypes) and scalars
(``polykern.runtime.launch.scalar_converter``), a grid and block given as exact ints/tuples, and the same
grid, block, buffers and scalar values as an earlier launch of this kernel that went through the
full path, skips ``check_args`` and the recording: it submits the command buffer that launch kept
(CommandContext.prepare). Anything else takes the full path, which raises the precise LaunchError.

The same host array passed for two parameters gets one device buffer (so the kernel sees one
memory); partially overlapping views of one array would be copied separately, so one that the kernel writes
is refused (polykern/runtime/host_aliasing.py).
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np
import vulkan as vk

from polykern.errors import DeviceError, LaunchError
from polykern.runtime.launch import MISS, BufferArg, fast_dims, scalar_converter
from polykern.module import FunctionInfo
from polykern.runtime.shared_launch import dynamic_shared_of
from polykern.runtime.staged_launch import HostCopy, Launch, StagedLaunch
from polykern.streams import launch_stream

from .buffers import Buffer
from .device import CommandContext
from .device_array import DeviceArray
from .program import KernelProgram

__all__ = ["VulkanKernel"]

COMPUTE = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
TRANSFER = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
SHADER_RW = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
_REPLAYS = 64  # fast-path launches remembered per kernel


class VulkanKernel(StagedLaunch):
    runtime = "vulkan"

    def __init__(self, module, info: FunctionInfo, program: KernelProgram):
        self.module = module
        self.info = info
        self.program = program
        self.abi = program.abi
        self.dev = program.dev
        self._dyn = dynamic_shared_of(info)  # (size argument, element bytes) of a pk.shared_dynamic array
        self._nargs = len(info.args)
        self._dtypes = tuple(a.dtype.numpy if a.is_buffer else None for a in info.args)
        self._convs = tuple(None if a.is_buffer else scalar_converter(a) for a in info.args)
        # fast-path key (grid, block, buffers and scalars) -> (keep key, bindings, record, release epoch)
        self._replays: Dict[tuple, tuple] = {}

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def max_shared_bytes(self) -> int:
        """maxComputeSharedMemorySize (shared_launch.py checks static + dynamic shared memory against it)."""
        return self.dev.limits.max_shared_bytes

    def __repr__(self) -> str:
        return f"<VulkanKernel {self.info.signature()} on {self.dev.name}>"

    def _check_subgroup_rows(self, block3) -> None:
        """lavapipe (Mesa 22.3) runs a 2-D/3-D workgroup whose x size is not a multiple of its subgroup size
        as subgroups of one row each, yet numbers SubgroupId as if they were consecutive runs of the linear
        index: two rows share an id (and lanes), so a reduction over per-subgroup partials indexed by
        pk.subgroup_id() silently lost half of a (4, 4) block. Refused there."""
        dev, size = self.dev, self.dev.subgroup_size
        if ("GroupNonUniform" in self.abi.capabilities and block3[1] * block3[2] > 1 and size
                and block3[0] % size and dev.name.startswith("llvmpipe")):
            raise LaunchError(f"kernel '{self.name}' uses pk.subgroup_* and block {block3} has an x size that is "
                              f"not a multiple of {dev.name}'s subgroup size {size}: lavapipe forms its subgroups "
                              "from rows there but numbers them as if linear (wrong subgroup ids); launch a 1-D "
                              f"block, or one whose x size is a multiple of {size}")

    def _check_limits(self, grid3, block3) -> None:
        lim = self.dev.limits
        where = f"kernel '{self.name}'"
        for axis, (b, mb) in enumerate(zip(block3, lim.max_group_size)):
            if b > mb:
                raise LaunchError(f"{where}: block {block3} exceeds {self.dev.name}'s maximum workgroup size "
                                  f"{lim.max_group_size} in dimension {'xyz'[axis]}")
        if block3[0] * block3[1] * block3[2] > lim.max_invocations:
            raise LaunchError(f"{where}: block {block3} has {block3[0] * block3[1] * block3[2]} threads; "
                              f"{self.dev.name} allows {lim.max_invocations} per workgroup")
        for axis, (g, mg) in enumerate(zip(grid3, lim.max_group_count)):
            if g > mg:
                raise LaunchError(f"{where}: grid {grid3} exceeds {self.dev.name}'s maximum workgroup count "
                                  f"{lim.max_group_count} in dimension {'xyz'[axis]}")

    def _device_buffer(self, a: BufferArg) -> Buffer:
        obj = a.obj
        if not isinstance(obj, DeviceArray):
            raise LaunchError(f"kernel '{self.name}', argument '{a.name}': the Vulkan runtime takes NumPy arrays "
                              f"or polykern_vulkan.DeviceArray, got memory on device {a.device[0]!r}; copy it to "
                              "the host first")
        if obj.device is not self.dev:
            raise LaunchError(f"kernel '{self.name}', argument '{a.name}': the DeviceArray belongs to another "
                              "Vulkan device")
        return obj.buffer

    def _fast_key(self, args, grid, block):
        """The fast-path key of a launch, or None where it is not a fast-path case (module docstring)."""
        if len(args) != self._nargs or self._dyn is not None:
            return None
        g, b = fast_dims(grid), fast_dims(block)
        if g is None or b is None:
            return None
        key: List[Any] = [g, b]
        dev, dtypes, convs = self.dev, self._dtypes, self._convs
        for i, v in enumerate(args):
            want = dtypes[i]
            if want is not None:
                if type(v) is not DeviceArray or v.device is not dev or v._handle is None or v.dtype != want:
                    return None
                key.append(v._handle)
                key.append(v.shape)
            else:
                x = convs[i](v)
                if x is MISS:
                    return None
                key.append(x)
        return tuple(key)

    def __call__(self, *args: Any, grid=None, block=None) -> None:
        key = self._fast_key(args, grid, block)
        entry = self._replays.get(key) if key is not None else None
        if entry is not None and entry[3] == self.dev.release_epoch:
            keep, nbound, record, _ = entry
            stream = launch_stream("vulkan", self.dev, self.name)
            pipeline, lease = self.program.pipeline(key[1])
            try:
                if pipeline is keep[0]:
                    self.dev.execute(record, descriptors=nbound, what=f"launch of kernel '{self.name}'", keep=keep,
                                     wait=False, stream=stream)
                    self.dev.count("launches")
                    return
            except DeviceError as e:
                if getattr(e, "submitted", False):
                    self.program.pipelines.abandon(lease)
                    lease = None
                raise
            finally:
                if lease is not None:
                    self.program.pipelines.release(lease)
        self.staged(args, grid, block, note=key)

    # ------------------------------------------------------------ staged launch hooks (staged_launch.py)
    def limits(self, launch: Launch) -> None:
        self._check_limits(launch.grid, launch.block)
        self._check_subgroup_rows(launch.block)

    def prepare(self, launch: Launch) -> None:
        launch.stream = launch_stream("vulkan", self.dev, self.name)
        dyn = int(launch.prepared[self._dyn[0]].value) if self._dyn else 0
        launch.temps = []  # pooled buffers, released after the launch
        launch.copies_in = []  # (staging, device buffer, nbytes), recorded before the dispatch
        launch.sources = {}  # id(device buffer) -> the host-visible buffer its host array is copied through
        launch.pipeline, launch.lease = self.program.pipeline(launch.block, dyn)

    def _check_range(self, a: BufferArg) -> None:
        max_range = self.dev.limits.max_storage_range
        if a.nbytes > max_range:
            raise LaunchError(f"kernel '{self.name}', argument '{a.name}': {a.nbytes} bytes exceed "
                              f"{self.dev.name}'s storage buffer range ({max_range} bytes)")

    def bind_device(self, launch: Launch, arg: BufferArg) -> Buffer:
        self._check_range(arg)
        return self._device_buffer(arg)

    def stage_in(self, launch: Launch, arg: BufferArg) -> Buffer:
        """A pooled device buffer holding a copy of a host array (staged where the device needs it)."""
        self._check_range(arg)
        dev, nbytes = self.dev, arg.nbytes
        buf = dev.pool.acquire(nbytes)
        launch.temps.append(buf)
        if dev.staging:
            src = dev.pool.acquire(nbytes, "staging")
            launch.temps.append(src)
            launch.copies_in.append((src, buf, nbytes))
        else:
            src = buf
        src.mapped[:nbytes] = arg.array.view(np.uint8)
        launch.sources[id(buf)] = src
        return buf

    def dispatch(self, launch: Launch) -> None:
        dev, abi, grid3, pipeline = self.dev, self.abi, launch.grid, launch.pipeline
        copies_in, sources = launch.copies_in, launch.sources
        scalars: List[Any] = [None] * len(launch.prepared)
        bound: List[Tuple[int, Any, int]] = []
        for a, value in zip(launch.prepared, launch.bindings):
            if isinstance(a, BufferArg):
                bound.append((abi.bindings[a.index], value.handle, max(4, min(a.nbytes, value.size))))
            else:
                scalars[a.index] = value
        push = abi.pack_push_constants(scalars) if abi.push_size else b""
        copies_out = [(hc.handle, sources[id(hc.handle)], hc.nbytes) for hc in launch.written_copies
                      if sources[id(hc.handle)] is not hc.handle]

        def record(ctx: CommandContext) -> None:
            cmd = ctx.cmd
            for src, dst, n in copies_in:
                ctx.copy(src.handle, dst.handle, max(n, 1))
            if copies_in:
                ctx.barrier(TRANSFER, vk.VK_ACCESS_TRANSFER_WRITE_BIT, COMPUTE, SHADER_RW)
            dset = ctx.descriptor_set(self.program.set_layout, bound)
            vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
            vk.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.program.layout, 0, 1,
                                       [dset], 0, None)
            if push:
                vk.vkCmdPushConstants(cmd, self.program.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push),
                                      vk.ffi.from_buffer(push))
            vk.vkCmdDispatch(cmd, *grid3)
            if copies_out:
                ctx.barrier(COMPUTE, vk.VK_ACCESS_SHADER_WRITE_BIT, TRANSFER, vk.VK_ACCESS_TRANSFER_READ_BIT)
                for src, dst, n in copies_out:
                    ctx.copy(src.handle, dst.handle, max(n, 1))

        # only DeviceArrays bound: the same pipeline, buffers, scalars and grid replay the recorded launch
        keep = None if launch.host_copies else (pipeline, tuple(bound), push, grid3)
        dev.execute(record, descriptors=len(bound), what=f"launch of kernel '{self.name}'", keep=keep,
                    wait=bool(launch.host_copies), stream=launch.stream)
        dev.count("launches")
        key = launch.note
        if keep is not None and key is not None:  # the next launch like this one takes the fast path
            if len(self._replays) >= _REPLAYS:
                self._replays.clear()
            self._replays[key] = (keep, len(bound), record, dev.release_epoch)

    def stage_out(self, launch: Launch, copies: List[HostCopy]) -> None:
        for hc in copies:  # only writable parameters are copied back
            hc.arg.array.view(np.uint8)[:] = launch.sources[id(hc.handle)].mapped[:hc.nbytes]

    def launch_failed(self, launch: Launch, error: BaseException):
        if isinstance(error, DeviceError) and getattr(error, "submitted", False):
            launch.temps = []  # the device may still be using them: never hand them out again
            self.program.pipelines.abandon(launch.lease)  # nor destroy the pipeline
            launch.lease = None
        return None

    def release(self, launch: Launch) -> None:
        for buf in launch.temps:
            self.dev.pool.release(buf)
        if launch.lease is not None:
            self.program.pipelines.release(launch.lease)
