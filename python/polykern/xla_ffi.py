"""XLA FFI handlers written with ctypes: how ``polykern.jax`` runs a kernel as an XLA custom call on the CPU and on
a CUDA GPU (docs/frameworks.md), with no C compiler and no Python callback machinery between XLA's buffers and the
kernel.

The structures are those of XLA's ``xla/ffi/api/c_api.h`` (the FFI's stable C ABI, version 0.x) that a handler
reads: the call frame, its arguments and results (buffers only), the metadata extension through which XLA asks a
handler for the API version it was built against (answered with XLA's own version: this handler reads only the
fields every 0.x version has), and ``XLA_FFI_Error_Create`` to report a failure. :func:`handler_capsule` wraps a
Python function ``run(args, rets)`` (lists of NumPy arrays over XLA's memory; ``rets`` are written in place)
as the PyCapsule ``jax.ffi.register_ffi_target`` takes; an exception in ``run`` becomes an XLA error carrying its
message. :func:`device_handler_capsule` is the GPU form: ``run(args, rets, attrs, stream, ordinal)`` gets the buffers
as :class:`DeviceBuffer` s (device memory, ``__cuda_array_interface__``), the call's scalar attributes by name, and the
stream (``XLA_FFI_Stream_Get``) and device ordinal (``XLA_FFI_DeviceOrdinal_Get``) XLA runs the call on; the
kernel is queued on that stream and the handler returns (XLA orders what follows after it). Nothing here imports
jax.
"""
from __future__ import annotations

import ctypes
import math
from typing import Any, Callable, Dict, List

import numpy as np

__all__ = ["handler_capsule", "device_handler_capsule", "DeviceBuffer", "XLA_DTYPES"]

#: XLA_FFI_DataType by NumPy dtype name (bfloat16: ml_dtypes' name, which JAX uses).
XLA_DTYPES = {"bool": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint8": 6, "uint16": 7, "uint32": 8,
              "uint64": 9, "float16": 10, "float32": 11, "float64": 12, "bfloat16": 16}
_EXECUTE = 3  # XLA_FFI_ExecutionStage_EXECUTE
_METADATA = 1  # XLA_FFI_Extension_Metadata
_BUFFER = 1  # XLA_FFI_ArgType_BUFFER / XLA_FFI_RetType_BUFFER
_INTERNAL = 13  # XLA_FFI_Error_Code_INTERNAL
_SCALAR = 3  # XLA_FFI_AttrType_SCALAR


class _ExtensionBase(ctypes.Structure):
    pass


_ExtensionBase._fields_ = [("struct_size", ctypes.c_size_t), ("type", ctypes.c_int),
                           ("next", ctypes.POINTER(_ExtensionBase))]


class _ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("major_version", ctypes.c_int), ("minor_version", ctypes.c_int)]


class _ErrorCreateArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("message", ctypes.c_char_p), ("errc", ctypes.c_int)]


_ERROR_CREATE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_ErrorCreateArgs))


class _ContextQuery(ctypes.Structure):
    """XLA_FFI_Stream_Get_Args and XLA_FFI_DeviceOrdinal_Get_Args: (size, extension, ctx, answer)."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("ctx", ctypes.c_void_p),
                ("answer", ctypes.c_void_p)]


_QUERY = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_ContextQuery))
#: XLA_FFI_Api's function pointers in their order (c_api.h): this handler calls the first, the fifth and the last
_API_FUNCTIONS = ("error_create", "error_get_message", "error_destroy", "handler_register", "stream_get",
                  "type_register", "execution_context_get", "state_set", "state_get", "device_memory_allocate",
                  "device_memory_free", "thread_pool_schedule", "thread_pool_num_threads", "future_create",
                  "future_set_available", "future_set_error", "run_id_get", "device_ordinal_get")
_API_TYPES = {"error_create": _ERROR_CREATE, "stream_get": _QUERY, "device_ordinal_get": _QUERY}


class _Api(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("api_version", _ApiVersion), ("internal_api", ctypes.c_void_p)] + [
                    (n, _API_TYPES.get(n, ctypes.c_void_p)) for n in _API_FUNCTIONS]


class _Metadata(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("api_version", _ApiVersion), ("traits", ctypes.c_uint32),
                ("state_type_id", ctypes.c_int64)]


class _MetadataExtension(ctypes.Structure):
    _fields_ = [("extension_base", _ExtensionBase), ("metadata", ctypes.POINTER(_Metadata))]


class _Buffer(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("data", ctypes.c_void_p), ("rank", ctypes.c_int64), ("dims", ctypes.POINTER(ctypes.c_int64))]


class _List(ctypes.Structure):  # XLA_FFI_Args and XLA_FFI_Rets have one layout
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("size", ctypes.c_int64),
                ("types", ctypes.POINTER(ctypes.c_int)), ("items", ctypes.POINTER(ctypes.POINTER(_Buffer)))]


class _ByteSpan(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Scalar(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("value", ctypes.c_void_p)]


class _Attrs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("size", ctypes.c_int64),
                ("types", ctypes.POINTER(ctypes.c_int)), ("names", ctypes.POINTER(ctypes.POINTER(_ByteSpan))),
                ("attrs", ctypes.POINTER(ctypes.c_void_p))]


class _CallFrame(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.POINTER(_ExtensionBase)),
                ("api", ctypes.POINTER(_Api)), ("ctx", ctypes.c_void_p), ("stage", ctypes.c_int),
                ("args", _List), ("rets", _List), ("attrs", _Attrs)]


_HANDLER = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_CallFrame))
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
#: Every handler made: XLA keeps calling the function pointer for the life of the process.
_KEEP: List[object] = []
_BY_CODE = {code: name for name, code in XLA_DTYPES.items()}


def _buffer(items: _List, k: int, dtypes) -> _Buffer:
    """Operand ``k`` of ``items``, checked to be a buffer of ``dtypes[k]``."""
    if items.types[k] != _BUFFER:
        raise TypeError(f"operand {k} is not a buffer (XLA FFI type {items.types[k]})")
    b = items.items[k].contents
    if _BY_CODE.get(b.dtype) != dtypes[k].name:
        raise TypeError(f"operand {k}: XLA passed data type {b.dtype}, expected {dtypes[k].name}")
    return b


def _arrays(items: _List, dtypes, writable: bool) -> List[np.ndarray]:
    out = []
    for k in range(items.size):
        b, dt = _buffer(items, k, dtypes), dtypes[k]
        shape = tuple(b.dims[d] for d in range(b.rank))
        nbytes = math.prod(shape) * dt.itemsize
        raw = (ctypes.c_byte * nbytes).from_address(b.data) if nbytes else bytearray(0)  # (data may be null)
        a = np.frombuffer(raw, dt).reshape(shape)
        a.flags.writeable = writable  # an empty output too: the launch refuses a read-only output
        out.append(a)
    return out


def _answer_metadata(frame: _CallFrame) -> bool:
    """Fill XLA's metadata request, if this call is one (it comes before any execution)."""
    ext = frame.extension_start
    while ext:
        if ext.contents.type == _METADATA:
            meta = ctypes.cast(ext, ctypes.POINTER(_MetadataExtension)).contents.metadata.contents
            own = frame.api.contents.api_version
            meta.api_version.struct_size = ctypes.sizeof(_ApiVersion)
            meta.api_version.extension_start = None
            meta.api_version.major_version, meta.api_version.minor_version = own.major_version, own.minor_version
            meta.traits = 0  # no command-buffer tracing: each call runs Python
            if meta.struct_size >= _Metadata.state_type_id.offset + 8:  # an XLA whose metadata has the field
                meta.state_type_id = 0  # XLA_FFI_UNKNOWN_TYPE_ID: a stateless handler
            return True
        ext = ext.contents.next
    return False


def _error(frame: _CallFrame, message: str) -> int:
    args = _ErrorCreateArgs(ctypes.sizeof(_ErrorCreateArgs), None, message.encode("utf-8", "replace"), _INTERNAL)
    return frame.api.contents.error_create(ctypes.byref(args))


def handler_capsule(run: Callable[[List[np.ndarray], List[np.ndarray]], None], arg_dtypes, ret_dtypes):
    """The PyCapsule of an XLA FFI handler calling ``run(args, rets)`` (``args`` read-only); ``arg_dtypes`` /
    ``ret_dtypes``: the NumPy dtypes XLA must pass (checked at each call)."""
    arg_dtypes, ret_dtypes = [np.dtype(d) for d in arg_dtypes], [np.dtype(d) for d in ret_dtypes]
    return _capsule(lambda frame: run(_arrays(frame.args, arg_dtypes, False), _arrays(frame.rets, ret_dtypes, True)))


def _capsule(execute: Callable[[_CallFrame], None]):
    """The PyCapsule of a handler that answers XLA's metadata request, ignores the stages before execution and
    calls ``execute(frame)`` at execution; an exception becomes an XLA error carrying its message."""
    def handler(frame_p):
        frame = frame_p.contents
        try:
            if not _answer_metadata(frame) and frame.stage == _EXECUTE:
                execute(frame)
            return None
        except BaseException as e:  # noqa: BLE001 - nothing may unwind into XLA: the error is XLA's to raise
            return _error(frame, f"{type(e).__name__}: {e}")

    fn = _HANDLER(handler)
    _KEEP.append(fn)
    return _capsule_new(ctypes.cast(fn, ctypes.c_void_p).value, None, None)


class DeviceBuffer:
    """One XLA buffer in device memory, as a GPU handler sees it: ``shape``, ``dtype``, ``size``, ``ndim``,
    ``nbytes``, ``ptr`` and ``__cuda_array_interface__`` (no stream: XLA's stream is the launch's)."""
    __slots__ = ("ptr", "shape", "dtype", "readonly", "__weakref__")

    def __init__(self, ptr: int, shape, dtype: np.dtype, readonly: bool):
        self.ptr, self.shape, self.dtype, self.readonly = ptr, shape, dtype, readonly

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, self.readonly), "version": 3,
                "strides": None, "stream": None}

    def __repr__(self) -> str:
        return f"<XLA device buffer {self.dtype.name}{list(self.shape)} at 0x{self.ptr:x}>"


_KEPT_BUFFERS = 256  # DeviceBuffers a GPU handler keeps for XLA's buffers it sees again


def _device_buffers(items: _List, dtypes, readonly: bool, kept: Dict[tuple, DeviceBuffer]) -> List[DeviceBuffer]:
    """The buffers as DeviceBuffers; the same XLA buffer (address, shape, type) seen again is the same object, so the
    CUDA launch's check of a pointer it already accepted for that live object is not repeated."""
    out = []
    for k in range(items.size):
        b = _buffer(items, k, dtypes)
        key = (int(b.data or 0), tuple(int(b.dims[d]) for d in range(b.rank)), dtypes[k], readonly)
        got = kept.get(key)
        if got is None:
            if len(kept) >= _KEPT_BUFFERS:
                kept.clear()
            got = kept[key] = DeviceBuffer(*key)
        out.append(got)
    return out


def _scalar_attrs(frame: _CallFrame) -> Dict[str, Any]:
    """The call's scalar attributes by name (``ffi_call(...)(*ops, name=np.float32(2))``)."""
    attrs, out = frame.attrs, {}
    for k in range(attrs.size):
        span = attrs.names[k].contents
        name = ctypes.string_at(span.ptr, span.len).decode()
        if attrs.types[k] != _SCALAR:
            raise TypeError(f"attribute {name!r} is not a scalar (XLA FFI attribute type {attrs.types[k]})")
        sc = ctypes.cast(attrs.attrs[k], ctypes.POINTER(_Scalar)).contents
        dt = np.dtype(_BY_CODE[sc.dtype]) if sc.dtype in _BY_CODE else None
        if dt is None:
            raise TypeError(f"attribute {name!r}: XLA FFI data type {sc.dtype} is not a number polykern passes")
        out[name] = np.frombuffer(ctypes.string_at(sc.value, dt.itemsize), dt)[0].item()
    return out


def _ask(frame: _CallFrame, field: str, answer_type) -> int:
    """The answer of XLA_FFI_Stream_Get / _DeviceOrdinal_Get for this call (an XLA error becomes RuntimeError)."""
    api = frame.api.contents
    if api.struct_size < getattr(_Api, field).offset + ctypes.sizeof(ctypes.c_void_p) or not getattr(api, field):
        raise LookupError(field)
    q = _ContextQuery(ctypes.sizeof(_ContextQuery), None, frame.ctx, None)
    if getattr(api, field)(ctypes.byref(q)):
        raise RuntimeError(f"XLA refused {field} for this call")
    raw = ctypes.c_void_p(q.answer).value or 0
    return ctypes.c_int32(raw & 0xFFFFFFFF).value if answer_type == "int32" else raw


def device_handler_capsule(run: Callable[..., None], arg_dtypes, ret_dtypes):
    """The PyCapsule of an XLA FFI handler for a GPU calling ``run(args, rets, attrs, stream, ordinal)``
    (module docstring); registered for the platform ``"CUDA"``."""
    arg_dtypes, ret_dtypes = [np.dtype(d) for d in arg_dtypes], [np.dtype(d) for d in ret_dtypes]
    kept: Dict[tuple, DeviceBuffer] = {}

    def execute(frame: _CallFrame) -> None:
        stream = _ask(frame, "stream_get", "pointer")
        try:
            ordinal = _ask(frame, "device_ordinal_get", "int32")
        except LookupError:  # an XLA older than the query: its one device
            ordinal = 0
        run(_device_buffers(frame.args, arg_dtypes, True, kept), _device_buffers(frame.rets, ret_dtypes, False, kept),
            _scalar_attrs(frame), stream, ordinal)

    return _capsule(execute)
