"""Launching a kernel with a ``pk.shared_dynamic`` array (polykern/ir/dynamic_shared.py), on every runtime.

``DeviceModule.get_function`` wraps such a kernel in a :class:`DynamicSharedKernel`: the caller passes
the user's arguments and ``shared_size=`` (the array's length in elements); the wrapper checks it
(present, an integer >= 1, and the kernel's static plus dynamic shared memory within the device's
limit) and passes it on as the hidden size argument. The limit is the device function's
``max_shared_bytes`` where its runtime sets one (CUDA: the opt-in maximum per block, OpenCL:
``CL_DEVICE_LOCAL_MEM_SIZE``, Vulkan: ``maxComputeSharedMemorySize``, WebGPU:
``maxComputeWorkgroupStorageSize``), else the language's limit of shared arrays (64 KiB).
"""
from __future__ import annotations

import operator
from typing import Any, Callable

from ..errors import ArtifactError, LaunchError
from ..ir.dynamic_shared import ATTR, ELEM_BYTES_TEXT, MIN_LENGTH, SIZE_TYPE, parse_attr
from ..kbin.messages import quote
from ..lang.body_facts import ARRAY_LIMITS
from .launch_rules import message

__all__ = ["DynamicSharedKernel", "wrap_if_dynamic", "dynamic_shared_of"]


def dynamic_shared_of(info):
    """``(size argument index, element bytes)`` of a kernel with a dynamic shared array, else None;
    ArtifactError unless the attribute names an i32 scalar argument (libpolykern refuses the same)."""
    text = info.attrs.get(ATTR)
    if text is None:
        return None
    try:
        index, elem = parse_attr(text)
    except ValueError:
        index = -1
    if not 0 <= index < len(info.args) or info.args[index].type_str != SIZE_TYPE:  # a buffer's is Buffer[..]
        raise ArtifactError(message("DYNAMIC_SHARED_ATTR", info.name, quote(text), ELEM_BYTES_TEXT))
    return index, elem


def wrap_if_dynamic(info, fn: Callable, device_fn: Any = None) -> Callable:
    """``fn`` wrapped if ``info`` has a dynamic shared array; ``device_fn`` (the runtime's own kernel
    object, possibly ``fn``) may carry ``max_shared_bytes``."""
    dyn = dynamic_shared_of(info)
    if dyn is None:
        return fn
    limit = getattr(device_fn if device_fn is not None else fn, "max_shared_bytes", None)
    return DynamicSharedKernel(info, fn, dyn[0], dyn[1], limit)


class DynamicSharedKernel:
    """``kernel(*user_args, grid=, block=, shared_size=N)``."""

    def __init__(self, info, fn: Callable, index: int, elem_bytes: int, limit=None):
        self.info, self.fn, self.index, self.elem_bytes = info, fn, index, elem_bytes
        self.limit = int(limit) if limit is not None else ARRAY_LIMITS["shared"]
        self.limit_name = "the device's limit" if limit is not None else "the language's limit of shared arrays"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fn, name)

    def __call__(self, *args, grid=None, block=None, shared_size=None, **kwargs):
        where = f"kernel '{self.info.name}'"
        if shared_size is None:
            raise LaunchError(f"{where} has a pk.shared_dynamic array: give its length in elements at launch, "
                              "e.g. shared_size=256")
        try:
            n = operator.index(shared_size)
        except TypeError:
            raise LaunchError(f"{where}: shared_size must be an integer number of elements, got "
                              f"{type(shared_size).__name__} {shared_size!r}") from None
        if isinstance(shared_size, bool) or n < MIN_LENGTH:
            raise LaunchError(f"{where}: shared_size must be at least {MIN_LENGTH} element, got {shared_size!r}")
        total = n * self.elem_bytes + self.info.shared_bytes
        if total > self.limit:
            static = (f" plus {self.info.shared_bytes} bytes of static shared arrays, {total} in all"
                      if self.info.shared_bytes else "")
            raise LaunchError(f"{where}: shared_size={n} is {n * self.elem_bytes} bytes{static}; "
                              f"{self.limit_name} is {self.limit} bytes per workgroup")
        if len(args) != self.index:
            users = ", ".join(f"{a.name}: {a.type_str}" for a in self.info.args[:self.index])
            raise LaunchError(f"{where} takes {self.index} argument{'s' * (self.index != 1)} ({users}) and "
                              f"shared_size=, got {len(args)} arguments")
        return self.fn(*args, n, grid=grid, block=block, **kwargs)
