"""``for k in range(...)`` evaluates its bounds once, before the loop, start first, as Python does
(fuzz finding F10: C-like targets re-read ``stop`` every iteration). Checked on every runtime here."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, i32, ir
from runtimes import runnable_targets

RUNTIMES = [pytest.param(t, k, id=t.split()[0]) for t, k, _ in runnable_targets()]
ONE = dict(grid=(1, 1, 1), block=(1, 1, 1))


@pk.kernel
def k_stop_grows(o: Buffer[i32]):
    n = 3
    for k in range(n):
        n += 1
        o[0] = o[0] + 1


@pk.kernel
def k_stop_shrinks_downward(o: Buffer[i32]):
    lo = 0
    for k in range(10, lo, -2):
        lo = k
        o[0] = o[0] + 1


@pk.kernel
def k_loop_var_is_the_stop(o: Buffer[i32]):
    n = 4
    for n in range(n):
        o[0] = o[0] + 1


@pk.kernel
def k_start_before_stop(o: Buffer[i32]):
    # Python: start = 0 (the first atomic), stop = 1 + 2: three iterations. Evaluating stop first
    # would give stop = 2, start = 1: one iteration.
    for k in range(pk.atomic_add(o, 1, 1), pk.atomic_add(o, 1, 1) + 2):
        o[0] = o[0] + 1


CASES = [(k_stop_grows, 3), (k_stop_shrinks_downward, 5), (k_loop_var_is_the_stop, 4), (k_start_before_stop, 3)]


@pytest.mark.parametrize("kern,iterations", CASES, ids=[k.name for k, _ in CASES])
@pytest.mark.parametrize("target,kind", RUNTIMES)
def test_range_bounds_are_evaluated_once(kern, iterations, target, kind):
    o = np.zeros(2, np.int32)
    mod = pk.build([kern], targets=[target])
    mod.on(kind)[kern.name](o, **ONE)
    assert o[0] == iterations


def test_ir_for_stop_is_a_temporary_the_body_never_writes():
    for kern, _ in CASES:
        fn = kern.ir
        loop = next(s for s in fn.body if isinstance(s, ir.For))
        assert isinstance(loop.stop, (ir.Const, ir.Var))
        if isinstance(loop.stop, ir.Var):
            assert loop.stop.name.startswith("_t")
            assigned = [s.name for s in loop.body if isinstance(s, ir.Assign)]
            assert loop.stop.name not in assigned


def test_constant_stop_needs_no_temporary():
    @pk.kernel
    def k_const(o: Buffer[i32]):
        for k in range(5):
            o[0] = o[0] + 1

    fn = k_const.ir
    assert list(fn.locals) == ["k"]


def test_parameter_stop_needs_no_temporary():
    @pk.kernel
    def k_param(n: i32, o: Buffer[i32]):
        for k in range(n):
            o[0] = o[0] + 1

    loop = k_param.ir.body[0]
    assert isinstance(loop, ir.For) and loop.stop.name == "n"
