"""Tensor maps of Hopper kernels (docs/language.md "Hopper ..."; ``polykern.ir.hopper``), encoded at launch.

A kernel that declares ``pk.tensor_map(buf, (rows, cols), box, swizzle)`` takes, after its own
parameters, one hidden 128-byte ``CUtensorMap`` per map (64-byte aligned, declaration order). At each
launch ``plan(info)``'s ``encode(values, buffers)`` checks what the map promises the kernel —
``rows * cols`` elements within the buffer, rows of a multiple of 16 bytes, a 16-byte aligned address,
both dimensions below 2**32 — with a ``LaunchError`` naming the map, and encodes it with the driver's
``cuTensorMapEncodeTiled`` (ctypes on libcuda, which pycuda does not wrap); encodings are cached by
(address, shape). ``check_block`` refuses a block other than the kernel's declared warpgroups.
"""
from __future__ import annotations

import ctypes
from typing import Dict, List, Optional, Sequence, Tuple

from polykern.errors import LaunchError
from polykern.ir import hopper as H
from polykern.ir.types import SCALAR_TYPES
from polykern.module import FunctionInfo

from ..driver_limits import FUNC_ATTR_MAX_DYNAMIC_SHARED
from polykern.runtime.hopper_launch import check_block, check_map
from ..tensor_map_codes import MAP_ALIGN, MAP_BYTES
from ..tensor_map_codes import DTYPE as _DTYPE
from ..tensor_map_codes import L2_256B as _L2_256B
from ..tensor_map_codes import SWIZZLE as _SWIZZLE

__all__ = ["TensorMapPlan", "plan", "MAP_BYTES", "MAP_ALIGN"]

_CACHE_MAX = 256


class TensorMapPlan:
    def __init__(self, info: FunctionInfo):
        self.info = info
        try:
            self.maps = H.tensor_maps_of(info.attrs)
            self.warpgroups = H.warpgroups_of(info.attrs)
        except ValueError as e:
            raise LaunchError(f"kernel '{info.name}': its artifact describes its Hopper launch wrongly: {e}") from None
        names = {a.name: i for i, a in enumerate(info.args)}
        self._where: List[Tuple[int, Tuple]] = []
        for m in self.maps:
            buf = names.get(m["buffer"])
            # each dimension: (argument index, None) for a scalar parameter, (None, value) for a constant
            dims = tuple((names.get(d, -1), None) if isinstance(d, str) else (None, d) for d in m["shape"])
            if buf is None or not info.args[buf].is_buffer or any(i == -1 or (i is not None and info.args[i].is_buffer)
                                                                  for i, _ in dims):
                raise LaunchError(f"kernel '{info.name}': tensor map '{m['name']}' names parameters the kernel "
                                  "does not have")
            self._where.append((buf, dims))
        #: the argument indices of the buffers the maps view
        self.buffers = sorted({buf for buf, _ in self._where})
        self._cache: Dict[tuple, bytes] = {}

    def check_block(self, block3: Sequence[int]) -> None:
        check_block(self.info.name, self.warpgroups, block3)

    def append(self, params: bytes, values: Sequence, sizes: Dict[int, int]) -> bytes:
        """``params`` with the hidden tensor maps appended; ``values[i]``: argument i (a device address
        for buffers), ``sizes[i]``: buffer i's length in elements."""
        if not self.maps:
            return params
        out = bytearray(params)
        for m, (buf, dims) in zip(self.maps, self._where):
            shape = tuple(int(values[i]) if i is not None else v for i, v in dims)
            data = self._encode(m, int(values[buf]), shape, sizes.get(buf))
            out.extend(b"\0" * (-len(out) % MAP_ALIGN))
            out.extend(data)
        return bytes(out)

    def _encode(self, m: dict, ptr: int, shape: Tuple[int, int], size: Optional[int]) -> bytes:
        key = (m["name"], ptr, shape)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        rows, cols = shape
        where = check_map(self.info.name, m, ptr, shape, size)
        elem = SCALAR_TYPES[m["elem"]].nbytes
        data = _encode_tiled(_DTYPE[m["elem"]], ptr, (cols, rows), cols * elem, (m["box"][1], m["box"][0]),
                             _SWIZZLE[m["swizzle"]], where)
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[key] = data
        return data


def plan(info: FunctionInfo) -> Optional[TensorMapPlan]:
    """The launch plan of a kernel with Hopper facts, or None for any other kernel."""
    if H.ATTR_TENSOR_MAPS not in info.attrs and H.ATTR_WARPGROUPS not in info.attrs:
        return None
    return TensorMapPlan(info)


_fn = None


def _encode_tiled(dtype: int, ptr: int, dims: Tuple[int, int], row_bytes: int, box: Tuple[int, int],
                  swizzle: int, where: str) -> bytes:
    global _fn
    if _fn is None:
        f = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                      ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32),
                      ctypes.POINTER(ctypes.c_uint32), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        _fn = f
    out = (ctypes.c_uint8 * MAP_BYTES)()
    gdim = (ctypes.c_uint64 * 2)(*dims)
    gstride = (ctypes.c_uint64 * 1)(row_bytes)
    bdim = (ctypes.c_uint32 * 2)(*box)
    estride = (ctypes.c_uint32 * 2)(1, 1)
    rc = _fn(ctypes.addressof(out), dtype, 2, ctypes.c_void_p(ptr), gdim, gstride, bdim, estride, 0, swizzle,
             _L2_256B, 0)
    if rc != 0:
        raise LaunchError(f"{where}: cuTensorMapEncodeTiled failed (CUresult {rc}) for shape {dims[::-1]}, box "
                          f"{box[::-1]}")
    return bytes(out)


class ParamLauncher:
    """Launches a kernel with ``__grid_constant__`` tensor-map parameters through ``kernelParams`` (one pointer per
    parameter into a 64-byte aligned copy of the parameter buffer): the driver refuses such kernels launched with
    a packed buffer (``CU_LAUNCH_PARAM_BUFFER_POINTER``, pycuda's way) with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
    measured on an H200 (driver 580.159.04). The module image is loaded once more through ctypes for its
    CUfunction (pycuda does not expose it) and unloaded with this object."""

    def __init__(self, image: bytes, entry: str, info: FunctionInfo):
        from .abi import layout

        self._lib = ctypes.CDLL("libcuda.so.1")
        lib, vp = self._lib, ctypes.c_void_p
        lib.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
        lib.cuFuncSetAttribute.argtypes = [vp, ctypes.c_int, ctypes.c_int]
        lib.cuLaunchKernel.argtypes = [vp, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                       ctypes.c_uint, ctypes.c_uint, vp, ctypes.POINTER(vp), ctypes.POINTER(vp)]
        lib.cuModuleUnload.argtypes = [vp]
        self.module, self.function = vp(), vp()
        self._check(lib.cuModuleLoadData(ctypes.byref(self.module), image), "loading the module")
        self._check(lib.cuModuleGetFunction(ctypes.byref(self.function), self.module, entry.encode()),
                    f"finding kernel '{entry}'")
        slots, total = layout(info)
        self.offsets = [o for o, _ in slots]
        for _ in range(len(H.tensor_maps_of(info.attrs))):
            total = -(-total // MAP_ALIGN) * MAP_ALIGN
            self.offsets.append(total)
            total += MAP_BYTES
        self.size = total
        self._dyn = 0

    @staticmethod
    def _check(rc: int, what: str) -> None:
        if rc != 0:
            from polykern.errors import DeviceError

            from . import libcuda

            raise DeviceError(f"CUDA: {what} failed: {libcuda.error_name(rc) or rc}", code=rc,
                              name=libcuda.error_name(rc) or "")

    def launch(self, grid3, block3, params: bytes, shared: int, stream: int = 0) -> None:
        """Launch on CUstream ``stream`` (0: the legacy default stream)."""
        if len(params) != self.size:
            raise LaunchError(f"parameter buffer of {len(params)} bytes, the kernel takes {self.size}")
        if shared > self._dyn:
            self._check(self._lib.cuFuncSetAttribute(self.function, FUNC_ATTR_MAX_DYNAMIC_SHARED, shared), f"allowing {shared} bytes of shared memory")
            self._dyn = shared
        raw = ctypes.create_string_buffer(self.size + MAP_ALIGN)
        base = -(-ctypes.addressof(raw) // MAP_ALIGN) * MAP_ALIGN
        ctypes.memmove(base, params, self.size)
        ptrs = (ctypes.c_void_p * len(self.offsets))(*[base + o for o in self.offsets])
        self._check(self._lib.cuLaunchKernel(self.function, *grid3, *block3, shared, stream or None, ptrs, None),
                    f"launching (grid {tuple(grid3)}, block {tuple(block3)})")

    def close(self) -> None:
        if self.module:
            self._lib.cuModuleUnload(self.module)
            self.module = ctypes.c_void_p()
