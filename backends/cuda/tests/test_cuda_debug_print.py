"""pk.debug_print on CUDA (docs/language.md "Debugging"): CUDA C calls printf (64-bit integers with
``ll``, floats passed as double), nvptx calls ``vprintf(format, argument buffer)`` with the values at
their natural alignment; the launch test needs a GPU and is skipped with the reason elsewhere."""
from __future__ import annotations

import re

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, backends, f32, i32, i64

_REC = backends.record_for_kind("cuda")
NO_DEVICE = None if _REC is not None and _REC.runtime_available else (
    f"no CUDA device: {_REC.runtime_reason if _REC is not None else 'the cuda backend is not installed'}")


@pk.kernel
def show(n: i32, x: Buffer[f32, "readonly"], big: Buffer[i64, "readonly"]):
    i = pk.global_id(0)
    if i < n:
        pk.debug_print("%d x=%.2f big=%d\n", i, x[i], big[i])


def test_cuda_c_calls_printf():
    src = pk.build([show], targets=["cuda"]).on("cuda").inspect_source("cuda")
    call = next(s.strip() for s in src.splitlines() if "printf(" in s)
    assert re.fullmatch(r'printf\("%d x=%\.2f big=%lld\\n", (\w+), \(double\)(\w+), (\w+)\);', call), call


def test_nvptx_calls_vprintf_with_an_aligned_argument_buffer():
    ptx = pk.build([show], targets=["nvptx"]).on("cuda").inspect_source("ptx")
    assert ".extern .func  (.param .b32 func_retval0) vprintf" in ptx
    assert "call.uni (retval0), vprintf, (param0, param1);" in ptx
    fmt = "%d x=%.2f big=%lld\n".encode()
    assert "{" + ", ".join(str(b) for b in fmt) + "}" in ptx  # the format, a global constant
    # i32 at 0, the f32 as a double at 8, the i64 at 16
    assert re.search(r"st\.local\.b32\s+\[%rd\d+\], %r\d+;", ptx)
    assert re.search(r"cvt\.f64\.f32\s+%rd(\d+), %r\d+;", ptx)
    assert re.search(r"st\.local\.(v2\.)?b64\s+\[%rd\d+\+8\]", ptx)
    assert re.search(r"st\.local\.b64\s+\[%rd\d+\+16\]", ptx)


@pytest.mark.skipif(NO_DEVICE is not None, reason=str(NO_DEVICE))
@pytest.mark.parametrize("target", ["cuda", "nvptx"])
def test_the_gpu_prints_what_the_interpreter_prints(target, capfd):
    args = (3, np.array([0.25, -1.5, 3e4], np.float32), np.array([-2**40, 2**62, -1], np.int64))
    pk.build([show], targets=["interpret"])["show"](*args, grid=1, block=4)
    interpreted = capfd.readouterr().out
    pk.build([show], targets=[target])["show"](*args, grid=1, block=4)  # host arrays: a synchronous launch
    assert sorted(capfd.readouterr().out.splitlines()) == sorted(interpreted.splitlines())
