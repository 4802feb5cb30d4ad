"""``DeviceArrayBase``: the device-independent part of a runtime's ``DeviceArray``.

A runtime's ``DeviceArray`` is a C-contiguous array held in one device allocation (contents
undefined until written). This base does everything that does not touch the device: shape and dtype
normalization and checks, ``size``/``nbytes``/``ndim``, ``len()``, ``repr()``, ``__array__``,
``__polykern_buffer__``, ``fill``, ``copy_from_host``'s validation, ``numpy()``/``copy_to_host``,
``free()`` (and the finalizer that releases the allocation at garbage collection), and the
``to_device``/``empty``/``zeros`` factories (:func:`array_factories`). No device dependency.

A subclass supplies the device part:

- ``_default_device()`` (staticmethod): the device used when none is given.
- ``_allocate()``: a new allocation of ``self.nbytes`` bytes on ``self.device`` (its handle; may raise
  to refuse the size).
- ``_release(device, handle)`` (must be a staticmethod: the finalizer may not hold the array) gives
  the allocation back; called once, by ``free()`` or at garbage collection (from any thread).
- ``_upload(data)``: copy ``data`` (a flat uint8 host array of exactly ``nbytes``) to the device.
- ``_download(out)``: copy the contents into ``out`` (a flat uint8 host array of ``nbytes``).
  Both are called for empty arrays too: the subclass decides whether those touch the device.
- ``_address()``: the ``ptr`` that ``__polykern_buffer__`` reports.
- ``_device_key()``: ``(runtime name, device index)``, ``__polykern_buffer__``'s ``device``.
- ``_device_label()``: the device as ``repr()`` shows it.
- ``_index_of(device)`` (staticmethod): the device's index in its runtime's device strings (``"opencl:1"``);
  0 unless overridden. ``_device_at(index)`` (classmethod) is the device a string's index names
  (``DeviceUnavailableError`` if this process has no such device); by default only the default device.
- ``_device_copy(device)``: a new array on ``device`` (of this runtime) with this one's contents, copied without
  the host (``pk.to_device`` of a device array); None (the default) copies through the host.
- ``_zero_initialized``: True where every new allocation reads as zeros (WebGPU), so ``zeros`` skips the fill.

``DeviceArrayModule`` gives a runtime module ``to_device``/``empty``/``zeros``/``device_array`` on its device.

``_live_handle()`` is the allocation, or ``LaunchError("this DeviceArray was freed")``.
"""
from __future__ import annotations

import math
import weakref
from typing import Any, Callable, Sequence, Tuple, Union

import numpy as np

from ..errors import DeviceUnavailableError, LaunchError
from ..ir.bfloat16 import bf16_array, is_bf16_dtype
from ..ir.types import scalar_from_numpy

__all__ = ["DeviceArrayBase", "DeviceArrayModule", "Shape", "array_factories", "device_string", "new_copy",
           "new_zeros"]

Shape = Union[int, Sequence[int]]


class DeviceArrayBase:
    """A C-contiguous array in one device allocation (contents undefined until written)."""

    _zero_initialized = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        release = cls.__dict__.get("_release")
        if release is not None and not isinstance(release, staticmethod):
            raise TypeError(f"{cls.__qualname__}._release must be a staticmethod (the finalizer may not "
                            "hold the array)")

    def __init__(self, shape: Shape, dtype, *, device=None):
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
        if any(n < 0 for n in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        self.dtype = np.dtype(dtype)
        t = scalar_from_numpy(self.dtype) if self.dtype.isnative else None
        if t is None:
            raise TypeError(f"no polykern scalar type for dtype {self.dtype}")
        self._type = t
        self.device = device or self._default_device()
        self._freed = False
        self._handle = self._allocate()
        self._finalizer = weakref.finalize(self, type(self)._release, self.device, self._handle)

    # ------------------------------------------------------------ device hooks
    @staticmethod
    def _default_device():
        raise NotImplementedError

    def _allocate(self) -> Any:
        raise NotImplementedError

    @staticmethod
    def _release(device, handle) -> None:
        raise NotImplementedError

    def _upload(self, data: np.ndarray) -> None:
        raise NotImplementedError

    def _download(self, out: np.ndarray) -> None:
        raise NotImplementedError

    def _address(self) -> int:
        raise NotImplementedError

    def _device_key(self) -> Tuple[str, int]:
        raise NotImplementedError

    def _device_label(self) -> str:
        raise NotImplementedError

    @staticmethod
    def _index_of(device) -> int:
        return 0

    @classmethod
    def _device_at(cls, index):
        """The device that index ``index`` of this runtime names (None: the default device)."""
        dev = cls._default_device()
        if index is not None and cls._index_of(dev) != index:
            raise DeviceUnavailableError(f"device index {index} is not available to this runtime in this process "
                                         f"(it uses device {cls._index_of(dev)})")
        return dev

    def _device_copy(self, device) -> Any:
        return None

    @property
    def device_name(self) -> str:
        """The device as a device string: ``"cpu"``, ``"cuda:0"``, ``"opencl:1"``, ..."""
        return device_string(*self._device_key())

    def _live_handle(self) -> Any:
        if self._freed:
            raise LaunchError("this DeviceArray was freed")
        return self._handle

    # ------------------------------------------------------------ properties
    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        state = ", freed" if self._freed else ""
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self._device_label()!r}{state})"

    def __polykern_buffer__(self) -> dict:
        return {"ptr": self._address(), "size": self.size, "code": self._type.code, "bits": self._type.bits,
                "device": self._device_key(), "readonly": False}

    # ------------------------------------------------------------ copies
    def copy_from_host(self, array):
        a = np.ascontiguousarray(array)
        if a.dtype != self.dtype or a.size != self.size:
            raise LaunchError(f"copy_from_host: expected {self.size} {self.dtype} elements, got {a.size} {a.dtype}")
        self._upload(a.reshape(-1).view(np.uint8))
        return self

    def numpy(self) -> np.ndarray:
        """A new host array with the contents."""
        out = np.empty(self.shape, self.dtype)
        self._download(out.reshape(-1).view(np.uint8))
        return out

    copy_to_host = numpy

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def fill(self, value):
        if is_bf16_dtype(self.dtype):  # the value rounded to bf16 bits (ir/bfloat16.py), not cast to a record
            return self.copy_from_host(bf16_array(np.full(self.shape, value, np.float32)).view(self.dtype))
        return self.copy_from_host(np.full(self.shape, value, self.dtype))

    def free(self) -> None:
        """Return the device memory to the pool now; the array cannot be used afterwards."""
        if not self._freed:
            self._freed = True
            self._handle = None
            self._finalizer()


def device_string(kind: str, index: int) -> str:
    """The device string of device ``index`` of ``kind``: no index for the one-device kinds (cpu, webgpu)."""
    return kind if kind in ("cpu", "webgpu") else f"{kind}:{index}"


def new_copy(cls: type, array, device):
    """A ``cls`` array on ``device`` holding a copy of ``array`` (NumPy-convertible, kept in its dtype)."""
    a = np.ascontiguousarray(array)
    return cls(a.shape, a.dtype, device=device).copy_from_host(a)


def new_zeros(cls: type, shape: Shape, dtype, device):
    """A zero-filled ``cls`` array on ``device`` (no fill where new allocations read as zeros)."""
    a = cls(shape, dtype, device=device)
    return a if cls._zero_initialized else a.fill(0)


def array_factories(cls: type) -> Tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    """``(to_device, empty, zeros)`` for the DeviceArray subclass ``cls``; each takes ``device=``
    (keyword only; ``None`` = ``cls``'s default device)."""

    def to_device(array, *, device=None):
        """A DeviceArray with a copy of ``array`` (any NumPy-convertible, kept in its dtype)."""
        return new_copy(cls, array, device)

    def empty(shape: Shape, dtype, *, device=None):
        """A DeviceArray of ``shape`` and ``dtype`` (contents undefined until written)."""
        return cls(shape, dtype, device=device)

    def zeros(shape: Shape, dtype, *, device=None):
        """A DeviceArray of ``shape`` and ``dtype`` filled with zeros."""
        return new_zeros(cls, shape, dtype, device)

    for f in (to_device, empty, zeros):
        f.__module__, f.__qualname__ = cls.__module__, f.__name__
    return to_device, empty, zeros


class DeviceArrayModule:
    """Device-array helpers of a runtime module, on the module's device: ``mod.to_device(x)``,
    ``mod.empty(shape, dtype)``, ``mod.zeros(shape, dtype)``, ``mod.device_array(x)`` /
    ``mod.device_array(shape=, dtype=)``. A subclass sets ``device_array_class``; its ``device``
    attribute (absent: the runtime's default device) is where the arrays go."""

    device_array_class: type = DeviceArrayBase

    def _array_device(self):
        return getattr(self, "device", None)

    def to_device(self, array):
        return new_copy(self.device_array_class, array, self._array_device())

    def empty(self, shape: Shape, dtype):
        return self.device_array_class(shape, dtype, device=self._array_device())

    def zeros(self, shape: Shape, dtype):
        return new_zeros(self.device_array_class, shape, dtype, self._array_device())

    def device_array(self, array=None, *, shape=None, dtype=None):
        """``mod.device_array(np_array)`` copies to the device; ``mod.device_array(shape=, dtype=)`` is
        uninitialized storage."""
        if array is not None:
            return self.to_device(array)
        if shape is None or dtype is None:
            raise TypeError("device_array() takes an array, or shape= and dtype=")
        return self.empty(shape, dtype)
