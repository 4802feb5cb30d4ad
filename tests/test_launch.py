"""polykern.runtime.launch.check_args: argument count, dtype, writability, scalar ranges, launch shape."""
import numpy as np
import pytest

from polykern.errors import LaunchError
from polykern.ir.types import bool_, f16, f32, f64, i8, i32, i64, u8, u32
from polykern.runtime.launch import BufferArg, ScalarArg, check_args, dlpack_describe, normalize_dims
from polykern.module import ArgInfo, FunctionInfo
from polykern.testing.synthetic import saxpy_info

SAXPY = saxpy_info()  # saxpy(n: i32, a: f32, x: Buffer[f32, readonly], y: Buffer[f32])


def _ok(*args, grid=4, block=64, info=SAXPY):
    return check_args(info, args, grid, block)


def _args(n=8):
    return [n, 2.0, np.ones(n, np.float32), np.zeros(n, np.float32)]


def test_happy_path_normalizes():
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    grid, block, prep = _ok(8, 2.5, x, y, grid=(2,), block=(4, 2))
    assert grid == (2, 1, 1) and block == (4, 2, 1)
    assert isinstance(prep[0], ScalarArg) and prep[0].value.dtype == np.int32 and prep[0].value == 8
    assert prep[1].value.dtype == np.float32 and prep[1].tobytes() == np.float32(2.5).tobytes()
    assert isinstance(prep[2], BufferArg) and prep[2].is_host and prep[2].size == 8 and prep[2].nbytes == 32
    assert prep[3].ptr == y.ctypes.data and np.shares_memory(prep[3].array, y)
    assert prep[2].device == ("cpu", 0)


def test_wrong_count_names_kernel_and_signature():
    with pytest.raises(LaunchError, match=r"kernel 'saxpy' takes 4 arguments \(n: i32, a: f32, x: Buffer\[f32, "
                                          r"readonly\], y: Buffer\[f32\]\), got 3"):
        _ok(1, 2.0, np.ones(1, np.float32))


@pytest.mark.parametrize("bad,pos,match", [
    (np.ones(8, np.float64), 3, r"argument 'x' \(#3.*expected float32 elements.*got float64"),
    (np.ones(8, np.int32), 4, r"argument 'y' \(#4.*got int32"),
    ([1.0, 2.0], 4, r"argument 'y' \(#4.*expected an array.*got list.*numpy.asarray"),
    (3.0, 3, r"argument 'x' \(#3.*expected an array, got float 3.0"),
    (np.ones((4, 4), np.float32)[:, 0], 4, "not C-contiguous"),
    (np.ones(8, np.dtype(">f4")), 3, "expected float32 elements"),
    (np.float32(1), 4, "expected an array"),
])
def test_buffer_errors(bad, pos, match):
    args = _args()
    args[pos - 1] = bad
    with pytest.raises(LaunchError, match=match):
        _ok(*args)


def test_readonly_array_only_for_readonly_param():
    ro = np.ones(8, np.float32)
    ro.flags.writeable = False
    args = _args()
    args[2] = ro  # x is Buffer[f32, "readonly"]: fine
    _ok(*args)
    args[3] = ro  # y is writable: error that says how to fix it
    with pytest.raises(LaunchError, match=r"argument 'y' \(#4.*read-only.*Buffer\[f32, \"readonly\"\]"):
        _ok(*args)


def test_contiguous_nd_arrays_pass_as_flat_memory():
    y = np.zeros((4, 2), np.float32)
    _, _, prep = _ok(8, 1.0, np.ones(8, np.float32), y)
    assert prep[3].size == 8 and prep[3].array.ndim == 1 and np.shares_memory(prep[3].array, y)
    with pytest.raises(LaunchError, match="0-d"):
        _ok(8, 1.0, np.ones(8, np.float32), np.array(1.0, np.float32))


@pytest.mark.parametrize("t,value,ok", [
    (i32, 2 ** 31 - 1, True), (i32, 2 ** 31, False), (i32, -2 ** 31, True), (i32, -2 ** 31 - 1, False),
    (u8, 255, True), (u8, 256, False), (u8, -1, False), (u32, np.uint64(2 ** 32 - 1), True),
    (i8, np.int64(-129), False), (i64, 2 ** 63 - 1, True), (i64, 2 ** 63, False),
    (f16, 65504.0, True), (f16, 70000.0, False), (f32, 1e39, False), (f32, float("inf"), True),
    (f32, float("nan"), True), (f64, 10 ** 400, False), (f32, 3, True), (f64, np.float32(1.5), True),
    (i32, 3.0, False), (i32, np.float64(1.0), False), (i32, True, False), (f32, True, False),
    (bool_, True, True), (bool_, np.bool_(False), True), (bool_, 1, True), (bool_, 2, False),
    (bool_, 1.0, False), (i32, "3", False), (i32, None, False), (i32, np.array(7), True),
    (i32, np.array([7]), False), (f32, 1 + 2j, False),
])
def test_scalar_types_and_ranges(t, value, ok):
    info = FunctionInfo("k", (ArgInfo.scalar("v", t),))
    if ok:
        _, _, prep = check_args(info, [value], 1, 1)
        assert prep[0].value.dtype == t.numpy
    else:
        with pytest.raises(LaunchError, match=r"kernel 'k', argument 'v' \(#1"):
            check_args(info, [value], 1, 1)


@pytest.mark.parametrize("dims,expect", [(4, (4, 1, 1)), ((4,), (4, 1, 1)), ([2, 3], (2, 3, 1)),
                                         ((1, 2, 3), (1, 2, 3)), (np.int64(5), (5, 1, 1))])
def test_dims_ok(dims, expect):
    assert normalize_dims("grid", dims) == expect


@pytest.mark.parametrize("dims", [0, -1, (), (1, 2, 3, 4), (1.0,), "4", (True,), True, 2 ** 31, None, (4, 0)])
def test_dims_bad(dims):
    with pytest.raises(LaunchError, match="kernel 'saxpy'.*(grid|block)"):
        _ok(*_args(), grid=dims)
    with pytest.raises(LaunchError, match="kernel 'saxpy'"):
        _ok(*_args(), block=dims)


class _HostInterface:
    """Exposes NumPy memory through __array_interface__ only."""

    def __init__(self, arr):
        self._arr = arr
        self.__array_interface__ = arr.__array_interface__


class _DLPackOnly:
    def __init__(self, arr):
        self._arr = arr

    def __dlpack__(self, **kw):
        return self._arr.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._arr.__dlpack_device__()


class _FakeDeviceDLPack(_DLPackOnly):
    """Claims CUDA device 3, so the capsule reader (not np.from_dlpack) handles it."""

    def __dlpack_device__(self):
        return (2, 3)


class _CudaInterface:
    def __init__(self, ptr, n, typestr="<f4", readonly=False, strides=None):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (ptr, readonly),
                                         "version": 3, "strides": strides}


def test_array_interface_and_dlpack_host():
    y = np.zeros(8, np.float32)
    for wrapped in (_HostInterface(y), _DLPackOnly(y)):
        _, _, prep = _ok(8, 1.0, np.ones(8, np.float32), wrapped)
        assert prep[3].is_host and prep[3].ptr == y.ctypes.data and prep[3].obj is wrapped
    with pytest.raises(LaunchError, match="float64"):
        _ok(8, 1.0, np.ones(8, np.float32), _DLPackOnly(np.zeros(8)))


def test_dlpack_capsule_reader_matches_numpy():
    a = np.arange(12, dtype=np.float32)[2:]
    d = dlpack_describe(a.__dlpack__())
    assert d["ptr"] == a.ctypes.data and d["shape"] == [10] and d["device"] == (1, 0)
    assert (d["code"], d["bits"], d["lanes"]) == (2, 32, 1)
    with pytest.raises(ValueError):
        dlpack_describe(object())


def test_device_dlpack_and_cuda_interface():
    y = np.zeros(8, np.float32)
    _, _, prep = _ok(8, 1.0, np.ones(8, np.float32), _FakeDeviceDLPack(y))
    # The capsule (not __dlpack_device__) is the truth about the memory: NumPy's says CPU 0.
    assert not prep[3].is_host and prep[3].device == ("cpu", 0) and prep[3].ptr == y.ctypes.data
    assert prep[3].keepalive is not None and prep[3].size == 8
    with pytest.raises(LaunchError, match="expected float32 elements"):
        _ok(8, 1.0, np.ones(8, np.float32), _FakeDeviceDLPack(np.zeros(8, np.int32)))
    _, _, prep = _ok(8, 1.0, np.ones(8, np.float32), _CudaInterface(0xDEAD0000, 8))
    assert prep[3].ptr == 0xDEAD0000 and prep[3].device[0] == "cuda" and prep[3].size == 8
    with pytest.raises(LaunchError, match="read-only"):
        _ok(8, 1.0, np.ones(8, np.float32), _CudaInterface(0xDEAD0000, 8, readonly=True))
    with pytest.raises(LaunchError, match="float64"):
        _ok(8, 1.0, np.ones(8, np.float32), _CudaInterface(0xDEAD0000, 8, typestr="<f8"))
    with pytest.raises(LaunchError, match="not C-contiguous"):
        _ok(8, 1.0, np.ones(8, np.float32), _CudaInterface(0xDEAD0000, 8, strides=(8,)))


def test_polykern_buffer_protocol():
    class DevArray:
        def __polykern_buffer__(self):
            return {"ptr": 4096, "size": 8, "code": 2, "bits": 32, "device": ("vulkan", 0)}

    _, _, prep = _ok(8, 1.0, np.ones(8, np.float32), DevArray())
    assert prep[3].device == ("vulkan", 0) and prep[3].ptr == 4096

    class Broken:
        def __polykern_buffer__(self):
            return {"ptr": 1}

    with pytest.raises(LaunchError, match="malformed __polykern_buffer__"):
        _ok(8, 1.0, np.ones(8, np.float32), Broken())



def test_a_void_cuda_typestr_defers_to_dlpack():
    """torch 2.11 describes a bfloat16 CUDA tensor's elements as '|V2' in __cuda_array_interface__ (any 2-byte
    type could be that): an object that also speaks DLPack is read through DLPack, which names bfloat16."""
    from polykern.runtime.launch import _has_cuda_interface

    class Tensor:
        def __init__(self, typestr):
            self.typestr = typestr

        @property
        def __cuda_array_interface__(self):
            return {"typestr": self.typestr, "shape": (4,), "data": (1 << 20, False), "version": 3}

        def __dlpack__(self, stream=None):
            raise NotImplementedError

        def __dlpack_device__(self):
            return (2, 0)

    class NoDLPack:
        __cuda_array_interface__ = {"typestr": "|V2", "shape": (4,), "data": (1 << 20, False), "version": 3}

    assert not _has_cuda_interface(Tensor("|V2"))
    assert _has_cuda_interface(Tensor("<f2"))
    assert _has_cuda_interface(NoDLPack())  # nothing better to read: the interface is read (and refused there)


def test_a_void_cuda_typestr_named_bfloat16_is_read_directly():
    """A '|V2' interface whose object names its dtype bfloat16 (torch.bfloat16) is bf16: read through the
    interface (no DLPack capsule per launch: that cost 0.2-0.4 ms a launch on an H200 at 4096^3 bf16 GEMM),
    and refused for a kernel that wants f16; an unnamed '|V2' still defers to DLPack."""
    from polykern.ir.types import bf16, f16
    from polykern.runtime.launch import _cuda_interface, _has_cuda_interface, names_bfloat16
    from polykern.module import ArgInfo, FunctionInfo

    class Tensor:
        def __init__(self, dtype):
            self.dtype = dtype

        @property
        def __cuda_array_interface__(self):
            return {"typestr": "<V2", "shape": (4,), "data": (1 << 20, False), "version": 3}  # torch 2.11's

        def __dlpack__(self, stream=None):
            raise NotImplementedError

        def __dlpack_device__(self):
            return (2, 0)

    named, unnamed = Tensor("torch.bfloat16"), Tensor("torch.float16")
    assert names_bfloat16(named, named.__cuda_array_interface__)
    assert _has_cuda_interface(named) and not _has_cuda_interface(unnamed)
    want_bf16 = FunctionInfo("k", (ArgInfo.buffer("x", bf16),))
    assert _cuda_interface(want_bf16, 0, named).ptr == 1 << 20
    with pytest.raises(LaunchError, match="f16"):
        _cuda_interface(FunctionInfo("k", (ArgInfo.buffer("x", f16),)), 0, named)
