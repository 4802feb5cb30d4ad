"""Which CUDA device a launch runs on: the one its device-memory arguments live on.

A launch whose buffer arguments are ``DeviceArray``s of ``cuda:1``, or CuPy/PyTorch arrays on it (the
driver says where a pointer lives: ``cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)``), runs
on ``cuda:1``. Arguments on two devices are a LaunchError naming one argument of each. With no device
arguments (NumPy arrays only) the launch runs on the current ``pk.Stream``'s device, else on the default
device (``POLYKERN_CUDA_DEVICE``). Managed and page-locked host memory say nothing about the device.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from polykern.errors import LaunchError
from polykern.runtime.launch import BufferArg
from polykern.streams import current_runtime_stream

from . import device as _device
from . import libcuda
from .device_array import DeviceArray

__all__ = ["launch_device", "quick_device"]


def _ordinal(a: BufferArg) -> Optional[int]:
    """The device ordinal of buffer argument ``a`` (None: host memory, or nothing says)."""
    if a.is_host:
        return None
    if isinstance(a.obj, DeviceArray):
        return a.obj.device.ordinal
    name, index = a.device
    if name == "cuda" and index is not None:
        return index
    if name != "cuda" or a.size == 0:
        return None
    try:
        info = libcuda.pointer_info(a.ptr)
    except OSError:  # cannot ask the driver
        return None
    if info is None or info.managed or info.memory_type == libcuda.MEMORY_HOST:
        return None
    return info.ordinal


def launch_device(kernel: str, prepared, default) -> Any:
    """The CUDADevice a launch of ``kernel`` with checked arguments ``prepared`` runs on."""
    seen: Dict[int, BufferArg] = {}
    for a in prepared:
        if not isinstance(a, BufferArg):
            continue
        ordinal = _ordinal(a)
        if ordinal is None:
            continue
        seen.setdefault(ordinal, a)
        if len(seen) > 1:
            (o1, a1), (o2, a2) = seen.items()
            raise LaunchError(f"kernel '{kernel}': argument '{a1.name}' (#{a1.index + 1}) is on cuda:{o1} but "
                              f"argument '{a2.name}' (#{a2.index + 1}) is on cuda:{o2}; a launch runs on one device: "
                              f"copy one of them (x.to('cuda:{o1}'))")
    if seen:
        return _device.at(next(iter(seen)))
    impl = current_runtime_stream("cuda", f"launching kernel '{kernel}'")
    return impl.device if impl is not None else default


def quick_device(args) -> Any:
    """The device of the first device array among ``args`` (a ``DeviceArray``, or a ``__cuda_array_interface__``
    array in a device's primary context), None if there is none: where the launch fast path looks next. The
    full check (:func:`launch_device`) runs when that fast path misses too."""
    for v in args:
        if type(v) is DeviceArray:
            return v.device
        try:
            cai = getattr(v, "__cuda_array_interface__", None)
            ptr = cai["data"][0] if isinstance(cai, dict) else None
        except Exception:  # noqa: BLE001 - odd arrays: the full check says what is wrong
            return None
        if type(ptr) is int and ptr > 0:
            return _device.by_context(libcuda.pointer_context(ptr))
    return None
