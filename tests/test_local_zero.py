"""Scalar locals and ``pk.local`` arrays start at zero on every backend (the IR's promise, ir/nodes.py).

Found by the differential fuzzer (fuzz case fz1000008_opencl): OpenCL C, CUDA C and MSL declared
``T x;`` / ``T a[n];`` without an initializer and SPIR-V Function variables had none, so a local
read before any write gave stale private memory, or a value the C compiler picked from the undefined
behaviour (``x`` below became 5 on PoCL). The golden sources of every C-like backend and SPIR-V
show the initializers where no runtime is present.
"""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, f64, i8, i32, i64, u8, u16
from polykern.errors import KernelTypeError
from runtimes import runnable_targets

TARGETS = runnable_targets()
TYPES = [i32, f32, u8, i8, u16, i64, f16, f64]
_FEATURE = {"i8": "i8", "u8": "i8", "u16": "i16", "i64": "i64", "f64": "f64", "f16": "f16"}


def _kernel(T):
    @pk.kernel
    def uninit(c: i32, o: Buffer[T], f: Buffer[T]):
        g = pk.global_id(0)
        la = pk.local(T, 4)
        if c > 100:
            x = T(5)
            la[1] = T(3)
        o[g] = x
        f[g] = la[g & 3]
    return uninit


def _params():
    out = []
    for target, kind, skips in TARGETS:
        for T in TYPES:
            reason = skips.get(_FEATURE.get(T.name, ""))
            marks = [pytest.mark.skip(reason=f"{target}: {reason}")] if reason else []
            out.append(pytest.param(target, kind, T, id=f"{kind}-{T.name}", marks=marks))
    return out


@pytest.mark.parametrize("target,kind,T", _params())
def test_locals_start_at_zero(target, kind, T):
    k = _kernel(T)
    try:
        mod = pk.build([k], targets=[target]).on(kind)
    except KernelTypeError as e:  # a backend lacking the type says so
        if any(w in str(e) for w in ("f64", "f16", "64-bit", "8-bit", "16-bit", T.name)):
            pytest.skip(f"{kind}: {e}")
        raise
    n = 64
    o = np.full(n, 7, T.numpy)
    f = np.full(n, 7, T.numpy)
    mod["uninit"](np.int32(0), o, f, grid=1, block=n)
    assert o.tolist() == [0] * n, f"{kind} {T}: scalar local not zero: {o.tolist()[:8]}"
    assert f.tolist() == [0] * n, f"{kind} {T}: pk.local array not zero: {f.tolist()[:8]}"

