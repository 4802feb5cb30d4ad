"""``OpenCLKernel``: ``mod["k"](*args, grid=, block=)`` on the OpenCL device.

One launch = ``check_args`` (LaunchError before anything touches the device), device-limit checks
(LaunchError), pooled buffers for NumPy arguments (copied in; copied back only for writable buffer
parameters), DeviceArrays bound as they are, scalars converted to the codegen's ABI, one
``clEnqueueNDRangeKernel`` with global size = grid * block and local size = block on the current
stream's queue (polykern/streams.py), then, where host arrays are copied back (or the kernel prints), a
wait for this launch's commands; a launch with only DeviceArrays returns once enqueued. OpenCL errors
surface as DeviceError with the CL status code and name.

Scalar ABI (opencl_c.py): every scalar is passed as its declared C type (``int``, ``ulong``,
``double`` ...) except ``bool`` -> ``uchar`` 0/1 and ``f16`` -> ``ushort`` holding the IEEE half bits
(the kernel reads it back with ``vload_half``; no cl_khr_fp16 needed). Buffers of bool hold bytes
0/1 and buffers of f16 hold halves: NumPy's ``bool_``/``float16`` bytes exactly.

The same host array passed for two parameters gets one device buffer (the kernel sees one memory);
partially overlapping views of one array would be copied separately, so one that the kernel writes
is refused (polykern/runtime/host_aliasing.py).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pyopencl as cl

from polykern.runtime import kernel_output
from polykern.errors import LaunchError
from polykern.runtime.launch import MAX_OPENCL_GROUPS, PORTABLE_MAX_GRID, BufferArg, check_grid_limits
from polykern.runtime.launch_rules import grid_limit_name
from polykern.module import ArgInfo, FunctionInfo
from polykern.runtime.shared_launch import dynamic_shared_of
from polykern.runtime.staged_launch import HostCopy, Launch, StagedLaunch
from polykern.streams import launch_stream

from .clerrors import CL_ERRORS, device_error
from .device_array import DeviceArray
from .program import KernelObject

__all__ = ["OpenCLKernel", "scalar_converter"]


def scalar_converter(a: ArgInfo) -> Callable[[np.generic], np.generic]:
    """The host value -> kernel-argument bytes conversion of one scalar parameter."""
    t = a.dtype
    if t.is_bool:
        return lambda v: np.uint8(1 if v else 0)
    if t.is_float and t.bits == 16:
        return lambda v: np.float16(v).view(np.uint16)
    np_type = t.numpy.type
    return lambda v: v if type(v) is np_type else np_type(v)


class OpenCLKernel(StagedLaunch):
    runtime = "opencl"

    def __init__(self, module, info: FunctionInfo, device, kobj: KernelObject):
        self.module = module
        self.info = info
        self.device = device
        self.kobj = kobj
        self._dyn = dynamic_shared_of(info)  # (size argument, element bytes) of a pk.shared_dynamic array
        self._convert: Dict[int, Callable] = {i: scalar_converter(a) for i, a in enumerate(info.args)
                                              if not a.is_buffer}

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def max_shared_bytes(self) -> int:
        """CL_DEVICE_LOCAL_MEM_SIZE (shared_launch.py checks static + dynamic shared memory against it)."""
        return self.device.limits.local_mem_size

    def __repr__(self) -> str:
        return f"<OpenCLKernel {self.info.signature()} on {self.device.name}>"

    # ------------------------------------------------------------ checks
    def _check_limits(self, grid3: Tuple[int, int, int], block3: Tuple[int, int, int]) -> None:
        lim = self.device.limits
        dev = self.device.name
        where = f"kernel '{self.name}'"
        for axis, (b, mb) in enumerate(zip(block3, lim.max_work_item_sizes)):
            if b > mb:
                raise LaunchError(f"{where}: block {block3} exceeds {dev}'s maximum work-item size "
                                  f"{lim.max_work_item_sizes} in dimension {'xyz'[axis]}")
        threads = block3[0] * block3[1] * block3[2]
        max_wg = min(lim.max_work_group_size, self.kobj.work_group_size or lim.max_work_group_size)
        if threads > max_wg:
            which = ("CL_DEVICE_MAX_WORK_GROUP_SIZE" if max_wg == lim.max_work_group_size
                     else "CL_KERNEL_WORK_GROUP_SIZE of this kernel")
            raise LaunchError(f"{where}: block {block3} has {threads} work-items; {dev} allows {max_wg} per "
                              f"work-group ({which})")
        if self.info.shared_bytes > lim.local_mem_size:
            raise LaunchError(f"{where} uses {self.info.shared_bytes} bytes of shared memory; {dev} has "
                              f"{lim.local_mem_size} (CL_DEVICE_LOCAL_MEM_SIZE)")
        check_grid_limits(self.name, grid3, PORTABLE_MAX_GRID, grid_limit_name("OpenCL"))
        groups = grid3[0] * grid3[1] * grid3[2]
        if groups > MAX_OPENCL_GROUPS:
            raise LaunchError(f"{where}: grid {grid3} has {groups} work-groups; the OpenCL runtime allows at most "
                              f"{MAX_OPENCL_GROUPS} (2**32 - 1) per launch (implementations such as PoCL count "
                              "work-groups in 32 bits)")
        top = 1 << min(lim.address_bits, 63)
        for axis, (g, b) in enumerate(zip(grid3, block3)):
            if g * b >= top:
                raise LaunchError(f"{where}: global size {g * b} in dimension {'xyz'[axis]} exceeds {dev}'s "
                                  f"{lim.address_bits}-bit size_t")

    def _device_buffer(self, a: BufferArg):
        obj = a.obj
        if not isinstance(obj, DeviceArray):
            raise LaunchError(f"kernel '{self.name}', argument '{a.name}': the OpenCL runtime takes NumPy arrays "
                              f"or polykern_opencl DeviceArrays, got memory on device {a.device[0]!r}; copy it to "
                              "the host first")
        if obj.device is not self.device:
            raise LaunchError(f"kernel '{self.name}', argument '{a.name}': the DeviceArray belongs to another "
                              f"OpenCL device ({obj.device.name}, not {self.device.name})")
        if obj.size < a.size:
            raise LaunchError(f"kernel '{self.name}', argument '{a.name}': malformed DeviceArray")
        return obj.buffer

    # ------------------------------------------------------------ staged launch hooks (staged_launch.py)
    def limits(self, launch: Launch) -> None:
        self._check_limits(launch.grid, launch.block)

    def prepare(self, launch: Launch) -> None:
        stream = launch_stream("opencl", self.device, self.name)
        launch.queue = self.device.queue if stream is None else stream.queue
        launch.temps = []
        launch.enqueued = False
        launch.copied_in = 0

    def bind_scalar(self, launch: Launch, arg) -> Any:
        return self._convert[arg.index](arg.value)

    def bind_device(self, launch: Launch, arg: BufferArg):
        return self._device_buffer(arg)

    def stage_in(self, launch: Launch, arg: BufferArg):
        dev, nbytes = self.device, arg.nbytes
        max_alloc = dev.limits.max_mem_alloc_size
        if nbytes > max_alloc:
            raise LaunchError(f"kernel '{self.name}', argument '{arg.name}': {nbytes} bytes exceed "
                              f"{dev.name}'s largest buffer ({max_alloc} bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
        buf = dev.pool.acquire(nbytes)
        launch.temps.append(buf)
        if nbytes:
            launch.enqueued = True
            cl.enqueue_copy(launch.queue, buf, arg.array.view(np.uint8), is_blocking=False)
            launch.copied_in += nbytes
        return buf

    def dispatch(self, launch: Launch) -> None:
        grid3, block3, values = launch.grid, launch.block, launch.bindings
        gsize = (grid3[0] * block3[0], grid3[1] * block3[1], grid3[2] * block3[2])
        kobj = self.kobj
        with kobj.lock:  # clSetKernelArg is not thread-safe on one kernel object
            for i, v in enumerate(values):
                kobj.kernel.set_arg(i, v)
            if self._dyn is not None:  # the trailing __local argument: clSetKernelArg(size, NULL)
                index, elem = self._dyn
                kobj.kernel.set_arg(len(values), cl.LocalMemory(int(launch.prepared[index].value) * elem))
            launch.enqueued = True
            self.device.queued = True  # before the enqueue: a host access from now on waits for it
            if kernel_output.prints(self.info):
                kernel_output.launching()
            launch.event = cl.enqueue_nd_range_kernel(launch.queue, kobj.kernel, gsize, block3)

    def stage_out(self, launch: Launch, copies: List[HostCopy]) -> None:
        dev, prints = self.device, kernel_output.prints(self.info)
        waits = [launch.event]
        copied_out = 0
        for hc in copies:  # only writable parameters are copied back
            if hc.nbytes:
                waits.append(cl.enqueue_copy(launch.queue, hc.arg.array.view(np.uint8), hc.handle,
                                             is_blocking=False))
                copied_out += hc.nbytes
        if launch.host_copies or prints:
            cl.wait_for_events(waits)
        if prints:
            kernel_output.launched()  # PoCL's printf writes through C's stdio
        dev.count("launches")
        dev.count("bytes_to_device", launch.copied_in)
        dev.count("bytes_from_device", copied_out)

    def launch_failed(self, launch: Launch, error: BaseException):
        if launch.enqueued:
            _drain(launch.queue)
        if isinstance(error, CL_ERRORS):
            return device_error(f"launching kernel '{self.name}' on {self.device.name}", error)
        return None

    def release(self, launch: Launch) -> None:
        for buf in launch.temps:
            self.device.pool.release(buf)


def _drain(queue) -> None:
    """After a failed launch: wait until the device is done with our buffers before they are reused."""
    try:
        queue.finish()
    except CL_ERRORS:
        pass
