"""One device-array API on every runtime: ``pk.to_device(x, device=...)``, ``pk.empty``, ``pk.zeros``.

A device string is ``"<kind>"`` or ``"<kind>:<index>"`` (:func:`parse_device`). ``"cpu"`` is host memory
(:class:`HostArray`, a NumPy allocation that CPU launches take without a copy and that exports DLPack);
every other kind is the ``DeviceArrayBase`` subclass its runtime registers under
``runtime.device_array.<kind>`` (asking for it imports the runtime). Hexagon kernels run under QEMU
user-mode emulation with no device memory of their own: ``"hexagon"`` is refused by name (pass NumPy arrays).
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

import numpy as np

from .. import backends, registry
from .device_array import DeviceArrayBase, Shape, new_copy, new_zeros
from ..errors import DeviceStringError, DeviceUnavailableError

__all__ = ["HostArray", "parse_device", "device_array_class", "to_device", "empty", "zeros"]

_DEVICE_RE = re.compile(r"([a-z][a-z0-9_]*)(?::([0-9]+))?")
#: Device kinds with no device memory of their own, and why.
NO_DEVICE_MEMORY = {"hexagon": "Hexagon kernels run under QEMU user-mode emulation, which has no device memory "
                               "of its own; pass NumPy arrays (each launch copies them in and back)"}
_DLPACK_CPU = 1


class HostArray(DeviceArrayBase):
    """The ``"cpu"`` device: a C-contiguous array in a NumPy allocation (host memory). CPU launches take it
    without a copy; ``__dlpack__`` / ``__dlpack_device__`` share its memory with NumPy, torch, JAX."""

    @staticmethod
    def _default_device() -> str:
        return "cpu"

    def _allocate(self) -> np.ndarray:
        return np.empty(max(self.nbytes, 1), np.uint8)

    @staticmethod
    def _release(device, handle) -> None:
        pass  # NumPy frees the allocation with its last reference

    def _view(self) -> np.ndarray:
        return self._live_handle()[:self.nbytes].view(self.dtype).reshape(self.shape)

    def _upload(self, data: np.ndarray) -> None:
        self._live_handle()[:self.nbytes] = data

    def _download(self, out: np.ndarray) -> None:
        out[:] = self._live_handle()[:self.nbytes]

    def _address(self) -> int:
        return int(self._live_handle().ctypes.data)

    def _device_key(self) -> Tuple[str, int]:
        return ("cpu", 0)

    def _device_label(self) -> str:
        return "cpu"

    def __dlpack__(self, *args, **kwargs):
        return self._view().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (_DLPACK_CPU, 0)


def parse_device(device: str) -> Tuple[str, Optional[int]]:
    """``"opencl:1"`` -> ``("opencl", 1)``, ``"cpu"`` -> ``("cpu", None)``; DeviceStringError otherwise."""
    m = _DEVICE_RE.fullmatch(device) if isinstance(device, str) else None
    if m is None:
        raise DeviceStringError(f"device {device!r}: expected '<kind>' or '<kind>:<index>', e.g. 'cpu', 'cuda:0', "
                                "'opencl:1', 'vulkan', 'webgpu'")
    kind, index = m.group(1), m.group(2)
    if kind == "cpu" and index not in (None, "0"):
        raise DeviceStringError(f"device {device!r}: the host is the one 'cpu' device ('cpu' or 'cpu:0')")
    return kind, None if index is None else int(index)


def device_array_class(kind: str) -> type:
    """The array class of device kind ``kind`` (imports its runtime); DeviceUnavailableError if absent."""
    if kind == "cpu":
        return HostArray
    if kind in NO_DEVICE_MEMORY:
        raise DeviceUnavailableError(f"device {kind!r}: {NO_DEVICE_MEMORY[kind]}")
    cls = registry.get(f"runtime.device_array.{kind}")
    if cls is not None:
        return cls
    rec = backends.record_for_kind(kind)
    if rec is None:
        known = sorted({"cpu", *NO_DEVICE_MEMORY, *(k for r in backends.records() for k in r.module_kinds)} - {"llvm"})
        off = "" if backends.autoload_enabled() else (f"; {backends.AUTOLOAD_ENV}=0 turned backend discovery off: "
                                                       "declare the backend yourself (its register_backend())")
        raise DeviceStringError(f"device {kind!r}: no such device kind (known: {', '.join(known)}){off}")
    reason = backends.runtime_reason(kind) or f"the {rec.display_name} runtime has no device arrays"
    raise DeviceUnavailableError(f"device {kind!r}: the {rec.display_name} runtime is not available here: {reason}")


def _resolve(device: str) -> Tuple[type, object]:
    kind, index = parse_device(device)
    cls = device_array_class(kind)
    return cls, cls._device_at(index)


def to_device(array, *, device: str = "cpu"):
    """A copy of ``array`` (NumPy-convertible, or a device array) on ``device``. A device array of the same
    runtime is copied device to device where the runtime can (CUDA: cuMemcpyPeer), else through the host."""
    cls, dev = _resolve(device)
    if isinstance(array, DeviceArrayBase):
        if isinstance(array, cls):
            copied = array._device_copy(dev)
            if copied is not None:
                return copied
        array = array.numpy()
    return new_copy(cls, array, dev)


def empty(shape: Shape, dtype, *, device: str = "cpu"):
    """An array of ``shape`` and ``dtype`` on ``device`` (contents undefined until written)."""
    cls, dev = _resolve(device)
    return cls(shape, dtype, device=dev)


def zeros(shape: Shape, dtype, *, device: str = "cpu"):
    """An array of ``shape`` and ``dtype`` on ``device``, filled with zeros."""
    cls, dev = _resolve(device)
    return new_zeros(cls, shape, dtype, dev)

