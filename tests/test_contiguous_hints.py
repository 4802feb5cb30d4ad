"""A strided array is told how to make a contiguous copy in its own library (a torch tensor was
told numpy.ascontiguousarray): x.contiguous() for torch, cupy.ascontiguousarray for CuPy ... The arrays
here are stand-ins whose type lives in the library's module (torch and CuPy need not be installed)."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import LaunchError


@pk.kernel
def fill(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = 1.0


def _stand_in(module, attrs):
    return type("Tensor", (), dict(attrs, __module__=module))()


def host_dlpack(module):
    """A host tensor of ``module`` exporting a strided view through DLPack (as a CPU torch tensor does)."""
    view = np.zeros(16, np.float32)[::2]
    return _stand_in(module, {"__dlpack__": lambda self, **kw: view.__dlpack__(**kw),
                              "__dlpack_device__": lambda self: view.__dlpack_device__()})


def device_cai(module):
    """A device array of ``module`` describing a strided buffer by __cuda_array_interface__."""
    cai = {"shape": (8,), "typestr": "<f4", "data": (1 << 20, False), "strides": (8,), "version": 3}
    return _stand_in(module, {"__cuda_array_interface__": property(lambda self: cai)})


@pytest.fixture(scope="module")
def mod():
    return pk.build([fill], targets=["llvm"])


def _message(mod, arr):
    with pytest.raises(LaunchError) as info:
        mod["fill"](8, arr, grid=1, block=8)
    assert "not C-contiguous" in str(info.value)
    return str(info.value)


@pytest.mark.parametrize("module,fix", [("torch", "pass x.contiguous()"), ("jaxlib.xla_extension",
                                                                          "pass jax.numpy.array(x, copy=True)"),
                                        ("somelib", "pass numpy.ascontiguousarray(x)")])
def test_a_host_tensor_gets_its_librarys_fix(mod, module, fix):
    msg = _message(mod, host_dlpack(module))
    assert fix in msg, msg
    if module != "somelib":
        assert "numpy.ascontiguousarray" not in msg


@pytest.mark.parametrize("module,fix", [("torch", "pass x.contiguous()"), ("cupy", "pass cupy.ascontiguousarray(x)"),
                                        ("somelib", "pass a C-contiguous copy")])
def test_a_device_array_gets_its_librarys_fix(mod, module, fix):
    msg = _message(mod, device_cai(module))
    assert fix in msg, msg


def test_a_numpy_array_gets_numpys_fix(mod):
    assert "pass numpy.ascontiguousarray(x)" in _message(mod, np.zeros(16, np.float32)[::2])
