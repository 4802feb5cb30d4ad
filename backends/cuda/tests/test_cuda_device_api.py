"""pk.to_device / pk.empty / pk.zeros with "cuda" / "cuda:N" device strings (polykern.runtime.devices; docs/language.md
§10). Skipped with the reason where there is no CUDA device; the lead runs it on the H200."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import backends
from polykern.errors import DeviceUnavailableError

REASON = backends.runtime_reason("cuda")
pytestmark = pytest.mark.skipif(bool(REASON), reason=f"no CUDA device: {REASON}")


@pk.kernel
def axpy(n: pk.i32, a: pk.f32, x: pk.Buffer[pk.f32, "readonly"], y: pk.Buffer[pk.f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


def test_cuda_device_strings_round_trip_and_launch_in_place():
    from polykern_cuda import runtime as rt

    ordinal = rt.get_device().ordinal
    for device in ("cuda", f"cuda:{ordinal}"):
        x = pk.to_device(np.arange(256, dtype=np.float32), device=device)
        y = pk.zeros(256, np.float32, device=device)
        assert isinstance(x, rt.DeviceArray) and (x.shape, x.dtype, x.device_name) == ((256,), np.float32,
                                                                                      f"cuda:{ordinal}")
        assert x.__cuda_array_interface__["data"][0] == x.ptr != 0
        k = pk.build([axpy], ["cuda"])["axpy"]
        k(256, 2.0, x, y, grid=2, block=128)
        pooled = {c: rt.stats().get(c, 0) for c in ("buffers_created", "buffers_reused")}
        k(256, 2.0, x, y, grid=2, block=128)  # device arrays: no staging buffer taken from the pool
        assert {c: rt.stats().get(c, 0) for c in pooled} == pooled
        np.testing.assert_array_equal(y.copy_to_host(), 4 * np.arange(256, dtype=np.float32))
        np.testing.assert_array_equal(pk.empty((2, 3), np.int32, device=device).numpy().shape, (2, 3))


def test_other_cuda_ordinal_is_named():
    from polykern_cuda import runtime as rt

    other = rt.device_count()  # one past the last device this host has
    with pytest.raises(DeviceUnavailableError, match=f"device 'cuda:{other}': this host has"):
        pk.empty(4, np.float32, device=f"cuda:{other}")
