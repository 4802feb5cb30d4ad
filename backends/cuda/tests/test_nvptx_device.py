"""The nvptx target's PTX on a real NVIDIA GPU: every conformance case, launched through the CUDA
driver API (libcuda via ctypes, so neither pycuda nor the polykern CUDA runtime is needed).
Skipped, with the reason, where libcuda.so.1 or a GPU is missing."""

import ctypes
import pathlib
import sys

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, f64, i32

try:
    from conformance import ALL_CASES
except ImportError:  # plain pytest: the suite lives in the repository's tests/
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests"))
    from conformance import ALL_CASES
from polykern.errors import KernelTypeError, LaunchError
from polykern.runtime.launch import BufferArg, check_args


def _load_driver():
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return None, f"libcuda.so.1 cannot be loaded ({e}): no NVIDIA driver here"
    if lib.cuInit(0) != 0:
        return None, "cuInit failed: no usable NVIDIA GPU"
    count = ctypes.c_int()
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return None, "the NVIDIA driver sees no GPU"
    return lib, ""


CU, WHY = _load_driver()
pytestmark = pytest.mark.skipif(CU is None, reason=WHY)


def _check(code: int, what: str) -> None:
    if code != 0:
        name = ctypes.c_char_p()
        CU.cuGetErrorName(code, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: {name.value.decode() if name.value else code}")


class _Ctx:
    def __init__(self):
        dev = ctypes.c_int()
        _check(CU.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        major, minor = ctypes.c_int(), ctypes.c_int()
        _check(CU.cuDeviceGetAttribute(ctypes.byref(major), 75, dev), "cuDeviceGetAttribute")  # CC major
        _check(CU.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev), "cuDeviceGetAttribute")  # CC minor
        self.arch = f"sm_{major.value}{minor.value}"
        self.ctx = ctypes.c_void_p()
        _check(CU.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev), "cuDevicePrimaryCtxRetain")
        _check(CU.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")


class DriverModule:
    """``mod[name](*args, grid=, block=)`` for one PTX payload, as the conformance cases expect
    (``kind`` is the module kind the math cases look numeric promises up by)."""

    kind = "cuda"

    def __init__(self, ptx: bytes, functions):
        self.functions = functions
        self.handle = ctypes.c_void_p()
        _check(CU.cuModuleLoadData(ctypes.byref(self.handle), ctypes.c_char_p(ptx + b"\0")), "cuModuleLoadData")

    def __getitem__(self, name: str):
        if name not in self.functions:
            raise LaunchError(f"no kernel {name!r}")
        info = self.functions[name]
        fn = ctypes.c_void_p()
        _check(CU.cuModuleGetFunction(ctypes.byref(fn), self.handle, info.attrs["entry"].encode()),
               "cuModuleGetFunction")

        def launch(*args, grid, block):
            grid3, block3, prepared = check_args(info, args, grid, block)
            holders, device = [], []
            try:
                for p in prepared:
                    if isinstance(p, BufferArg):
                        nbytes = max(p.array.nbytes, 1)
                        ptr = ctypes.c_uint64()
                        _check(CU.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)), "cuMemAlloc")
                        device.append((ptr, p))
                        _check(CU.cuMemcpyHtoD_v2(ptr, p.array.ctypes.data_as(ctypes.c_void_p),
                                                  ctypes.c_size_t(p.array.nbytes)), "cuMemcpyHtoD")
                        holders.append(ptr)
                    else:
                        holders.append(ctypes.create_string_buffer(p.tobytes(), len(p.tobytes())))
                params = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
                _check(CU.cuLaunchKernel(fn, *[ctypes.c_uint(v) for v in grid3 + block3], ctypes.c_uint(0),
                                         None, params, None), "cuLaunchKernel")
                _check(CU.cuCtxSynchronize(), "kernel execution")
                for ptr, p in device:
                    if not p.info.readonly:
                        _check(CU.cuMemcpyDtoH_v2(p.array.ctypes.data_as(ctypes.c_void_p), ptr,
                                                  ctypes.c_size_t(p.array.nbytes)), "cuMemcpyDtoH")
            finally:
                for ptr, _ in device:
                    CU.cuMemFree_v2(ptr)

        return launch


@pytest.fixture(scope="module")
def ctx():
    return _Ctx()


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.name for c in ALL_CASES])
def test_conformance_case_on_gpu(case, ctx):
    try:
        root = pk.build(case.kernels, targets=[f"nvptx -arch={ctx.arch}"])
    except KernelTypeError as e:
        assert "f64" in case.features, f"nvptx refused {case.name}, which needs no optional feature: {e}"
        pytest.skip(f"nvptx refuses it: {str(e).splitlines()[0]}")
    (dev,) = root.imports
    case.run(DriverModule(dev.payload, dev.functions), np.random.default_rng(0))


def _m8(T):
    @pk.kernel
    def m8(n: i32, x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], out: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            a = x[i]
            out[i * 9 + 0] = pk.exp(y[i])
            out[i * 9 + 1] = pk.exp2(y[i])
            out[i * 9 + 2] = pk.log(a)
            out[i * 9 + 3] = pk.log2(a)
            out[i * 9 + 4] = pk.sin(y[i] * a)
            out[i * 9 + 5] = pk.cos(y[i] * a)
            out[i * 9 + 6] = pk.tanh(y[i])
            out[i * 9 + 7] = pk.pow(a, y[i])
            out[i * 9 + 8] = (y[i] * a) % y[i]

    return m8


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_math_accuracy_on_gpu(ctx, dtype):
    """The expansions on the GPU (with NVPTX's FMA contraction) stay within 2 ulp of NumPy's float64
    results (f32), or 3 ulp (f64, where NumPy's own error counts), on wide inputs; % is exact."""
    kernel = _m8(f32 if dtype == np.float32 else f64)
    (dev,) = pk.build([kernel], targets=[f"nvptx -arch={ctx.arch}"]).imports
    mod = DriverModule(dev.payload, dev.functions)
    rng = np.random.default_rng(7)
    n = 1 << 16
    x = np.exp(rng.uniform(-80, 80, n)).astype(dtype)
    y = rng.uniform(-20, 20, n).astype(dtype)
    out = np.zeros(n * 9, dtype)
    mod["m8"](n, x, y, out, grid=n // 256, block=256)
    out = out.reshape(n, 9)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    t = (y * x).astype(np.float64)  # the kernel's product, rounded like the kernel's
    with np.errstate(all="ignore"):
        ref = [np.exp(yd), np.exp2(yd), np.log(xd), np.log2(xd), np.sin(t), np.cos(t), np.tanh(yd), xd ** yd]
        assert np.array_equal(out[:, 8], np.fmod(y * x, y), equal_nan=True), "float % is not exact fmod"
    bound = 2.0 if dtype == np.float32 else 3.0
    for j, r in enumerate(ref):
        with np.errstate(all="ignore"):
            rr = r.astype(dtype)
            ok = np.isfinite(rr) & (np.abs(rr) > np.finfo(dtype).tiny)
            err = np.abs(out[ok, j].astype(np.float64) - r[ok]) / np.spacing(np.abs(rr[ok])).astype(np.float64)
        assert err.max() <= bound, f"function {j}: {err.max():.2f} ulp"
