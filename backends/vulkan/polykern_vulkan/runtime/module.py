"""``VulkanModule``: the real, runnable vulkan module (``module.create.vulkan`` /
``module.load_from_bytes.vulkan``).

It is a :class:`polykern.module.DeviceModule`, so ``save_to_bytes`` is the one shared serializer
and byte-identical to the fallback's. Creating or loading a module validates every kernel's
launch ABI and SPIR-V header (``ArtifactError``) but touches no device; the logical device,
shader modules and pipelines are realized lazily and thread-safely on first use, and destroyed
when the module is garbage collected (or at exit).
"""
from __future__ import annotations

import weakref
from typing import Dict, List, Mapping, Optional


from polykern.kbin import wire
from polykern.runtime.device_array import DeviceArrayModule
from polykern.runtime.lazy import LazyMap
from polykern.module import DeviceModule, FunctionInfo
from polykern.kbin.payload_formats import check_payload

from ..fallback import VulkanFallbackModule
from . import device as _device
from .abi import parse_module
from .device_array import DeviceArray
from .kernel import VulkanKernel
from .program import KernelProgram

__all__ = ["VulkanModule", "create", "load_from_bytes"]


def _close_programs(programs: List[KernelProgram]) -> None:
    for p in programs:
        p.close()
    programs.clear()


class VulkanModule(DeviceArrayModule, DeviceModule):
    """SPIR-V shaders runnable on the process' Vulkan device."""
    device_array_class = DeviceArray

    is_runnable = True
    source_preference = ("spirv-asm",)

    def __init__(self, payload: Mapping[str, bytes], fmt: str, fmap: Mapping[str, FunctionInfo],
                 sources: Optional[Mapping[str, str]] = None):
        super().__init__("vulkan", payload, fmt, fmap, sources)
        self.abis = parse_module(self.fmt, self.functions, self.payload)
        self._realized: List[KernelProgram] = []
        self._programs: LazyMap = LazyMap(self._make_program)
        self._kernels: LazyMap = LazyMap(self._make_kernel)
        weakref.finalize(self, _close_programs, self._realized)

    @property
    def device(self) -> "_device.Device":
        """The Vulkan device this module runs on (created on first use)."""
        return _device.get()

    def _make_program(self, name: str) -> KernelProgram:
        program = KernelProgram(self.device, self.abis[name], self.payload[name])
        self._realized.append(program)
        return program

    def _make_kernel(self, name: str) -> VulkanKernel:
        return VulkanKernel(self, self.functions[name], self._programs.get(name))

    def _get_function(self, info: FunctionInfo) -> VulkanKernel:
        """The launchable kernel; realizes its shader module on first call (DeviceError if this device
        cannot run it). Pipelines are created per block shape at launch."""
        return self._kernels.get(info.name)


def create(payload: Dict[str, bytes], fmt: str, fmap: Mapping[str, FunctionInfo],
           sources: Dict[str, str]) -> VulkanModule:
    return VulkanModule(payload, fmt, fmap, sources)


def load_from_bytes(data: bytes, sources: Dict[str, str]) -> VulkanModule:
    fmt, fmap, payload = wire.decode_device_payload("vulkan", data)
    check_payload("vulkan", VulkanFallbackModule.payload_formats, fmt, fmap, payload)  # before anything trusts it
    return VulkanModule(payload, fmt, fmap, sources)
