"""pk.debug_print on OpenCL (OpenCL 1.2 printf): the OpenCL C it emits, and the text PoCL prints, equal to
the interpreter's (docs/language.md "Debugging"). The launch tests are skipped with the reason where no
OpenCL runtime is available."""
from __future__ import annotations

import numpy as np

import polykern as pk
from polykern import Buffer, backends, f32, f64, i32, i64, u64
from polykern.testing import tier_skip

_REC = backends.record_for_kind("opencl")
NO_RUNTIME = None if _REC is not None and _REC.runtime_available else (
    f"OpenCL runtime not available: {_REC.runtime_reason if _REC else 'backend not found'}")


@pk.kernel
def show(n: i32, x: Buffer[f32, "readonly"], d: Buffer[f64, "readonly"], big: Buffer[i64, "readonly"],
         w: Buffer[u64, "readonly"]):
    i = pk.global_id(0)
    if i < n:
        pk.debug_print("%d: x=%.3f d=%g big=%d w=%u hex=%08X \"?\"\n", i, x[i], d[i], big[i], w[i], i)


def _args():
    return (3, np.array([0.25, -1.5, 3e4], np.float32), np.array([0.5, -2.0, 12345.0]),
            np.array([-2**40, 2**62, -1], np.int64), np.array([2**64 - 1, 0, 7], np.uint64))


def test_opencl_c_calls_printf_with_long_for_64_bit_integers():
    src = pk.build([show], targets=["opencl"]).on("opencl").inspect_source("cl")
    line = next(s.strip() for s in src.splitlines() if "printf(" in s)
    assert line.startswith('printf("%d: x=%.3f d=%g big=%ld w=%lu hex=%08X \\"\\?\\"\\n", ')
    assert "(double)" not in line  # OpenCL's printf takes a float as it is


@tier_skip.skipif("pocl", NO_RUNTIME is not None, reason=str(NO_RUNTIME))
def test_pocl_prints_what_the_interpreter_prints(capfd):
    pk.build([show], targets=["interpret"])["show"](*_args(), grid=1, block=4)
    interpreted = capfd.readouterr().out
    pk.build([show], targets=["opencl"]).on("opencl")["show"](*_args(), grid=1, block=4)
    printed = capfd.readouterr().out
    assert sorted(printed.splitlines()) == sorted(interpreted.splitlines())
    assert interpreted.splitlines()[1] == f"1: x=-1.500 d=-2 big={2**62} w=0 hex=00000001 \"?\""
