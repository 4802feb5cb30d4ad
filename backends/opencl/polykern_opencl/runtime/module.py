"""``OpenCLModule``: the real, runnable opencl module (``module.create.opencl`` /
``module.load_from_bytes.opencl``).

It is a :class:`polykern.module.DeviceModule`, so ``save_to_bytes`` is the one shared serializer
and byte-identical to the fallback's. Creating or loading a module checks the payload (fmt ``cl``,
UTF-8 OpenCL C, an ``entry`` symbol per kernel; ArtifactError otherwise) but touches no device.
The program is built on first use, once per (module, device), thread-safely; a failed build
(CompileError with the build log, or DeviceError) is not cached and the next use retries.
"""
from __future__ import annotations

import re
import threading
from typing import Mapping, Optional

import pyopencl as cl

from polykern.kbin import wire
from polykern.errors import ArtifactError
from polykern.runtime.device_array import DeviceArrayModule
from polykern.runtime.lazy import LazyMap
from polykern.module import ArgInfo, DeviceModule, FunctionInfo, payload_text, wrap_launch
from polykern.ir.types import i32, u32, u64
from polykern.kbin.payload_formats import check_payload

from ..codegen import CPU_VARIANT_MARK
from ..fallback import OpenCLFallbackModule
from . import device as _device
from .device_array import DeviceArray
from .kernel import OpenCLKernel
from .program import Program

__all__ = ["OpenCLModule", "create", "load_from_bytes"]

_SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class OpenCLModule(DeviceArrayModule, DeviceModule):
    """OpenCL C runnable on the process' OpenCL device."""
    device_array_class = DeviceArray

    is_runnable = True
    source_preference = ("cl",)

    def __init__(self, payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo],
                 sources: Optional[Mapping[str, str]] = None):
        super().__init__("opencl", payload, fmt, fmap, sources)
        if self.fmt != "cl":
            raise ArtifactError(f"opencl module: unsupported payload format {self.fmt!r} (this runtime runs "
                                "OpenCL C source, fmt 'cl')")
        text = payload_text(self.payload)  # type: ignore[arg-type]
        if text is None:
            raise ArtifactError("opencl module: the payload is not UTF-8 OpenCL C text")
        self.source = text
        self.symbols = {}
        for name, info in self.functions.items():
            symbol = info.attrs.get("entry", name)
            if not _SYMBOL.match(symbol):
                raise ArtifactError(f"opencl module: kernel '{name}' has a malformed entry symbol {symbol!r}")
            self.symbols[name] = symbol
        self._programs: LazyMap = LazyMap(self._build_program)
        self._kernels: LazyMap = LazyMap(self._make_kernel)
        #: programs this module built (observable: repeated launches must not rebuild)
        self.programs_built = 0
        self._count_lock = threading.Lock()

    # ------------------------------------------------------------ device objects
    @property
    def device(self) -> "_device.Device":
        """The OpenCL device this module runs on (context created on first use)."""
        return _device.get()

    def source_for(self, dev: "_device.Device") -> str:
        """The part of the source ``dev`` runs: after CPU_VARIANT_MARK on a CPU device (the CPU runtimes'
        default safety, docs/correctness.md), before it elsewhere."""
        raw, _, cpu = self.source.partition(CPU_VARIANT_MARK)
        return cpu if self.runs_cpu_form(dev) else raw

    def runs_cpu_form(self, dev: "_device.Device") -> bool:
        return CPU_VARIANT_MARK in self.source and bool(dev.cl_device.type & cl.device_type.CPU)

    def info_on(self, dev: "_device.Device", name: str) -> FunctionInfo:
        """``name``'s FunctionInfo as ``dev`` runs it (its CPU form on a CPU device: cpu_safe_info)."""
        info = self.function_info(name)
        return cpu_safe_info(info) if self.runs_cpu_form(dev) and "cpu_entry" in info.attrs else info

    def get_function(self, name: str):
        dev = self.device
        name = self.function_info(name).name
        return self.launcher((dev, name), lambda: wrap_launch(self.info_on(dev, name), self._kernels.get((dev, name))))

    def _build_program(self, dev: "_device.Device") -> Program:
        program = Program(dev, self.source_for(dev),
                          label=f"opencl module ({', '.join(self.functions) or 'no kernels'})")
        with self._count_lock:
            self.programs_built += 1
        return program

    def program(self, dev: Optional["_device.Device"] = None) -> Program:
        """This module's program on ``dev`` (default: the chosen device), built on first call."""
        return self._programs.get(dev or self.device)

    def _make_kernel(self, key) -> OpenCLKernel:
        dev, name = key
        info = self.info_on(dev, name)
        kobj = self._programs.get(dev).kernel(info.attrs.get("entry", self.symbols[name]))
        return OpenCLKernel(self, info, dev, kobj)

    def _get_function(self, info: FunctionInfo) -> OpenCLKernel:
        """The launchable kernel; builds the program on first call (CompileError / DeviceError if this
        device cannot build it; the next call retries)."""
        return self._kernels.get((self.device, info.name))

    def kernel_on(self, name: str, dev: "_device.Device") -> OpenCLKernel:
        """``name`` on another enumerated device (``polykern_opencl.runtime.get_device(i)``)."""
        return self._kernels.get((dev, self.function_info(name).name))


def cpu_safe_info(info: FunctionInfo) -> FunctionInfo:
    """The FunctionInfo of a kernel's CPU form from its ``cpu_*`` attributes (codegen.build_with_cpu_variant):
    those attributes unprefixed, and checked mode's hidden arguments when it has checked accesses."""
    attrs = {k: v for k, v in info.attrs.items() if not k.startswith("cpu_")}
    attrs.update({k[4:]: v for k, v in info.attrs.items() if k.startswith("cpu_")})
    args = list(info.args)
    if attrs.get("bounds_check") == "1":
        if attrs.get("bounds_lengths"):
            args.append(ArgInfo.buffer("bounds_lens", u64 if attrs.get("bounds_index_bits") == "64" else u32, True))
        args.append(ArgInfo.buffer("bounds_err", i32, False))
    return FunctionInfo(info.name, tuple(args), info.launch_tags, info.shared_bytes, attrs)


def create(payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo],
           sources: Optional[Mapping[str, str]] = None) -> OpenCLModule:
    return OpenCLModule(payload, fmt, fmap, sources)


def load_from_bytes(data: bytes, sources: Optional[Mapping[str, str]] = None) -> OpenCLModule:
    fmt, fmap, payload = wire.decode_device_payload("opencl", data)
    check_payload("opencl", OpenCLFallbackModule.payload_formats, fmt, fmap, payload)  # before anything trusts it
    return OpenCLModule(payload, fmt, fmap, sources)
