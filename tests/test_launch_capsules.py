"""Launch arguments from frameworks (python/polykern/runtime/launch.py, docs/frameworks.md): raw DLPack capsules
(legacy and 1.0, host memory: read in place, not consumed), a consumed or strided capsule (a named
LaunchError), and tensors that require grad (an autograd-recorded tensor exports no memory: a
``readonly`` parameter reads its detached view, a written one is refused). NumPy makes the capsules;
the tensor here is a stand-in with torch's ``requires_grad`` / ``detach`` (tests/test_framework_torch.py
has the real one)."""
import ctypes

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import LaunchError


@pk.kernel
def axpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@pytest.fixture(scope="module")
def k():
    return pk.build([axpy], targets=["llvm"])["axpy"]


def test_legacy_capsules_are_read_in_place_and_not_consumed(k):
    x, y = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    cx, cy = x.__dlpack__(), y.__dlpack__()
    k(8, 2.0, cx, cy, grid=1, block=8)
    assert np.array_equal(y, 2 * x + 1)  # the kernel wrote y's own memory through its capsule
    k(8, 2.0, cx, cy, grid=1, block=8)  # still the producer's capsule: usable again
    assert np.array_equal(y, 4 * x + 1)
    assert ctypes.pythonapi.PyCapsule_IsValid(ctypes.py_object(cx), b"dltensor") == 1


def test_versioned_capsules_keep_their_read_only_flag(k):
    x = np.arange(4, dtype=np.float32)
    x.flags.writeable = False
    y = np.zeros(4, np.float32)
    k(4, 1.0, x.__dlpack__(max_version=(1, 0)), y.__dlpack__(max_version=(1, 0)), grid=1, block=4)
    assert np.array_equal(y, x)
    with pytest.raises(LaunchError, match=r"argument 'y' .*read-only but the kernel may write it"):
        k(4, 1.0, x, x.__dlpack__(max_version=(1, 0)), grid=1, block=4)


class _Wrap:
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_a_consumed_capsule_is_refused_by_name(k):
    y = np.ones(4, np.float32)
    used = y.__dlpack__()
    np.from_dlpack(_Wrap(used))  # NumPy takes it: renamed 'used_dltensor'
    with pytest.raises(LaunchError, match=r"argument 'x' .*already consumed .*'used_dltensor'"):
        k(4, 1.0, used, y, grid=1, block=4)


def test_strided_and_mistyped_capsules_are_named_errors(k):
    y = np.ones(8, np.float32)
    col = np.zeros((8, 2), np.float32)[:, 0]
    strided = r"argument 'x' .*DLPack capsule is not C-contiguous \(shape \[8\], strides \[2\]\)"
    with pytest.raises(LaunchError, match=strided):
        k(8, 1.0, col.__dlpack__(), y, grid=1, block=8)
    with pytest.raises(LaunchError, match=r"argument 'x' .*expected float32 elements \(f32\), got float64"):
        k(8, 1.0, np.ones(8).__dlpack__(), y, grid=1, block=8)
    other = ctypes.pythonapi.PyCapsule_New
    other.restype, other.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    with pytest.raises(LaunchError, match=r"argument 'x' .*a PyCapsule named 'not_a_tensor'"):
        k(8, 1.0, other(ctypes.addressof(ctypes.c_int(0)), b"not_a_tensor", None), y, grid=1, block=8)


class _Tensor:
    """What matters of a torch tensor that requires grad: its protocols refuse, detach() shares its memory."""

    requires_grad = True

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")

    def __dlpack_device__(self):
        return (1, 0)

    def detach(self):
        return self.array


def test_a_tensor_that_requires_grad_is_read_through_its_detached_view(k):
    x, y = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    k(4, 3.0, _Tensor(x), y, grid=1, block=4)
    assert np.array_equal(y, 3 * x)


def test_a_tensor_that_requires_grad_is_not_written(k):
    y = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match=r"argument 'y' .*requires grad and the kernel may write it.*x\.detach\(\)"):
        k(4, 3.0, y, _Tensor(y), grid=1, block=4)
    assert not y.any()
