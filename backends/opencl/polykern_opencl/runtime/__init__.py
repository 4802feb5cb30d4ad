"""The OpenCL runtime plugin: ``module.create.opencl`` and ``module.load_from_bytes.opencl`` via pyopencl.

Importing it imports pyopencl and asks the ICD loader for platforms and devices (platforms.py);
if either fails the import fails with the reason, which ``polykern backends`` shows and which
makes builds produce the compile-only fallback. Contexts, queues and programs are created on
first use.

    clerrors.py      CL status codes -> DeviceError (code and CL_* name)
    platforms.py     enumeration and the device choice (POLYKERN_OPENCL_DEVICE)
    device.py        context + in-order queue per device, limits, extensions, counters (stats)
    buffers.py       pooled cl.Buffers by size class (POLYKERN_OPENCL_POOL_MB)
    device_array.py  DeviceArray: data kept on the device across launches
    program.py       the module's program per device (build log in CompileError), kernel objects
    kernel.py        OpenCLKernel: one launch (scalar ABI, copies, limits)
    streams.py       streams (one in-order queue each) and events (markers) for pk.Stream
    module.py        OpenCLModule, create, load_from_bytes

Environment: ``POLYKERN_OPENCL_DEVICE`` (index, ``platform:device``, ``gpu``/``cpu``/``accelerator``
or a name substring; read at import), ``POLYKERN_OPENCL_BUILD_OPTIONS`` (extra clBuildProgram
options), ``POLYKERN_OPENCL_POOL_MB`` (free-buffer cache, default 256).
"""
from __future__ import annotations

try:
    import pyopencl  # noqa: F401
except ImportError:
    raise
except Exception as e:  # e.g. OSError when libOpenCL itself cannot be loaded
    raise ImportError(f"{type(e).__name__}: {e} (is an OpenCL ICD loader, ocl-icd-libopencl1, installed?)",
                      name="pyopencl") from e

from polykern import registry

from . import device as _device
from .platforms import probe as _probe

_device.set_probe(_probe())  # BackendUnavailableError: no platform / no usable device -> runtime unavailable

from .device_array import DeviceArray, empty, to_device, zeros  # noqa: E402
from .module import OpenCLModule, create, load_from_bytes  # noqa: E402
from .streams import make_stream  # noqa: E402

__all__ = ["OpenCLModule", "DeviceArray", "create", "load_from_bytes", "devices", "register", "stats",
           "to_device", "empty", "zeros", "get_device", "synchronize"]


def devices():
    """Every device the ICD loader reports (platform, name, type, version); the one polykern runs
    on is marked ``[selected]``."""
    pr = _device.probe_result()
    out = []
    for e in pr.entries:
        note = " [selected]" if e is pr.chosen else (f" [unusable: {e.problem}]" if e.problem else "")
        out.append(e.describe() + note)
    return out


def get_device(index=None) -> "_device.Device":
    """The chosen device (or enumeration entry ``index``); its context is created on first call."""
    return _device.get(index)


def stats(index=None) -> dict:
    """Creation counters of a device (program_builds, programs_built, kernels_created,
    buffers_created, buffers_reused, bytes_allocated, launches, bytes_to_device, bytes_from_device,
    ...); empty before first use."""
    dev = _device.peek(index)
    if dev is None:
        return {}
    with dev._lock:
        return dict(dev.stats)


def synchronize(dev=None) -> None:
    """Wait for every queue of the device (launches with only DeviceArrays return once enqueued)."""
    (dev or _device.get()).finish_all()


def register() -> None:
    registry.register("module.create.opencl", create)
    registry.register("runtime.device_array.opencl", DeviceArray)  # pk.to_device(x, device="opencl...")
    registry.register("module.load_from_bytes.opencl", load_from_bytes)
    registry.register("runtime.stream.opencl", make_stream)  # pk.Stream(device="opencl:<i>")
    registry.register("runtime.synchronize.opencl", synchronize)  # pk.synchronize, pk.autotune
