"""The process-wide Vulkan instance and the physical device polykern runs on.

:func:`probe` runs once, when the runtime plugin is imported: it creates the instance (kept for
the life of the process and destroyed at exit) and enumerates the physical devices. No usable
device (no ICD, only Vulkan 1.0 devices, no compute queue, or ``POLYKERN_VULKAN_DEVICE`` matching
nothing) raises :class:`BackendUnavailableError`, so ``polykern backends`` shows the reason and
builds produce the compile-only fallback. The logical device is created later, on first use
(device.py).

Device choice: ``POLYKERN_VULKAN_DEVICE`` = an index into the enumeration or a substring of the
device name; otherwise the first discrete GPU, then integrated, virtual, CPU (lavapipe), other.
"""
from __future__ import annotations

import atexit
import os
import threading
from dataclasses import dataclass
from typing import Callable, List, Optional

import vulkan as vk

from polykern.errors import BackendUnavailableError
from polykern.runtime.xdg_runtime_dir import ensure_runtime_dir

from .vkresult import BINDING_ERRORS, result_of

__all__ = ["PhysicalDevice", "Instance", "probe", "instance", "DEVICE_ENV"]

DEVICE_ENV = "POLYKERN_VULKAN_DEVICE"
_TYPE_NAMES = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: "discrete GPU",
               vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: "integrated GPU",
               vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: "virtual GPU",
               vk.VK_PHYSICAL_DEVICE_TYPE_CPU: "CPU"}
_TYPE_RANK = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0, vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1,
              vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: 2, vk.VK_PHYSICAL_DEVICE_TYPE_CPU: 3}
MIN_API = (1, 1)
MAX_API = (1, 3)


def version_tuple(v: int) -> tuple:
    return (v >> 22) & 0x7F, (v >> 12) & 0x3FF, v & 0xFFF


def _fmt_version(v: int) -> str:
    return ".".join(str(x) for x in version_tuple(v))


@dataclass
class PhysicalDevice:
    index: int
    handle: object
    name: str
    type: int
    api_version: int  # what the device reports
    driver: str
    compute_family: Optional[int]

    @property
    def type_name(self) -> str:
        return _TYPE_NAMES.get(self.type, "other")

    @property
    def api(self) -> tuple:
        return version_tuple(self.api_version)[:2]

    def problem(self) -> str:
        if self.api < MIN_API:
            return f"Vulkan {_fmt_version(self.api_version)} (polykern needs 1.1+)"
        if self.compute_family is None:
            return "no compute queue"
        return ""

    def describe(self) -> str:
        driver = f", {self.driver}" if self.driver else ""
        return f"vulkan:{self.index}: {self.name} ({self.type_name}, Vulkan {_fmt_version(self.api_version)}{driver})"


def _driver_info(handle) -> str:
    try:
        drv = vk.VkPhysicalDeviceDriverProperties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES)
        props = vk.VkPhysicalDeviceProperties2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=drv)
        vk.vkGetPhysicalDeviceProperties2(handle, props)
        name = vk.ffi.string(drv.driverName).decode("utf-8", "replace")
        info = vk.ffi.string(drv.driverInfo).decode("utf-8", "replace")
        if int(drv.driverID) == getattr(vk, "VK_DRIVER_ID_MESA_LLVMPIPE", -1):
            name = "lavapipe"  # Mesa's Vulkan-on-llvmpipe driver (reports itself as "llvmpipe")
        return ", ".join(x for x in (name, info) if x)
    except Exception:  # VkPhysicalDeviceDriverProperties is Vulkan 1.2; older drivers just lack the text
        return ""


def _describe(index: int, handle) -> PhysicalDevice:
    props = vk.vkGetPhysicalDeviceProperties(handle)
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(handle)
    compute = [i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
    # Prefer a compute-only family (async compute) when there is one.
    only = [i for i in compute if not families[i].queueFlags & vk.VK_QUEUE_GRAPHICS_BIT]
    family = (only or compute or [None])[0]
    driver = _driver_info(handle) if version_tuple(props.apiVersion)[:2] >= (1, 2) else ""
    return PhysicalDevice(index, handle, str(props.deviceName), int(props.deviceType), int(props.apiVersion),
                          driver, family)


class Instance:
    """The VkInstance and its physical devices; ``chosen`` is the one polykern uses."""

    def __init__(self):
        ensure_runtime_dir()  # before the loader reads the ICDs and layers (polykern/runtime/xdg_runtime_dir.py)
        loader = vk.vkEnumerateInstanceVersion()
        want = min(version_tuple(loader)[:2], MAX_API)
        if want < MIN_API:
            raise BackendUnavailableError(f"the Vulkan loader is version {_fmt_version(loader)}; polykern needs 1.1+")
        self.api_version = vk.VK_MAKE_VERSION(want[0], want[1], 0)
        app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, pApplicationName="polykern",
                                   pEngineName="polykern", apiVersion=self.api_version)
        try:
            self.handle = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app), None)
        except BINDING_ERRORS as e:
            code, name = result_of(e)
            raise BackendUnavailableError(f"vkCreateInstance failed with {name} ({code}): no Vulkan driver (ICD) "
                                          "is installed or it cannot be loaded") from None
        self._lock = threading.Lock()
        self.closed = False
        self._before_close: List[Callable[[], None]] = []
        atexit.register(self.close)
        try:
            self.physical: List[PhysicalDevice] = [_describe(i, h) for i, h in
                                                   enumerate(vk.vkEnumeratePhysicalDevices(self.handle))]
            self.chosen = self._choose()
        except BaseException:
            self.close()
            raise

    def _choose(self) -> PhysicalDevice:
        if not self.physical:
            raise BackendUnavailableError("the Vulkan loader found no physical device (no ICD installed?)")
        usable = [p for p in self.physical if not p.problem()]
        listing = "; ".join(p.describe() + (f" [unusable: {p.problem()}]" if p.problem() else "")
                            for p in self.physical)
        sel = os.environ.get(DEVICE_ENV, "").strip()
        if sel:
            if sel.isdigit():
                found = [p for p in self.physical if p.index == int(sel)]
            else:
                found = [p for p in self.physical if sel.lower() in p.name.lower()]
            found = [p for p in found if not p.problem()]
            if not found:
                raise BackendUnavailableError(f"{DEVICE_ENV}={sel!r} matches no usable Vulkan device; devices: "
                                              f"{listing}")
            return found[0]
        if not usable:
            raise BackendUnavailableError(f"no usable Vulkan device: {listing}")
        return min(usable, key=lambda p: (_TYPE_RANK.get(p.type, 4), p.index))

    @property
    def api(self) -> tuple:
        return version_tuple(self.api_version)[:2]

    def before_close(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` when the instance closes, before it is destroyed (device.py: the logical device)."""
        with self._lock:
            self._before_close.append(fn)

    def close(self) -> None:
        """Destroy the instance (at exit), after what registered with :meth:`before_close`, newest first."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            first = self._before_close[::-1]
            self._before_close.clear()
        for fn in first:
            fn()
        vk.vkDestroyInstance(self.handle, None)


_INSTANCE: Optional[Instance] = None
_LOCK = threading.Lock()


def probe() -> Instance:
    """Create the process instance once (raises BackendUnavailableError when nothing can run)."""
    global _INSTANCE
    with _LOCK:
        if _INSTANCE is None:
            _INSTANCE = Instance()
        return _INSTANCE


def instance() -> Instance:
    return probe()
