"""The process-wide WebGPU device (via wgpu-py / wgpu-native) and its buffer pool.

One adapter + device is realized lazily and thread-safely on first use
(``polykern.runtime.lazy.Lazy``: one realization, a failure is retried by the next caller).
The device is requested with the adapter's own compute limits (workgroup size,
workgroup storage, storage-buffer size) instead of WebGPU's conservative defaults,
and with ``shader-f16`` when the adapter offers it.

Every queue operation of polykern goes through ``Context.lock`` (wgpu-py objects are
not documented as thread-safe), so concurrent launches are serialized.
"""
from __future__ import annotations

import threading
from typing import Dict, List, Optional, Tuple

import wgpu

from polykern.errors import DeviceError
from polykern.runtime.lazy import Lazy
from polykern.runtime.xdg_runtime_dir import ensure_runtime_dir

# Before wgpu probes any adapter: Mesa's EGL probe needs a session runtime directory (polykern/runtime/xdg_runtime_dir.py).
ensure_runtime_dir()

_LIMIT_KEYS = (
    "max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x", "max-compute-workgroup-size-y",
    "max-compute-workgroup-size-z", "max-compute-workgroup-storage-size", "max-compute-workgroups-per-dimension",
    "max-storage-buffer-binding-size", "max-buffer-size", "max-storage-buffers-per-shader-stage",
    "max-bindings-per-bind-group", "max-uniform-buffer-binding-size",
)
OPTIONAL_FEATURES = ("shader-f16", "subgroup")

STORAGE_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
UNIFORM_USAGE = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST

_POOL_PER_CLASS = 8  # free buffers kept per (usage, size class)
_MIN_CLASS = 256


def describe_adapter(adapter) -> str:
    info = adapter.info
    return (f"{info.get('device') or info.get('description') or 'adapter'} "
            f"({info.get('backend_type', '?')}, {info.get('adapter_type', '?')})")


def size_class(nbytes: int) -> int:
    """Pool granularity: powers of two from 256 bytes."""
    n = _MIN_CLASS
    while n < nbytes:
        n *= 2
    return n


class Context:
    def __init__(self):
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        if adapter is None:
            raise DeviceError("wgpu found no WebGPU adapter (no Vulkan/Metal/D3D12 driver?)")
        limits = {k: adapter.limits[k] for k in _LIMIT_KEYS if k in adapter.limits}
        features = [f for f in OPTIONAL_FEATURES if f in adapter.features]
        self.adapter = adapter
        self.device = adapter.request_device_sync(required_features=features, required_limits=limits)
        self.features = frozenset(self.device.features)
        self.limits = dict(self.device.limits)
        self.name = describe_adapter(adapter)
        self.lock = threading.RLock()
        self._free: Dict[Tuple[int, int], List] = {}

    # ------------------------------------------------------------ pooled buffers

    def acquire(self, nbytes: int, usage: int):
        """A buffer of at least ``nbytes`` (a multiple of 4); contents undefined."""
        cls = size_class(max(nbytes, 4))
        limit = self.limits.get("max-buffer-size", 1 << 28)
        if cls > limit:
            cls = max(nbytes, 4)
            cls += -cls % 4
        with self.lock:
            free = self._free.get((int(usage), cls))
            if free:
                return free.pop()
        return self.device.create_buffer(size=cls, usage=usage)

    def release(self, buf, usage: int) -> None:
        with self.lock:
            free = self._free.setdefault((int(usage), buf.size), [])
            if len(free) < _POOL_PER_CLASS:
                free.append(buf)
                return
        buf.destroy()

    def pooled(self) -> int:
        with self.lock:
            return sum(len(v) for v in self._free.values())


def _make() -> Context:
    try:
        return Context()
    except DeviceError:
        raise
    except Exception as e:  # wgpu raises plain RuntimeError/GPUError subclasses
        raise DeviceError(f"cannot create a WebGPU device: {type(e).__name__}: {e}") from e


_CONTEXT: Lazy[Context] = Lazy(_make)


def context() -> Context:
    return _CONTEXT.get()


def context_error() -> Optional[BaseException]:
    """None if a device is (or can be) realized; else the error of trying."""
    try:
        context()
    except Exception as e:
        return e
    return None


def devices() -> List[str]:
    """Every adapter wgpu can see, described for ``polykern backends``."""
    return [describe_adapter(a) for a in wgpu.gpu.enumerate_adapters_sync()]
