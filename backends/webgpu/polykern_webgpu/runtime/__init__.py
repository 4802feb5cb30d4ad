"""The WebGPU runtime: ``module.create.webgpu`` / ``module.load_from_bytes.webgpu`` via wgpu-py.

Importing this module needs ``wgpu`` (and its bundled wgpu-native library); that is
what ``polykern backends`` reports as "runtime available". The adapter/device itself
is realized lazily on first launch (wgpu_context.py), so building and loading
artifacts never touches a GPU.

Per module, lazily and thread-safely (``polykern.runtime.lazy.LazyMap``):
shader modules per kernel, bind-group/pipeline layouts per kernel, compute pipelines
per (kernel, block dims, shared_size) — repeated launches never recompile; at most
``polykern.runtime.lazy.PIPELINES_PER_KERNEL`` pipelines per kernel are kept (``BoundedLazyMap``, least
recently used first out; wgpu releases an evicted one when no command refers to it any more). Host arrays are
copied through pooled storage buffers (wgpu_context.Context.acquire/release).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
import wgpu
import wgpu.backends.wgpu_native  # noqa: F401  (loads the native library: fail here, not at launch)

from polykern import registry
from polykern.kbin import wire
from polykern.runtime.device_array import DeviceArrayModule
from polykern.errors import ArtifactError, CompileError, DeviceError, LaunchError
from polykern.runtime.launch import PORTABLE_MAX_GRID, BufferArg, ScalarArg, check_grid_limits
from polykern.runtime.launch_rules import grid_limit_name
from polykern.runtime.lazy import PIPELINES_PER_KERNEL, BoundedLazyMap, LazyMap
from polykern.module import DeviceModule, FunctionInfo, payload_text
from polykern.kbin.payload_formats import check_payload
from polykern.runtime.shared_launch import dynamic_shared_of
from polykern.runtime.staged_launch import HostCopy, Launch, StagedLaunch
from polykern.streams import launch_stream

from .. import abi
from ..fallback import WebGPUFallbackModule
from .device_array import DeviceArray, empty, to_device, zeros
from .streams import make_stream
from .wgpu_context import STORAGE_USAGE, UNIFORM_USAGE, context, context_error, devices

__all__ = ["WebGPUModule", "WebGPUKernel", "create", "load_from_bytes", "register", "devices",
           "DeviceArray", "to_device", "empty", "zeros"]


def _gpu_error(what: str, e: Exception) -> Exception:
    text = str(e)
    if isinstance(e, wgpu.GPUValidationError) and ("Shader" in text or "parsing" in text or "naga" in text):
        return CompileError(f"webgpu: {what}", log=text)
    return DeviceError(f"webgpu: {what}: {text}", name=type(e).__name__)


class _KernelABI:
    """The launch ABI of one kernel, read from its FunctionInfo attrs (abi.py)."""

    def __init__(self, info: FunctionInfo):
        attrs = info.attrs
        try:
            self.entry = attrs["entry"]
            self.buffers = [i for i, a in enumerate(info.args) if a.is_buffer]
            scalars = [i for i, a in enumerate(info.args) if not a.is_buffer]
            self.slots = abi.parse_slots(attrs, scalars)
            self.params_binding = int(attrs["params_binding"]) if scalars else None
            self.params_size = int(attrs["params_size"]) if scalars else 0
            self.launch_binding = int(attrs["launch_binding"]) if "launch_binding" in attrs else None
        except (KeyError, ValueError) as e:
            raise ArtifactError(f"webgpu kernel '{info.name}': malformed launch attributes ({e})") from None
        if self.params_binding is not None and self.params_binding != len(self.buffers):
            raise ArtifactError(f"webgpu kernel '{info.name}': params_binding {self.params_binding} is not "
                                f"the buffer count {len(self.buffers)}")
        self.features = [f for f in attrs.get("features", "").split(",") if f]
        self.readonly = [info.args[i].readonly for i in self.buffers]


class WebGPUModule(DeviceArrayModule, DeviceModule):
    """A runnable webgpu module. Device objects are created on first use."""
    device_array_class = DeviceArray

    source_preference = ("wgsl",)

    def __init__(self, payload: Dict[str, bytes], fmt: str, fmap: Mapping[str, FunctionInfo],
                 sources: Optional[Mapping[str, str]] = None):
        super().__init__("webgpu", payload, fmt, fmap, sources)
        missing = sorted(set(self.functions) - set(self.payload))
        if missing:
            raise ArtifactError(f"webgpu module: no shader for kernel(s) {', '.join(missing)}")
        self._abis = LazyMap(lambda name: _KernelABI(self.functions[name]))
        self._shaders = LazyMap(self._make_shader)
        self._layouts = LazyMap(self._make_layouts)
        self._pipelines = LazyMap(lambda name: BoundedLazyMap(lambda key: self._make_pipeline((name, *key)),
                                                              PIPELINES_PER_KERNEL))
        self._kernels = LazyMap(lambda name: WebGPUKernel(self, self.functions[name]))
        self.pipelines_built = 0  # observable: repeated launches must not rebuild

    # A module is runnable when a WebGPU device can be realized here.
    @property
    def is_runnable(self) -> bool:  # type: ignore[override]
        return context_error() is None

    def not_runnable_reason(self, name: str) -> str:
        e = context_error()
        return f"no WebGPU device: {e}" if e else ""

    def _get_function(self, info: FunctionInfo):
        return self._kernels.get(info.name)

    # ------------------------------------------------------------ lazy device objects

    def _make_shader(self, name: str):
        ctx = context()
        kabi = self._abis.get(name)
        lacking = [f for f in kabi.features if f not in ctx.features]
        if lacking:
            raise DeviceError(f"webgpu kernel '{name}' needs device feature(s) {', '.join(lacking)}, which "
                              f"{ctx.name} does not offer")
        code = payload_text(self.payload[name])
        if code is None:
            raise ArtifactError(f"webgpu kernel '{name}': the shader is not UTF-8 WGSL text")
        with ctx.lock:
            try:
                return ctx.device.create_shader_module(label=name, code=code)
            except Exception as e:
                raise _gpu_error(f"the WGSL of kernel '{name}' was rejected", e) from e

    def _make_layouts(self, name: str):
        ctx = context()
        kabi = self._abis.get(name)
        entries = [{"binding": b, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": "read-only-storage" if ro else "storage"}}
                   for b, ro in enumerate(kabi.readonly)]
        for b in (kabi.params_binding, kabi.launch_binding):
            if b is not None:
                entries.append({"binding": b, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "uniform"}})
        with ctx.lock:
            bgl = ctx.device.create_bind_group_layout(entries=entries)
            return bgl, ctx.device.create_pipeline_layout(bind_group_layouts=[bgl])

    def _make_pipeline(self, key: Tuple[str, Tuple[int, int, int], int]):
        name, block, shared_size = key
        ctx = context()
        shader = self._shaders.get(name)
        _, layout = self._layouts.get(name)
        constants = dict(zip(abi.BLOCK_OVERRIDES, block))
        if shared_size:  # one pipeline per length of the pk.shared_dynamic array
            constants[abi.SHARED_SIZE_OVERRIDE] = shared_size
        with ctx.lock:
            try:
                pipeline = ctx.device.create_compute_pipeline(
                    label=f"{name}{block}", layout=layout,
                    compute={"module": shader, "entry_point": self._abis.get(name).entry, "constants": constants})
            except Exception as e:
                code = payload_text(self.payload[name]) or ""
                if block[1] * block[2] > 1 and any(f"@builtin({b})" in code for b in _SUBGROUP_ID_BUILTINS):
                    raise LaunchError(
                        f"webgpu kernel '{name}' reads pk.subgroup_local_id() or pk.subgroup_id(), and wgpu (naga) "
                        f"refuses those built-ins in a work-group of more than one dimension (block {block}); "
                        "launch a 1-D block and compute the 2-D indices from local_id(0)") from e
                raise _gpu_error(f"cannot create the compute pipeline of '{name}' for block {block}", e) from e
            self.pipelines_built += 1
            return pipeline


class WebGPUKernel(StagedLaunch):
    """``mod["k"](*args, grid=..., block=...)`` on a WebGPU device."""

    runtime = "webgpu"

    def __init__(self, module: WebGPUModule, info: FunctionInfo):
        self.module = module
        self.info = info
        self.abi = module._abis.get(info.name)
        self._dyn = dynamic_shared_of(info)  # (size argument, element bytes) of a pk.shared_dynamic array

    def __repr__(self) -> str:
        return f"<WebGPUKernel {self.info.signature()}>"

    @property
    def max_shared_bytes(self) -> int:
        """maxComputeWorkgroupStorageSize (shared_launch.py checks static + dynamic shared memory against it)."""
        return int(context().limits["max-compute-workgroup-storage-size"])

    def _check_shape(self, ctx, grid, block) -> None:
        lim = ctx.limits
        name = self.info.name
        total = block[0] * block[1] * block[2]
        if total > lim["max-compute-invocations-per-workgroup"]:
            raise LaunchError(f"kernel '{name}': block {block} has {total} invocations; this WebGPU device "
                              f"allows {lim['max-compute-invocations-per-workgroup']} per workgroup")
        for d, axis in enumerate("xyz"):
            if block[d] > lim[f"max-compute-workgroup-size-{axis}"]:
                raise LaunchError(f"kernel '{name}': block {axis} = {block[d]} exceeds the device limit "
                                  f"{lim[f'max-compute-workgroup-size-{axis}']}")
        # Grids beyond the device's dispatch limit run as several dispatches (abi.py), up to CUDA's limits.
        check_grid_limits(name, grid, PORTABLE_MAX_GRID, grid_limit_name("WebGPU"))
        if self.info.shared_bytes > lim["max-compute-workgroup-storage-size"]:
            raise LaunchError(f"kernel '{name}' uses {self.info.shared_bytes} bytes of shared memory; this WebGPU "
                              f"device allows {lim['max-compute-workgroup-storage-size']}")

    # ------------------------------------------------------------ staged launch hooks (staged_launch.py)
    def limits(self, launch: Launch) -> None:
        launch.ctx = context()
        self._check_shape(launch.ctx, launch.grid, launch.block)

    def prepare(self, launch: Launch) -> None:
        ctx, name = launch.ctx, self.info.name
        launch_stream("webgpu", ctx, name)  # the one queue; refuses a closed current stream
        dyn = self._dyn and int(launch.prepared[self._dyn[0]].value)
        launch.pipeline = self.module._pipelines.get(name).get((launch.block, dyn or 0))
        launch.borrowed = []  # (buffer, usage) taken from the context's pool

    def exclusive(self, launch: Launch):
        return launch.ctx.lock

    def is_device(self, arg: BufferArg) -> bool:
        return isinstance(arg.obj, DeviceArray) or not arg.is_host

    def bind_device(self, launch: Launch, arg: BufferArg):
        if isinstance(arg.obj, DeviceArray):
            if arg.obj.ctx is not launch.ctx or arg.obj.buffer is None:
                raise LaunchError(f"kernel '{self.info.name}', argument '{arg.name}': the DeviceArray was released "
                                  "or belongs to another WebGPU device")
            return arg.obj.buffer
        raise LaunchError(f"kernel '{self.info.name}', argument '{arg.name}': {arg.device[0]} device memory "
                          "cannot be used by the WebGPU runtime; pass a NumPy array or a "
                          "polykern_webgpu DeviceArray")

    def stage_in(self, launch: Launch, arg: BufferArg):
        ctx = launch.ctx
        limit = ctx.limits["max-storage-buffer-binding-size"]
        if arg.nbytes > limit:
            raise LaunchError(f"kernel '{self.info.name}', argument '{arg.name}': {arg.nbytes} bytes exceed this "
                              f"WebGPU device's storage buffer binding limit ({limit} bytes)")
        buf = ctx.acquire(_padded(arg.nbytes), STORAGE_USAGE)
        launch.borrowed.append((buf, STORAGE_USAGE))
        if arg.nbytes:
            data = arg.array.view(np.uint8)
            pad = -arg.nbytes % 4
            if pad:
                data = np.concatenate([data, np.zeros(pad, np.uint8)])
            ctx.device.queue.write_buffer(buf, 0, data)
        return buf

    def dispatch(self, launch: Launch) -> None:
        ctx, grid3, borrowed = launch.ctx, launch.grid, launch.borrowed
        bgl, _ = self.module._layouts.get(self.info.name)
        entries = []
        access: Dict[int, BufferArg] = {}  # id(wgpu buffer) -> the first argument bound to it
        scalars = []
        for arg, value in zip(launch.prepared, launch.bindings):
            if isinstance(arg, ScalarArg):
                scalars.append(value)
                continue
            _one_access(self.info.name, arg, value, access)
            entries.append({"binding": len(entries), "resource": {"buffer": value, "offset": 0, "size": value.size}})
        if self.abi.params_binding is not None:
            data = abi.pack_scalars(self.abi.slots, scalars, self.abi.params_size)
            ubuf = ctx.acquire(len(data), UNIFORM_USAGE)
            borrowed.append((ubuf, UNIFORM_USAGE))
            ctx.device.queue.write_buffer(ubuf, 0, data)
            entries.append({"binding": self.abi.params_binding,
                            "resource": {"buffer": ubuf, "offset": 0, "size": len(data)}})
        encoder = ctx.device.create_command_encoder()
        cpass = encoder.begin_compute_pass()
        cpass.set_pipeline(launch.pipeline)
        for base, count in _chunks(grid3, ctx.limits["max-compute-workgroups-per-dimension"]):
            chunk_entries = list(entries)
            if self.abi.launch_binding is not None:
                lbuf = ctx.acquire(abi.LAUNCH_SIZE, UNIFORM_USAGE)
                borrowed.append((lbuf, UNIFORM_USAGE))
                ctx.device.queue.write_buffer(lbuf, 0, abi.pack_launch(base, grid3))
                chunk_entries.append({"binding": self.abi.launch_binding,
                                      "resource": {"buffer": lbuf, "offset": 0, "size": abi.LAUNCH_SIZE}})
            cpass.set_bind_group(0, ctx.device.create_bind_group(layout=bgl, entries=chunk_entries))
            cpass.dispatch_workgroups(*count)
        cpass.end()
        ctx.device.queue.submit([encoder.finish()])

    def stage_out(self, launch: Launch, copies: List[HostCopy]) -> None:
        for hc in copies:
            if hc.nbytes:
                raw = launch.ctx.device.queue.read_buffer(hc.handle, 0, _padded(hc.nbytes))
                hc.arg.array.view(np.uint8)[:] = np.frombuffer(raw, np.uint8, hc.nbytes)

    def launch_failed(self, launch: Launch, error: BaseException):
        if isinstance(error, (LaunchError, CompileError, DeviceError, ArtifactError)) or \
                not isinstance(error, Exception):
            return None
        return DeviceError(f"webgpu: launching '{self.info.name}' failed: {error}", name=type(error).__name__)

    def release(self, launch: Launch) -> None:
        for buf, usage in launch.borrowed:
            launch.ctx.release(buf, usage)


_SUBGROUP_ID_BUILTINS = ("subgroup_invocation_id", "subgroup_id")


def _one_access(kernel: str, arg: BufferArg, buf: Any, access: Dict[int, BufferArg]) -> None:
    """wgpu refuses one buffer bound read-only and read-write in a dispatch (a DeviceArray passed for a
    readonly and a written parameter): a LaunchError naming both instead of its validation error."""
    first = access.setdefault(id(buf), arg)
    if first.info.readonly != arg.info.readonly:
        written = arg if not arg.info.readonly else first
        raise LaunchError(f"kernel '{kernel}': arguments '{first.name}' and '{arg.name}' are one buffer, one readonly "
                          f"and one written ('{written.name}'); WebGPU cannot bind one buffer both read-only and "
                          "read-write. Pass separate arrays")


def _chunks(grid: Tuple[int, int, int], limit: int):
    """(group_base, dispatch size) pieces covering ``grid`` with at most ``limit`` groups per
    dimension (one piece when the grid fits)."""
    for z in range(0, grid[2], limit):
        for y in range(0, grid[1], limit):
            for x in range(0, grid[0], limit):
                yield (x, y, z), (min(limit, grid[0] - x), min(limit, grid[1] - y), min(limit, grid[2] - z))


def _padded(nbytes: int) -> int:
    return max(4, nbytes + (-nbytes % 4))


def create(payload, fmt: str, fmap: Mapping[str, FunctionInfo], sources: Optional[Mapping[str, str]] = None):
    return WebGPUModule(payload, fmt or "wgsl", fmap, sources)


def load_from_bytes(data: bytes, sources: Optional[Mapping[str, str]] = None):
    fmt, fmap, payload = wire.decode_device_payload("webgpu", data)
    check_payload("webgpu", WebGPUFallbackModule.payload_formats, fmt, fmap, payload)  # before anything trusts it
    return WebGPUModule(payload, fmt, fmap, sources)


def synchronize(ctx=None) -> None:
    """Wait until the work submitted to the device's queue is done (launches with device arrays return
    after submitting; pk.autotune and pk.synchronize wait with this)."""
    ctx = ctx or context()
    with ctx.lock:  # reading a buffer back waits for the queue's earlier work (wgpu-py 0.32's
        # on_submitted_work_done_sync fails with wgpu-native's callback signature)
        probe = ctx.device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
        ctx.device.queue.read_buffer(probe)
        probe.destroy()


def register() -> None:
    registry.register("module.create.webgpu", create)
    registry.register("runtime.device_array.webgpu", DeviceArray)  # pk.to_device(x, device="webgpu...")
    registry.register("module.load_from_bytes.webgpu", load_from_bytes)
    registry.register("runtime.synchronize.webgpu", synchronize)
    registry.register("runtime.stream.webgpu", make_stream)  # pk.Stream(device="webgpu")
