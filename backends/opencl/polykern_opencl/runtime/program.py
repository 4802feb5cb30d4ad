"""Building a module's OpenCL C into a ``cl.Program`` on one device, and its kernel objects.

A module's payload is one OpenCL C translation unit holding every kernel; it is built once per
(module, device), lazily (module.py holds the :class:`polykern.runtime.lazy.LazyMap`). Before building,
the ``#pragma OPENCL EXTENSION x : enable`` lines the codegen emitted (cl_khr_fp64, 64-bit
atomics) are checked against the device, so a missing extension is a DeviceError naming it rather
than a compiler log. A failed build is a CompileError carrying the device's build log; nothing is
cached, so the next launch tries again.

Build options: ``-cl-std=CL1.2`` on every device whose OpenCL C version is 1.2 or newer: the codegen
emits OpenCL C 1.2, and without the option an OpenCL 3.0 compiler may treat 2.0 names
(``atomic_float``, ...) as reserved and reject a kernel that uses one as its name. Then
``-cl-fp32-correctly-rounded-divide-sqrt`` where the device offers it, so f32 ``/`` and ``sqrt`` are
correctly rounded as on the other backends (``polykern.numerics``; without it OpenCL allows 2.5 and 3
ulp). Then ``POLYKERN_OPENCL_BUILD_OPTIONS`` (read at each build; a ``-cl-std=`` there replaces the
default). Floating-point contraction is switched off in the source (``#pragma OPENCL FP_CONTRACT OFF``).

``clSetKernelArg`` is the one OpenCL call that is not thread-safe on a shared kernel object, so
every :class:`KernelObject` has a lock held from the first ``set_arg`` to the enqueue (microseconds);
the enqueued command keeps its own copy of the arguments, so waiting happens outside the lock.
"""
from __future__ import annotations

import os
import re
import shlex
import threading
from typing import Dict, List

import pyopencl as cl

from polykern.errors import CompileError, DeviceError

from .clerrors import CL_ERRORS, cl_call, device_error, status_name

__all__ = ["Program", "KernelObject", "required_extensions", "build_options", "BUILD_OPTIONS_ENV"]

BUILD_OPTIONS_ENV = "POLYKERN_OPENCL_BUILD_OPTIONS"
CORRECTLY_ROUNDED_DIVIDE_SQRT = "-cl-fp32-correctly-rounded-divide-sqrt"
_PRAGMA = re.compile(r"^\s*#\s*pragma\s+OPENCL\s+EXTENSION\s+(\w+)\s*:\s*enable\s*$", re.M)


def required_extensions(source: str) -> List[str]:
    """Extensions the source enables (sorted, unique); ``all`` is not an extension."""
    return sorted({m for m in _PRAGMA.findall(source) if m != "all"})


def _c_version(text: str):
    m = re.search(r"OpenCL C (\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def build_options(device) -> List[str]:
    """The clBuildProgram options for ``device`` (see the module docstring)."""
    extra = shlex.split(os.environ.get(BUILD_OPTIONS_ENV, ""))
    options: List[str] = []
    version = _c_version(getattr(device, "opencl_c_version", ""))
    if version is not None and version >= (1, 2) and not any(o.startswith("-cl-std=") for o in extra):
        options.append("-cl-std=CL1.2")
    if getattr(device, "correctly_rounded_divide_sqrt", False):
        options.append(CORRECTLY_ROUNDED_DIVIDE_SQRT)
    return options + extra


def _build_log(prg, dev, err: BaseException) -> str:
    try:
        log = prg.get_build_info(dev, cl.program_build_info.LOG)
        if log and log.strip():
            return str(log).strip()
    except Exception:  # the program object may not exist after a failed (cached) build
        pass
    return str(err).strip()


class KernelObject:
    """A ``cl.Kernel`` with its lock and its work-group limits on the device."""

    def __init__(self, program: "Program", symbol: str):
        self.symbol = symbol
        dev = program.device
        with cl_call(f"creating kernel '{symbol}' on {dev.name}"):
            self.kernel = cl.Kernel(program.program, symbol)
            info = cl.kernel_work_group_info
            self.work_group_size = int(self.kernel.get_work_group_info(info.WORK_GROUP_SIZE, dev.cl_device))
            self.local_mem_size = int(self.kernel.get_work_group_info(info.LOCAL_MEM_SIZE, dev.cl_device))
        self.lock = threading.Lock()
        dev.count("kernels_created")


class Program:
    """One module's OpenCL C built for one device."""

    def __init__(self, device, source: str, label: str = "module"):
        self.device = device
        self.source = source
        missing = [x for x in required_extensions(source) if not device.has_extension(x)]
        if missing:
            raise DeviceError(f"OpenCL: the {label} needs {', '.join(missing)}, which {device.name} does not "
                              "support (its kernels use 64-bit floats, 64-bit atomics or subgroups); pick another "
                              "device with POLYKERN_OPENCL_DEVICE or avoid those features", name="missing extension")
        options = build_options(device)
        self.options = options
        device.count("program_builds")
        prg = cl.Program(device.context, source)
        try:
            self.program = prg.build(options=options, devices=[device.cl_device])
        except CL_ERRORS as e:
            code = getattr(e, "code", None)
            if code in (-11, -43, -42):  # BUILD_PROGRAM_FAILURE, INVALID_BUILD_OPTIONS, INVALID_BINARY
                raise CompileError(f"OpenCL: building the {label} for {device.name} failed ({status_name(code)})",
                                   log=_build_log(prg, device.cl_device, e)) from None
            raise device_error(f"building the {label} for {device.name}", e) from None
        try:
            self.build_log = str(self.program.get_build_info(device.cl_device, cl.program_build_info.LOG)).strip()
        except Exception:
            self.build_log = ""
        device.count("programs_built")
        self._kernels: Dict[str, KernelObject] = {}
        self._lock = threading.Lock()

    def kernel(self, symbol: str) -> KernelObject:
        with self._lock:
            k = self._kernels.get(symbol)
            if k is None:
                k = self._kernels[symbol] = KernelObject(self, symbol)
            return k

