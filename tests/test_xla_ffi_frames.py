"""polykern.xla_ffi's GPU handler on call frames built here with ctypes in the layout of XLA's FFI C ABI
(xla/ffi/api/c_api.h): the scalar attributes of every type XLA passes, the buffers, the stream and device ordinal
queries, and a failure returned as an XLA error. No JAX, no GPU: the handler is called through its function pointer
as XLA calls it."""
import ctypes

import numpy as np
import pytest

from polykern import xla_ffi as ffi

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Frame:
    """A call frame of buffers ``args`` / ``rets`` ((address, shape, dtype) each) and scalar attributes ``attrs``
    (name -> NumPy scalar), on stream ``stream`` of device ``ordinal``; everything it points at lives as long as it."""

    def __init__(self, args, rets, attrs, stream=0x5EED, ordinal=1):
        self._keep = []
        self.errors = []
        api = ffi._Api()
        api.struct_size = ctypes.sizeof(ffi._Api)
        api.error_create = ffi._ERROR_CREATE(self._error_create)
        api.stream_get = ffi._QUERY(lambda q: self._answer(q, stream))
        api.device_ordinal_get = ffi._QUERY(lambda q: self._answer(q, ordinal))
        self.api = api
        f = ffi._CallFrame()
        f.struct_size = ctypes.sizeof(ffi._CallFrame)
        f.api = ctypes.pointer(api)
        f.stage = ffi._EXECUTE
        f.args, f.rets = self._list(args), self._list(rets)
        f.attrs = self._attrs(attrs)
        self.frame = f

    def _error_create(self, args_p):
        self.errors.append(args_p.contents.message.decode())
        return 0xE1

    @staticmethod
    def _answer(q_p, value):
        q_p.contents.answer = value
        return None

    def _list(self, buffers):
        n = len(buffers)
        types = (ctypes.c_int * n)(*([ffi._BUFFER] * n))
        items = (ctypes.POINTER(ffi._Buffer) * n)()
        for k, (ptr, shape, dtype) in enumerate(buffers):
            dims = (ctypes.c_int64 * len(shape))(*shape)
            b = ffi._Buffer(ctypes.sizeof(ffi._Buffer), None, ffi.XLA_DTYPES[np.dtype(dtype).name], ptr, len(shape),
                            dims)
            self._keep += [dims, b]
            items[k] = ctypes.pointer(b)
        self._keep += [types, items]
        return ffi._List(ctypes.sizeof(ffi._List), None, n, types, items)

    def _attrs(self, attrs):
        n = len(attrs)
        types = (ctypes.c_int * n)(*([ffi._SCALAR] * n))
        names = (ctypes.POINTER(ffi._ByteSpan) * n)()
        values = (ctypes.c_void_p * n)()
        for k, (name, v) in enumerate(sorted(attrs.items())):  # XLA passes them sorted by name
            raw = ctypes.create_string_buffer(name.encode())
            span = ffi._ByteSpan(ctypes.addressof(raw), len(name))
            data = ctypes.create_string_buffer(np.asarray(v).tobytes())
            scalar = ffi._Scalar(ffi.XLA_DTYPES[np.asarray(v).dtype.name], ctypes.addressof(data))
            self._keep += [raw, span, data, scalar]
            names[k] = ctypes.pointer(span)
            values[k] = ctypes.addressof(scalar)
        self._keep += [types, names, values]
        return ffi._Attrs(ctypes.sizeof(ffi._Attrs), None, n, types, names, values)

    def call(self, capsule) -> int:
        handler = ffi._HANDLER(_get_pointer(capsule, None))
        return handler(ctypes.pointer(self.frame)) or 0


#: Every scalar type an XLA FFI attribute has (xla/ffi/attribute_map.cc: no 16-bit float), at extreme values.
SCALARS = {"b": np.bool_(True), "i8": np.int8(-128), "i16": np.int16(-32768), "i32": np.int32(-2 ** 31),
           "i64": np.int64(-2 ** 63), "u8": np.uint8(255), "u16": np.uint16(65535), "u32": np.uint32(2 ** 32 - 1),
           "u64": np.uint64(2 ** 64 - 1), "f32": np.float32(-3.4e38), "f64": np.float64(1e-310)}


def test_the_gpu_handler_decodes_every_scalar_attribute_and_its_buffers():
    seen = []
    capsule = ffi.device_handler_capsule(lambda *a: seen.append(a), [np.float32, np.int32], [np.float32])
    frame = Frame([(0x1000, (2, 3), np.float32), (0x2000, (1,), np.int32)], [(0x3000, (6,), np.float32)], SCALARS)
    assert frame.call(capsule) == 0 and frame.errors == []
    (args, rets, attrs, stream, ordinal), = seen
    assert attrs == {k: v.item() for k, v in SCALARS.items()} and all(type(v) is type(SCALARS[k].item())
                                                                      for k, v in attrs.items())
    assert [(b.ptr, b.shape, b.dtype, b.readonly) for b in args + rets] == [
        (0x1000, (2, 3), np.float32, True), (0x2000, (1,), np.int32, True), (0x3000, (6,), np.float32, False)]
    assert (stream, ordinal) == (0x5EED, 1)
    assert frame.call(capsule) == 0 and all(a is b for a, b in zip(seen[0][0], seen[1][0]))  # kept, not remade


def test_a_failure_is_an_xla_error_with_its_message():
    def run(*a):
        raise ValueError("the kernel said no")

    capsule = ffi.device_handler_capsule(run, [np.float32], [np.float32])
    frame = Frame([(0x1000, (1,), np.float32)], [(0x2000, (1,), np.float32)], {})
    assert frame.call(capsule) == 0xE1 and frame.errors == ["ValueError: the kernel said no"]
    wrong = Frame([(0x1000, (1,), np.int32)], [(0x2000, (1,), np.float32)], {})
    assert wrong.call(capsule) == 0xE1
    assert wrong.errors == [f"TypeError: operand 0: XLA passed data type {ffi.XLA_DTYPES['int32']}, expected float32"]


@pytest.mark.parametrize("dtype", sorted(ffi.XLA_DTYPES))
def test_every_buffer_type_reaches_the_cpu_handler(dtype):
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes", reason="NumPy has no bfloat16 without ml_dtypes, which comes "
                                        "with JAX (the Bazel tier has no JAX)")
        dt = np.dtype(ml_dtypes.bfloat16)
    else:
        dt = np.dtype(dtype)
    src = np.arange(6).astype(dt).reshape(2, 3)
    out = np.zeros(6, dt)
    got = []

    def run(args, rets):
        got.append(args[0].copy())
        rets[0][...] = args[0].reshape(-1)

    capsule = ffi.handler_capsule(run, [dt], [dt])
    frame = Frame([(src.ctypes.data, src.shape, dt)], [(out.ctypes.data, out.shape, dt)], {})
    assert frame.call(capsule) == 0 and frame.errors == []
    np.testing.assert_array_equal(got[0], src)
    np.testing.assert_array_equal(out, src.reshape(-1))
