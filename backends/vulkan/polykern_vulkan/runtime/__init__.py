"""The Vulkan runtime plugin: ``module.create.vulkan`` and ``module.load_from_bytes.vulkan``.

Importing it loads the ``vulkan`` binding (cffi over libvulkan) and creates the process-wide
VkInstance to find a usable device; if either fails the import fails with the reason, which
``polykern backends`` shows and which makes builds produce the compile-only fallback. The logical
device is created on first use.

    instance.py      the VkInstance (once per process, destroyed at exit) and the device choice
    device.py        logical device, features, command contexts, submission, object lifetime, stats
    queues.py        its compute queues (one per stream where the family has several), timeline semaphores
    buffers.py       pooled VkBuffers (size classes), host-visible or staged
    device_array.py  DeviceArray: data kept on the device across launches
    abi.py           the launch ABI from FunctionInfo.attrs + SPIR-V capability scan
    program.py       shader module + layouts per kernel, pipelines per launch shape (lazy, cached, at most 64)
    kernel.py        VulkanKernel: one launch
    streams.py       streams and events (pk.Stream): a queue and its timeline values, timestamp slots
    module.py        VulkanModule, create, load_from_bytes
    vkresult.py      VkResult codes/names -> DeviceError

Environment: ``POLYKERN_VULKAN_DEVICE`` (index or name substring), ``POLYKERN_VULKAN_STAGING``
(1/0: force/forbid staging copies), ``POLYKERN_VULKAN_POOL_MB`` (free-buffer cache, default
256), ``POLYKERN_VULKAN_TIMEOUT_S`` (per-launch wait, default 600), ``POLYKERN_VULKAN_QUEUES`` (the most
queues of the compute family to use, default 8).
"""
from __future__ import annotations

try:
    import vulkan  # noqa: F401
except ImportError:
    raise
except Exception as e:  # the binding raises OSError when libvulkan itself is missing
    raise ImportError(f"{type(e).__name__}: {e} (is the Vulkan loader libvulkan1 installed?)", name="vulkan") from e

from polykern import registry

from .instance import probe

_INSTANCE = probe()  # BackendUnavailableError: no ICD / no usable device -> the runtime is unavailable

from . import device as _device  # noqa: E402
from .device_array import DeviceArray, empty, to_device, zeros  # noqa: E402
from .module import VulkanModule, create, load_from_bytes  # noqa: E402
from .streams import make_stream  # noqa: E402

__all__ = ["VulkanModule", "DeviceArray", "create", "load_from_bytes", "devices", "register", "stats",
           "to_device", "empty", "zeros", "get_device", "synchronize"]


def devices():
    """Every physical device the loader reports; the one polykern runs on is marked."""
    out = []
    for p in _INSTANCE.physical:
        note = " [selected]" if p is _INSTANCE.chosen else (f" [unusable: {p.problem()}]" if p.problem() else "")
        out.append(p.describe() + note)
    return out


def get_device() -> "_device.Device":
    """The process-wide logical device (created on first call)."""
    return _device.get()


def stats() -> dict:
    """Creation counters of the device (buffers_created, buffers_reused, pipelines_created,
    shader_modules_created, command_contexts_created, launches, ...); empty before first use."""
    dev = _device.peek()
    if dev is None:
        return {}
    with dev._lock:
        return dict(dev.stats)


def synchronize(dev=None) -> None:
    """Wait for everything submitted to the device's queues (launches with only device arrays return once
    queued)."""
    (dev or _device.get()).wait_all()


def register() -> None:
    registry.register("module.create.vulkan", create)
    registry.register("runtime.device_array.vulkan", DeviceArray)  # pk.to_device(x, device="vulkan...")
    registry.register("module.load_from_bytes.vulkan", load_from_bytes)
    registry.register("runtime.stream.vulkan", make_stream)  # pk.Stream(device="vulkan")
    registry.register("runtime.synchronize.vulkan", synchronize)  # pk.synchronize, pk.autotune
