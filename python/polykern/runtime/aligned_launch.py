"""The launch-time alignment check of kernels with wide access (``pk.vload``/``pk.vstore``), on every runtime.

A kernel whose FunctionInfo has the attribute ``vector_align`` (``polykern.ir.vector``) needs some
buffer parameters aligned to ``n * element bytes``. ``DeviceModule.get_function`` wraps such a kernel
in an :class:`AlignedKernel`, which refuses a misaligned buffer with a :class:`LaunchError` naming the
kernel, the argument, its address and the alignment, before the runtime sees it -- the same words on
every runtime, whether or not its code generator fused the accesses (a runtime that copies a NumPy
array to the device would be aligned anyway; refusing everywhere keeps one meaning).

What is checked: the address of a NumPy array, an ``__array_interface__`` / ``__cuda_array_interface__`` /
DLPack buffer, or a ``__polykern_buffer__`` object. A polykern device array (``DeviceArrayBase``) is a
whole allocation of its runtime, never a view, and its API aligns it (cuMemAlloc: 256 bytes, OpenCL:
``CL_DEVICE_MEM_BASE_ADDR_ALIGN``, Vulkan and WebGPU buffers: bound at offset 0), so it passes as is;
so do buffers polykern allocates itself (NumPy: 16 bytes or more on 64-bit hosts).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import numpy as np

from .device_array import DeviceArrayBase
from ..errors import ArtifactError, LaunchError
from ..ir.vector import ALIGN_ATTR, parse_alignment
from .launch import _buffer

__all__ = ["AlignedKernel", "alignment_of", "wrap_if_aligned"]


def alignment_of(info) -> Dict[int, Tuple[str, int]]:
    """Argument position -> (name, bytes) for every buffer parameter ``info`` needs aligned."""
    text = info.attrs.get(ALIGN_ATTR, "")
    try:
        req = parse_alignment(text)
    except ValueError:
        raise ArtifactError(f"kernel '{info.name}': malformed {ALIGN_ATTR} attribute {text[:60]!r}") from None
    names = {a.name: i for i, a in enumerate(info.args) if a.is_buffer}
    unknown = sorted(set(req) - set(names))
    if unknown:
        raise ArtifactError(f"kernel '{info.name}': {ALIGN_ATTR} names {unknown[0]!r}, which is not a buffer "
                            "parameter")
    return {names[n]: (n, v) for n, v in req.items()}


def wrap_if_aligned(info, fn: Callable) -> Callable:
    needs = alignment_of(info)
    return AlignedKernel(info, fn, needs) if needs else fn


def _quick_address(obj: Any):
    """The data address of a NumPy array or a ``__cuda_array_interface__`` object without reading the rest of
    its description, or None (then the full reading, ``launch._buffer``, decides). Only an aligned address is
    taken from here: reading every buffer in full on every launch cost 40-50 us a buffer (H200 host, CuPy arrays:
    a 4096 x 4096 layer norm's launch took 208 us of host time for 25 us of GPU work)."""
    try:
        if type(obj) is np.ndarray:
            return obj.__array_interface__["data"][0]
        if getattr(type(obj), "__cuda_array_interface__", None) is not None:
            ptr = obj.__cuda_array_interface__["data"][0]
            return ptr if type(ptr) is int else None
    except Exception:  # noqa: BLE001 - the full reading says what is wrong
        return None
    return None


class AlignedKernel:
    """``kernel(*args, **launch)``: checks the buffers' alignment, then launches ``fn``."""

    def __init__(self, info, fn: Callable, needs: Dict[int, Tuple[str, int]]):
        self.info, self.fn, self.needs = info, fn, needs

    def __getattr__(self, name: str) -> Any:  # the wrapped launcher's other attributes (info, ...)
        return getattr(self.fn, name)

    def __call__(self, *args, **kwargs):
        if all(i >= len(args) or isinstance(args[i], DeviceArrayBase) or (q := _quick_address(args[i])) is not None
               and q % align == 0 for i, (_, align) in self.needs.items()):
            return self.fn(*args, **kwargs)  # every address aligned: the runtime checks the rest of the arguments
        for i, (name, align) in self.needs.items():  # else the full reading, in order (its errors first)
            if i >= len(args) or isinstance(args[i], DeviceArrayBase):
                continue  # a count mismatch is the launcher's message; device arrays are aligned
            ptr = _buffer(self.info, i, args[i]).ptr
            if ptr % align:
                raise LaunchError(
                    f"kernel '{self.info.name}': argument {i} ('{name}') is at address {ptr:#x}, which is not "
                    f"aligned to {align} bytes; its wide accesses (pk.vload/pk.vstore, pk.copy_async) need that "
                    "alignment (an offset view of a buffer, such as x[1:], is not aligned: pass an aligned copy, "
                    "e.g. x[1:].copy() or a fresh device array)")
        return self.fn(*args, **kwargs)
