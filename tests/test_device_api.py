"""The one device-array API (polykern.runtime.devices; docs/language.md §10): pk.to_device / pk.empty / pk.zeros with
device strings on every runtime present here, launches that keep arrays on their device, named errors."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.runtime.devices import HostArray, parse_device
from polykern.errors import DeviceStringError, DeviceUnavailableError, LaunchError
from polykern.testing import tier_skip
from runtimes import runnable_targets
from device_support import DEVICES, target_or_skip as _target_or_skip


@pk.kernel
def axpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@pytest.mark.parametrize("device", list(DEVICES))
def test_round_trip_and_attributes(device):
    _target_or_skip(device)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = pk.to_device(x, device=device)
    assert (d.shape, d.dtype, d.device_name) == ((3, 4), np.float32, device)
    np.testing.assert_array_equal(d.numpy(), x)
    np.testing.assert_array_equal(d.copy_to_host(), x)
    z = pk.zeros((5,), np.int32, device=device)
    np.testing.assert_array_equal(z.numpy(), np.zeros(5, np.int32))
    e = pk.empty(7, np.float64, device=device)
    assert (e.shape, e.dtype, len(e)) == ((7,), np.float64, 7)
    with pytest.raises(TypeError, match="0-d"):  # one base-class behaviour (WebGPU answered 1)
        len(pk.empty((), np.float32, device=device))


@pytest.mark.parametrize("device", list(DEVICES))
def test_launch_writes_into_the_array(device):
    """A launch binds the array itself: the kernel's writes are in it afterwards, with no copy back."""
    target = _target_or_skip(device)
    n = 64
    x = pk.to_device(np.arange(n, dtype=np.float32), device=device)
    y = pk.to_device(np.ones(n, np.float32), device=device)
    k = pk.build([axpy], [target])["axpy"]
    k(n, 2.0, x, y, grid=1, block=n)
    k(n, 2.0, x, y, grid=1, block=n)  # stays on the device across launches
    np.testing.assert_array_equal(y.numpy(), 4 * np.arange(n, dtype=np.float32) + 1)


def test_cpu_arrays_are_shared_through_dlpack():
    d = pk.to_device(np.arange(6, dtype=np.float32), device="cpu")
    assert isinstance(d, HostArray) and d.__dlpack_device__() == (1, 0)
    view = np.from_dlpack(d)
    view[2] = 42.0  # the same memory, not a copy
    assert d.numpy()[2] == 42.0
    pk.build([axpy], ["llvm"])["axpy"](6, 1.0, d, d, grid=1, block=6)
    assert view[2] == 84.0 and view.__array_interface__["data"][0] == d.__polykern_buffer__()["ptr"]


@pytest.mark.parametrize("bad", ["", "CUDA", "cuda:", "cuda:-1", "cuda:x", ":0", "opencl 0", "cpu:1", 3])
def test_bad_device_strings_are_named(bad):
    with pytest.raises(DeviceStringError, match="device"):
        parse_device(bad)
    with pytest.raises(DeviceStringError):
        pk.zeros(4, np.float32, device=bad)


def test_unknown_kind_and_absent_runtimes_are_named():
    with pytest.raises(DeviceStringError, match="no such device kind"):
        pk.empty(4, np.float32, device="tpu")
    with pytest.raises(DeviceUnavailableError, match="QEMU"):  # Hexagon has no device memory of its own
        pk.empty(4, np.float32, device="hexagon")
    if "cuda" not in {t.split()[0] for t, _, _ in runnable_targets()}:
        with pytest.raises(DeviceUnavailableError, match="CUDA"):
            pk.empty(4, np.float32, device="cuda:0")
    assert issubclass(DeviceUnavailableError, LaunchError) and issubclass(DeviceStringError, LaunchError)


@pytest.mark.parametrize("device", ["opencl:99", "vulkan:99"])
def test_absent_device_index_is_named(device):
    _target_or_skip(device.replace("99", "0"))
    with pytest.raises(DeviceUnavailableError, match="99"):
        pk.empty(4, np.float32, device=device)


def test_a_vulkan_index_names_the_enumerated_devices():
    _target_or_skip("vulkan:0")
    with pytest.raises(DeviceUnavailableError, match=r"'vulkan:99': no such Vulkan device here \(\d+ enumerated: "
                                                     r"vulkan:0\.\.vulkan:\d+"):
        pk.empty(4, np.float32, device="vulkan:99")
    assert pk.empty(4, np.float32, device="vulkan:0").device_name == "vulkan:0"


def test_wrong_runtime_array_is_refused_by_the_launch():
    present = [d for d in ("opencl:0", "vulkan:0", "webgpu") if DEVICES[d] in
               {t.split()[0] for t, _, _ in runnable_targets()}]
    if not present:
        tier_skip.skip_runtime("opencl", "no GPU-style runtime here to hold a foreign array")
    x = pk.to_device(np.arange(8, dtype=np.float32), device=present[0])
    y = np.zeros(8, np.float32)
    with pytest.raises(LaunchError, match="host memory"):
        pk.build([axpy], ["llvm"])["axpy"](8, 1.0, x, y, grid=1, block=8)


def test_copy_between_devices_goes_through_the_host():
    present = [d for d in DEVICES if DEVICES[d] in {t.split()[0] for t, _, _ in runnable_targets()}]
    x = np.arange(10, dtype=np.int32)
    a = pk.to_device(x, device="cpu")
    for dev in present:
        a = pk.to_device(a, device=dev)
        np.testing.assert_array_equal(a.numpy(), x)


@pytest.mark.parametrize("device", ["opencl:0", "vulkan:0", "webgpu"])
def test_module_helpers_are_one_implementation(device):
    """mod.to_device / empty / zeros / device_array exist on every GPU-style runtime's module, on its device."""
    target = _target_or_skip(device)
    mod = pk.build([axpy], [target]).on(target) if hasattr(pk.build([axpy], [target]), "on") else None
    if mod is None:
        pytest.skip("the built artifact has no per-target module accessor")
    a = mod.device_array(np.arange(3, dtype=np.float32))
    assert a.device_name.split(":")[0] == device.split(":")[0]
    np.testing.assert_array_equal(mod.zeros(3, np.float32).numpy(), np.zeros(3, np.float32))
    assert mod.empty(2, np.int32).shape == (2,)
    with pytest.raises(TypeError, match="shape= and dtype="):
        mod.device_array(shape=3)
