"""Launch-argument validation shared by every runtime (docs/internals.md "Runtime kernel handles").

``check_args(info, args, grid, block)`` checks a kernel call before anything touches a
device and returns ``(grid3, block3, prepared)`` where ``prepared[i]`` is a
:class:`ScalarArg` (a NumPy scalar of exactly the declared type) or a :class:`BufferArg`
(host NumPy view or device pointer). Every problem is a :class:`LaunchError` naming the
kernel, the argument and its position.

Buffers accept: NumPy arrays; objects with ``__array_interface__`` (host memory),
``__cuda_array_interface__`` (CUDA device memory), ``__dlpack__`` (host or device; a host tensor NumPy cannot
import, such as bfloat16, through its capsule), a raw DLPack capsule (read, not consumed), or a
runtime's own arrays through ``__polykern_buffer__()`` (a dict with ``ptr``, ``size``
(elements), ``code``, ``bits``, ``device`` (name, id) and optional ``readonly``).
A buffer must hold exactly the declared element type and be C-contiguous (a strided view is a
LaunchError naming the copy to make, never copied silently: a copy would lose the kernel's writes); an n-D
contiguous array is passed as its flat memory (kernels index buffers 1-D). A tensor that requires grad
(torch) is read through its ``detach()``-ed view for a ``readonly`` parameter and refused for a written one.

Fast path helpers for runtimes whose launches must cost microseconds (the CUDA runtime):
:func:`fast_dims` and :func:`scalar_converter` accept only the common, unambiguous cases (exact
``int``/``tuple`` dims; Python scalars and NumPy scalars of exactly the declared type, in range) and
return ``None`` / :data:`MISS` for anything else, so the runtime falls back to ``check_args``,
which raises the precise :class:`LaunchError`. They never accept what ``check_args`` rejects, and
the value they return packs to the same bytes as ``ScalarArg.value``.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import LaunchError
from ..ir.rounding import FORMATS, largest_finite, round_exact
from ..ir.types import ScalarType, bf16, scalar_from_code, scalar_from_numpy
# the limits libpolykern shares (native/src/kbin_tables.h is generated from launch_rules)
from .launch_rules import MAX_DIM, MAX_GLOBAL_SIZE, PORTABLE_MAX_GRID, message

if TYPE_CHECKING:  # annotations only: polykern.module wraps checked kernels with this module's checks
    from ..kbin.function_info import ArgInfo, FunctionInfo

__all__ = ["ScalarArg", "BufferArg", "check_args", "normalize_dims", "check_global_size", "check_grid_limits",
           "MAX_DIM", "MAX_GLOBAL_SIZE", "PORTABLE_MAX_GRID", "MAX_OPENCL_GROUPS", "MISS", "fast_dims",
           "scalar_converter"]

#: Work-groups per launch on OpenCL: implementations such as PoCL count them in 32 bits.
MAX_OPENCL_GROUPS = 2 ** 32 - 1
_DL_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm",
               11: "rocm_host", 13: "cuda_managed", 14: "oneapi", 15: "webgpu", 16: "hexagon"}


@dataclass
class ScalarArg:
    index: int
    info: ArgInfo
    value: np.generic  # exactly info.dtype

    @property
    def name(self) -> str:
        return self.info.name

    def tobytes(self) -> bytes:
        return self.value.tobytes()


@dataclass
class BufferArg:
    index: int
    info: ArgInfo
    obj: Any  # what the caller passed
    array: Optional[np.ndarray]  # flat 1-D host view (None for device memory)
    ptr: int
    size: int  # elements
    device: Tuple[str, Optional[int]]  # ("cpu", 0), ("cuda", None) for __cuda_array_interface__, ...
    readonly: bool = False  # the memory itself is read-only
    keepalive: Any = None  # e.g. the DLPack capsule that owns ``ptr``

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def is_host(self) -> bool:
        return self.array is not None

    @property
    def nbytes(self) -> int:
        return self.size * self.info.dtype.nbytes


def _where(info: FunctionInfo, i: int) -> str:
    return f"kernel '{info.name}', argument '{info.args[i].name}' (#{i + 1}, {info.args[i].type_str})"


def _tname(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"{v.dtype} array"
    if isinstance(v, np.generic):
        return f"numpy.{type(v).__name__} {v!r}"
    if isinstance(v, (bool, int, float)):
        return f"{type(v).__name__} {v!r}"
    return type(v).__name__


# ------------------------------------------------------------------ scalars


def _scalar(info: FunctionInfo, i: int, v: Any) -> ScalarArg:
    a = info.args[i]
    t: ScalarType = a.dtype
    where = _where(info, i)
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, (bool, np.bool_)):
        if not t.is_bool:
            raise LaunchError(f"{where}: expected a {t} value, got {_tname(v)}")
        return ScalarArg(i, a, np.bool_(bool(v)))
    if isinstance(v, (int, np.integer)):
        iv = int(v)
        if t.is_bool:
            if iv not in (0, 1):
                raise LaunchError(f"{where}: expected a bool, got {_tname(v)}")
            return ScalarArg(i, a, np.bool_(iv))
        if t.is_int:
            lo, hi = t.min_value(), t.max_value()
            if not lo <= iv <= hi:
                raise LaunchError(f"{where}: value {iv} is out of range for {t} [{lo}, {hi}]")
            return ScalarArg(i, a, t.numpy.type(iv))
        return ScalarArg(i, a, _to_float(where, t, iv, v))
    if isinstance(v, (float, np.floating)):
        if not t.is_float:
            raise LaunchError(f"{where}: expected an integer for {t}, got {_tname(v)} (convert explicitly)")
        if isinstance(v, np.floating) and v.dtype.itemsize > 8 and np.isfinite(v) and v != 0:
            # a long double has more precision and range than float64: rounded once from its exact value
            # (1 + 2**-24 + 2**-60 as f32 is 1 + 2**-23, not 1.0; 1e400 is refused, not inf)
            x = Fraction(*v.as_integer_ratio())
        else:
            x = float(v)
        return ScalarArg(i, a, _to_float(where, t, x, v))
    if isinstance(v, np.ndarray):
        raise LaunchError(f"{where}: expected a scalar {t}, got an array of shape {v.shape}")
    raise LaunchError(f"{where}: expected a scalar {t}, got {_tname(v)}")


def scalar_value(info: FunctionInfo, i: int, v: Any) -> np.generic:
    """Scalar argument ``v`` of parameter ``i`` as a launch checks and converts it (a NumPy scalar of the parameter's
    type; LaunchError naming the parameter when ``v`` is not a value of that type or does not fit it)."""
    return _scalar(info, i, v).value


#: Integers up to this magnitude are exact as float64, so float(v) and then one rounding to the type is
#: the one rounding of v; larger ones take _to_float, which rounds the integer itself.
_EXACT_INT = 1 << 53


def _to_float(where: str, t: ScalarType, x, original: Any) -> np.generic:
    try:
        fv = float(x)
    except OverflowError:
        raise LaunchError(f"{where}: value {original!r} is too large for {t}") from None
    if math.isfinite(fv) and t.name in FORMATS and t.name != "f64":
        # rounded once from the exact value, like a literal (ir/rounding.py): 65519.0 is f16's 65504;
        # only what rounds past the largest finite value is refused
        exact = x if isinstance(x, (int, Fraction)) else fv
        fv = round_exact(exact, t.name)
        if math.isinf(fv):
            raise LaunchError(f"{where}: value {original!r} is out of range for {t}: it rounds to "
                              f"{'-' if exact < 0 else ''}inf (largest finite {largest_finite(t.name):g})")
    return t.numpy.type(fv)


# ------------------------------------------------------------------ buffers


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
#: DLPack 1.0's ``DLManagedTensorVersioned``: version (2 x u32), manager_ctx, deleter, flags (u64), then
#: the DLTensor; its flags' bit 0 is READ_ONLY.
_VERSIONED_TENSOR_OFFSET = 32
_DLPACK_FLAG_READ_ONLY = 1
#: The capsule names of an unconsumed DLPack tensor (legacy, 1.0) and of one a consumer already took.
_DLPACK_CAPSULES = (b"dltensor", b"dltensor_versioned")
_USED_DLPACK_CAPSULES = (b"used_dltensor", b"used_dltensor_versioned")


def capsule_name(obj: Any) -> Optional[bytes]:
    """The name of a PyCapsule (``b"dltensor"`` ...), ``None`` for anything else."""
    if type(obj).__name__ != "PyCapsule" or type(obj).__module__ != "builtins":
        return None
    return _get_name(obj) or b""


def dlpack_describe(capsule: Any) -> dict:
    """Read an unconsumed ``dltensor`` (legacy) or ``dltensor_versioned`` (DLPack 1.0) capsule without taking
    ownership (the capsule keeps owning the memory, and its destructor frees it; keep it alive while
    ``ptr`` is used). ``readonly``: the 1.0 READ_ONLY flag (a legacy capsule cannot say)."""
    readonly = False
    if _is_valid(capsule, b"dltensor"):
        base = _get_pointer(capsule, b"dltensor")  # DLManagedTensor starts with its DLTensor
    elif _is_valid(capsule, b"dltensor_versioned"):
        base = _get_pointer(capsule, b"dltensor_versioned")
        major = ctypes.c_uint32.from_address(base).value
        if major != 1:
            raise ValueError(f"a DLPack {major}.x tensor (this reader knows version 1)")
        readonly = bool(ctypes.c_uint64.from_address(base + 24).value & _DLPACK_FLAG_READ_ONLY)
        base += _VERSIONED_TENSOR_OFFSET
    else:
        raise ValueError("not an unconsumed 'dltensor' capsule")
    t = _DLTensor.from_address(base)
    shape = [t.shape[k] for k in range(t.ndim)]
    strides = None if not t.strides else [t.strides[k] for k in range(t.ndim)]
    return {"ptr": (t.data or 0) + t.byte_offset, "device": (t.device.device_type, t.device.device_id),
            "code": t.dtype.code, "bits": t.dtype.bits, "lanes": t.dtype.lanes, "shape": shape,
            "strides": strides, "readonly": readonly}


def _c_strides(shape: Sequence[int]) -> List[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return list(reversed(out))


def _contiguous(shape: Sequence[int], strides_elems: Optional[Sequence[int]]) -> bool:
    if strides_elems is None:
        return True
    return all(n <= 1 or s == c for n, s, c in zip(shape, strides_elems, _c_strides(shape)))


#: How each array library makes a C-contiguous copy of ``x``, by the top-level package of the array's type.
_CONTIGUOUS_COPY = {"numpy": "numpy.ascontiguousarray(x)", "torch": "x.contiguous()",
                    "cupy": "cupy.ascontiguousarray(x)", "jax": "jax.numpy.array(x, copy=True)",
                    "jaxlib": "jax.numpy.array(x, copy=True)"}


def _not_contiguous(where: str, what: str, obj: Any, layout: str) -> LaunchError:
    """The error for a strided array: the fix in the array's own library (``x.contiguous()`` for a torch
    tensor), NumPy's for an unknown host array (NumPy reads any)."""
    lib = type(obj).__module__.split(".")[0]
    fix = _CONTIGUOUS_COPY.get(lib) or (_CONTIGUOUS_COPY["numpy"] if what == "array" else "a C-contiguous copy")
    return LaunchError(f"{where}: the {what} is not C-contiguous ({layout}); pass {fix}")


def _code_name(code: int, bits: int, lanes: int) -> str:
    try:
        t = scalar_from_code(code, bits)
        name = "bfloat16" if t == bf16 else str(t.numpy)
    except ValueError:
        name = f"type code {code} bits {bits}"
    return name if lanes == 1 else f"{name} x{lanes}"


def _check_dtype(where: str, want: ScalarType, got_name: str, ok: bool) -> None:
    if not ok and want == bf16:
        raise LaunchError(f"{where}: expected bf16 elements (pk.bf16_array(bits) of a uint16 array holding "
                          f"bf16 bits, or an ml_dtypes.bfloat16 array), got {got_name} elements; polykern never "
                          "converts buffers silently (pk.bf16_array(float_array) rounds to bf16)")
    if not ok:
        raise LaunchError(f"{where}: expected {want.numpy} elements ({want}), got {got_name} elements; "
                          "polykern never converts buffers silently")


def _check_writable(where: str, a: ArgInfo, readonly: bool) -> None:
    if readonly and not a.readonly:
        raise LaunchError(f"{where}: the array is read-only but the kernel may write it; pass a writable array "
                          f"or declare the parameter Buffer[{a.dtype}, \"readonly\"]")


def _host(info: FunctionInfo, i: int, obj: Any, arr: np.ndarray) -> BufferArg:
    a, where = info.args[i], _where(info, i)
    if isinstance(arr, np.ma.MaskedArray):
        raise LaunchError(f"{where}: a masked array: a kernel reads and writes every element, masked or not; "
                          "pass its .data (or .filled(value)) explicitly")
    arr = arr.view(np.ndarray)  # a subclass (np.matrix, memmap) is passed as its memory
    if arr.ndim == 0:
        raise LaunchError(f"{where}: expected an array, got a 0-d array")
    t = scalar_from_numpy(arr.dtype)
    got = "bf16 (pk.bf16_array)" if t == bf16 else str(arr.dtype)
    _check_dtype(where, a.dtype, got, t == a.dtype and arr.dtype.isnative)
    if not arr.flags.c_contiguous:
        raise _not_contiguous(where, "array", obj, f"shape {arr.shape}, strides {arr.strides}")
    _check_writable(where, a, not arr.flags.writeable)
    flat = arr.reshape(-1)
    return BufferArg(i, a, obj, flat, int(arr.__array_interface__["data"][0]), int(flat.size), ("cpu", 0),
                     not arr.flags.writeable)


def _device(info: FunctionInfo, i: int, obj: Any, d: dict, source: str) -> BufferArg:
    a, where = info.args[i], _where(info, i)
    try:
        code, bits, lanes = int(d["code"]), int(d["bits"]), int(d.get("lanes", 1))
        ptr, size = int(d["ptr"]), int(d["size"])
        device = tuple(d["device"])
    except (KeyError, TypeError, ValueError) as e:
        raise LaunchError(f"{where}: malformed {source} description ({e})") from None
    if len(device) != 2 or not isinstance(device[0], str) or not (device[1] is None
                                                                  or isinstance(device[1], (int, np.integer))):
        raise LaunchError(f"{where}: malformed {source} description (device must be a (name, index) pair, "
                          f"got {d['device']!r})")
    if ptr < 0:
        raise LaunchError(f"{where}: {source} reports a negative address")
    _check_dtype(where, a.dtype, _code_name(code, bits, lanes), (code, bits, lanes) == (a.code, a.bits, 1))
    readonly = bool(d.get("readonly", False))
    _check_writable(where, a, readonly)
    if size < 0:
        raise LaunchError(f"{where}: {source} reports a negative size")
    return BufferArg(i, a, obj, None, ptr, size, (str(device[0]), device[1]), readonly, d.get("keepalive"))


def _cuda_interface(info: FunctionInfo, i: int, obj: Any) -> BufferArg:
    where = _where(info, i)
    cai = obj.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise LaunchError(f"{where}: malformed __cuda_array_interface__ (a {type(cai).__name__}, not a dict)")
    try:
        shape = tuple(int(n) for n in cai["shape"])
        dt = np.dtype(cai["typestr"])
        ptr, readonly = cai["data"]
        strides = cai.get("strides")
    except (KeyError, TypeError, ValueError) as e:
        raise LaunchError(f"{where}: malformed __cuda_array_interface__ ({e})") from None
    if cai.get("mask") is not None:
        raise LaunchError(f"{where}: masked __cuda_array_interface__ arrays are not supported")
    t = bf16 if names_bfloat16(obj, cai) else scalar_from_numpy(dt) if dt.isnative and dt.kind != "V" else None
    elem = [s // dt.itemsize for s in strides] if strides is not None else None
    if not _contiguous(shape, elem) or (strides is not None and any(s % dt.itemsize for s in strides)):
        raise _not_contiguous(where, "device array", obj, f"strides {strides}")
    d = {"ptr": ptr or 0, "size": math.prod(shape), "device": ("cuda", None), "readonly": bool(readonly),
         "code": t.code if t else -1, "bits": t.bits if t else -1}
    if t is None:
        _check_dtype(where, info.args[i].dtype, str(dt), False)
    return _device(info, i, obj, d, "__cuda_array_interface__")


def _dlpack(info: FunctionInfo, i: int, obj: Any) -> BufferArg:
    where = _where(info, i)
    try:
        dev_type, dev_id = obj.__dlpack_device__()
    except Exception as e:
        raise LaunchError(f"{where}: __dlpack_device__() failed: {e}") from None
    if dev_type == 1:  # host memory: let NumPy import it (zero copy); what NumPy has no type for (bfloat16)
        try:              # is read from the capsule itself
            arr = np.from_dlpack(obj)
        except Exception as e:
            capsule = _host_capsule(obj)
            if capsule is None:
                raise LaunchError(f"{where}: cannot import the DLPack host array: {e}") from None
            return _capsule(info, i, capsule, capsule_name(capsule))
        return _host(info, i, obj, arr)
    try:
        capsule = obj.__dlpack__()
        d = dlpack_describe(capsule)
    except Exception as e:
        raise LaunchError(f"{where}: cannot read the DLPack tensor: {e}") from None
    if not _contiguous(d["shape"], d["strides"]):
        raise _not_contiguous(where, "DLPack tensor", obj, f"strides {d['strides']}")
    d.update(size=math.prod(d["shape"]), keepalive=capsule,
             device=(_DL_DEVICES.get(d["device"][0], f"dlpack:{d['device'][0]}"), d["device"][1]))
    return _device(info, i, obj, d, "DLPack tensor")


def _capsule(info: FunctionInfo, i: int, capsule: Any, name: bytes) -> BufferArg:
    """A raw DLPack capsule (``torch.utils.dlpack.to_dlpack(t)``, ``x.__dlpack__()``): read, not consumed (the
    capsule stays its producer's and frees the memory when it dies; it is kept alive by the launch). A
    host tensor is passed as a NumPy view of its memory, a device tensor as its pointer."""
    a, where = info.args[i], _where(info, i)
    if name in _USED_DLPACK_CAPSULES:
        raise LaunchError(f"{where}: the DLPack capsule was already consumed (its name is {name.decode()!r}): a "
                          "capsule can be imported once; pass the array itself or a new capsule (x.__dlpack__())")
    try:
        d = dlpack_describe(capsule)
    except ValueError as e:
        raise LaunchError(f"{where}: cannot read the DLPack capsule: {e}") from None
    if not _contiguous(d["shape"], d["strides"]):
        raise _not_contiguous(where, "DLPack capsule", capsule, f"shape {d['shape']}, strides {d['strides']}")
    dev_type, dev_id = d["device"]
    size = math.prod(d["shape"])
    if dev_type != 1:
        d.update(size=size, keepalive=capsule, device=(_DL_DEVICES.get(dev_type, f"dlpack:{dev_type}"), dev_id))
        return _device(info, i, capsule, d, "DLPack capsule")
    _check_dtype(where, a.dtype, _code_name(d["code"], d["bits"], d["lanes"]),
                 (d["code"], d["bits"], d["lanes"]) == (a.code, a.bits, 1))
    nbytes = size * a.dtype.nbytes
    if nbytes and not d["ptr"]:
        raise LaunchError(f"{where}: the DLPack capsule describes {size} elements at address 0")
    arr = np.frombuffer((ctypes.c_byte * nbytes).from_address(d["ptr"]), a.dtype.numpy) if nbytes \
        else np.empty(0, a.dtype.numpy)
    arr.flags.writeable = not d["readonly"]
    return _host(info, i, capsule, arr)


def _detached(info: FunctionInfo, i: int, obj: Any) -> Any:
    """What to read a buffer argument's memory through. A tensor that an autograd framework records (torch:
    ``requires_grad``) exports no memory (torch refuses DLPack and ``__cuda_array_interface__`` for it): a
    parameter the kernel only reads (``Buffer[T, "readonly"]``) gets its ``detach()``-ed view, the same memory
    outside autograd; one the kernel may write is refused, since autograd would not see the write."""
    try:
        records = getattr(obj, "requires_grad", False) is True and callable(getattr(obj, "detach", None))
    except Exception:  # noqa: BLE001 - an object whose attributes raise: its protocols decide below
        return obj
    if not records:
        return obj
    a = info.args[i]
    if not a.readonly:
        raise LaunchError(f"{_where(info, i)}: the tensor requires grad and the kernel may write it, which autograd "
                          "would not see; pass x.detach() to write it outside autograd, declare the parameter "
                          f"Buffer[{a.dtype}, \"readonly\"] if the kernel only reads it, or make the kernel an "
                          "operator with a backward (polykern.torch.custom_op, docs/frameworks.md)")
    return obj.detach()


def _host_capsule(obj: Any) -> Any:
    """``obj.__dlpack__()`` as a DLPack 1.0 capsule where the producer makes one (it carries the read-only flag),
    else a legacy one; None when it makes neither."""
    for kwargs in ({"max_version": (1, 0)}, {}):
        try:
            capsule = obj.__dlpack__(**kwargs)
        except Exception:  # noqa: BLE001 - an older producer (no max_version), or one that refuses
            continue
        if capsule_name(capsule) in _DLPACK_CAPSULES:
            return capsule
    return None


def _has_cuda_interface(obj: Any) -> bool:
    """Whether ``obj`` offers ``__cuda_array_interface__``. One whose element type it cannot name counts as
    absent when the object also speaks DLPack, which can: a property that raises for some dtypes, or a void
    typestr (torch 2.11 describes bfloat16 as ``|V2``, which any 2-byte type could be)."""
    try:
        if not hasattr(obj, "__cuda_array_interface__"):
            return False
        cai = obj.__cuda_array_interface__
        return not (isinstance(cai, dict) and str(cai.get("typestr", ""))[1:2] == "V" and not names_bfloat16(obj, cai)
                    and _has_dlpack(obj))
    except Exception:
        if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            return False
        raise


def _polykern_buffer(info: FunctionInfo, i: int, obj: Any) -> BufferArg:
    d = obj.__polykern_buffer__()
    if not isinstance(d, dict):
        raise LaunchError(f"{_where(info, i)}: malformed __polykern_buffer__ description (__polykern_buffer__() "
                          f"returned a {type(d).__name__}, not a dict)")
    return _device(info, i, obj, d, "__polykern_buffer__")


def _array_interface(info: FunctionInfo, i: int, obj: Any) -> BufferArg:
    ai = obj.__array_interface__
    if isinstance(ai, dict) and ai.get("mask") is not None:
        raise LaunchError(f"{_where(info, i)}: masked __array_interface__ arrays are not supported (a kernel reads "
                          "and writes every element, masked or not)")
    return _host(info, i, obj, np.asarray(obj))


def names_bfloat16(obj: Any, cai: dict) -> bool:
    """Whether a ``<V2`` / ``|V2`` ``__cuda_array_interface__`` is bfloat16: its object names its dtype so (torch's
    ``torch.bfloat16``, CuPy / JAX ``bfloat16``); a void typestr alone could be any 2-byte type."""
    if not (isinstance(cai, dict) and str(cai.get("typestr", ""))[1:] == "V2"):  # torch 2.11 writes '<V2'
        return False
    try:
        return str(getattr(obj, "dtype", "")).rsplit(".", 1)[-1] == "bfloat16"
    except Exception:  # noqa: BLE001 - an object whose dtype cannot be named is not known to be bfloat16
        return False


def _has_dlpack(obj: Any) -> bool:
    return hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")


#: The array protocols a buffer argument may speak, in the order they are tried: (name, present, read).
_PROTOCOLS = (("__polykern_buffer__", lambda o: hasattr(o, "__polykern_buffer__"), _polykern_buffer),
              ("__cuda_array_interface__", _has_cuda_interface, _cuda_interface),
              ("__array_interface__", lambda o: hasattr(o, "__array_interface__"), _array_interface),
              ("DLPack", _has_dlpack, _dlpack))


def _buffer(info: FunctionInfo, i: int, obj: Any) -> BufferArg:
    where = _where(info, i)
    if isinstance(obj, np.ndarray):
        return _host(info, i, obj, obj)
    if isinstance(obj, (bool, int, float, complex, np.generic, str, bytes)):
        raise LaunchError(f"{where}: expected an array, got {_tname(obj)}")
    name = capsule_name(obj)
    if name in _DLPACK_CAPSULES or name in _USED_DLPACK_CAPSULES:
        return _capsule(info, i, obj, name)
    try:
        obj = _detached(info, i, obj)
    except LaunchError:
        raise
    except Exception as e:  # the object's own detach()
        raise LaunchError(f"{where}: cannot detach the tensor from autograd ({type(e).__name__}: {e})") from None
    for protocol, present, read in _PROTOCOLS:
        try:  # the object's own code (properties, methods, NumPy reading its description) may raise anything
            if present(obj):
                return read(info, i, obj)
        except LaunchError:
            raise
        except Exception as e:
            raise LaunchError(f"{where}: cannot read its {protocol} ({type(e).__name__}: {e})") from None
    hint = " (pass numpy.asarray(x, dtype=...))" if isinstance(obj, (list, tuple)) else ""
    if name is not None:
        hint = f" (a PyCapsule named {name.decode(errors='replace')!r}; a DLPack capsule is named 'dltensor')"
    raise LaunchError(f"{where}: expected an array (NumPy, DLPack, __cuda_array_interface__), got "
                      f"{_tname(obj)}{hint}")


# ------------------------------------------------------------------ launch shape


def normalize_dims(what: str, value: Any, kernel: str = "") -> Tuple[int, int, int]:
    """``4`` or ``(4,)``/``(4, 2)``/``(4, 2, 1)`` -> a 3-tuple of positive ints."""
    ctx = f"kernel '{kernel}': " if kernel else ""
    if value is None:
        raise LaunchError(f"{ctx}{what}= is required, e.g. {what}=(n + 63) // 64" if what == "grid"
                          else f"{ctx}{what}= is required, e.g. {what}=64 or {what}=(8, 8)")
    dims = (value,) if isinstance(value, (int, np.integer)) else value
    if not isinstance(dims, (tuple, list)) or not 1 <= len(dims) <= 3:
        raise LaunchError(f"{ctx}{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise LaunchError(f"{ctx}{what} must contain ints, got {value!r}")
        if not 1 <= int(d) <= MAX_DIM:
            raise LaunchError(f"{ctx}{what} dimensions must be in 1..{MAX_DIM}, got {value!r}")
        out.append(int(d))
    while len(out) < 3:
        out.append(1)
    return (out[0], out[1], out[2])


def check_global_size(kernel: str, grid3: Tuple[int, int, int], block3: Tuple[int, int, int]) -> None:
    """The language's limit (:data:`MAX_GLOBAL_SIZE` work-items per dimension): a LaunchError naming it."""
    for d in range(3):
        n = grid3[d] * block3[d]
        if n > MAX_GLOBAL_SIZE:
            raise LaunchError(message("GLOBAL_SIZE", kernel, d, d, grid3[d], block3[d], n, "xyz"[d], d, MAX_GLOBAL_SIZE))


def check_grid_limits(kernel: str, grid3: Tuple[int, int, int], max_grid: Sequence[int], limit: str) -> None:
    """``grid3`` against per-dimension workgroup counts ``max_grid``; ``limit`` names them in the message."""
    for d in range(3):
        if grid3[d] > max_grid[d]:
            raise LaunchError(message("GRID_LIMIT", kernel, *grid3, grid3[d], "xyz"[d], limit, *max_grid))


def check_args(info: FunctionInfo, args: Sequence[Any], grid: Any, block: Any
               ) -> Tuple[Tuple[int, int, int], Tuple[int, int, int], List[Any]]:
    """Validate a kernel call; returns ``(grid3, block3, prepared_args)``."""
    if isinstance(grid, (bool, np.bool_)) or isinstance(block, (bool, np.bool_)):
        raise LaunchError(f"kernel '{info.name}': grid/block must be ints or tuples, not bool")
    if len(args) != len(info.args):
        raise LaunchError(f"kernel '{info.name}' takes {len(info.args)} argument{'s' * (len(info.args) != 1)} "
                          f"({', '.join(f'{a.name}: {a.type_str}' for a in info.args)}), got {len(args)}")
    grid3 = normalize_dims("grid", grid, info.name)
    block3 = normalize_dims("block", block, info.name)
    check_global_size(info.name, grid3, block3)
    prepared: List[Any] = []
    for i, (a, v) in enumerate(zip(info.args, args)):
        prepared.append(_buffer(info, i, v) if a.is_buffer else _scalar(info, i, v))
    return grid3, block3, prepared


# ------------------------------------------------------------------ fast path


class _Miss:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISS"


#: Returned by a fast-path converter that is not sure: the caller uses :func:`check_args`.
MISS: Any = _Miss()


def fast_dims(value: Any) -> Optional[Tuple[int, int, int]]:
    """``normalize_dims`` for exact ``int`` or ``tuple`` of 1-3 exact ``int`` (no bool, no NumPy
    integers) in range; ``None`` for anything else (``normalize_dims`` decides)."""
    t = type(value)
    if t is int:
        return (value, 1, 1) if 1 <= value <= MAX_DIM else None
    if t is not tuple:
        return None
    n = len(value)
    if n == 3:
        x, y, z = value
    elif n == 2:
        (x, y), z = value, 1
    elif n == 1:
        x, y, z = value[0], 1, 1
    else:
        return None
    if (type(x) is int and type(y) is int and type(z) is int and 1 <= x <= MAX_DIM and 1 <= y <= MAX_DIM
            and 1 <= z <= MAX_DIM):
        return (x, y, z)
    return None


def scalar_converter(a: ArgInfo) -> Callable[[Any], Any]:
    """``conv(v)`` for scalar parameter ``a``: a Python ``bool``/``int``/``float`` that packs (struct
    ``?``/integer codes/``e f d``) to the bytes of ``check_args``' ``ScalarArg.value``, or
    :data:`MISS` when ``v`` is not a common, valid case."""
    t: ScalarType = a.dtype
    npt = t.numpy.type
    if t.is_bool:
        def conv_bool(v: Any) -> Any:
            tv = type(v)
            if tv is bool:
                return v
            if tv is npt:
                return bool(v)
            return MISS
        return conv_bool
    if t.is_int:
        lo, hi = t.min_value(), t.max_value()

        def conv_int(v: Any) -> Any:
            tv = type(v)
            if tv is int:
                return v if lo <= v <= hi else MISS
            if tv is npt:
                return int(v)
            return MISS
        return conv_int
    top = t.max_value()
    inf = math.inf
    exact_int = math.inf if t.bits == 64 else _EXACT_INT  # float(v) is f64's own one rounding

    def conv_float(v: Any) -> Any:
        tv = type(v)
        if tv is float:
            x = v
        elif tv is int or tv is npt:
            if tv is int and not -exact_int <= v <= exact_int:
                return MISS  # float(v) would round first: _to_float rounds it once
            try:
                x = float(v)
            except OverflowError:
                return MISS
        else:
            return MISS
        if -top <= x <= top or x != x or x == inf or x == -inf:
            return x
        return MISS
    return conv_float
