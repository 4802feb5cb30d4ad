"""Regressions of the language frontend (issues 11 and 12): names, constant folding, literal ranges,
build purity, deep expressions and located errors. Results are checked on every runtime present."""
import copy
import threading

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32, i64, ir
from polykern.errors import KernelTypeError
from runtimes import all_target_kinds, runnable_targets

RUNTIMES = [pytest.param(t, k, id=t.split()[0]) for t, k, _ in runnable_targets()]
ONE = dict(grid=(1, 1, 1), block=(1, 1, 1))


def run1(kern, target, kind, out, *scalars):
    """Launch ``kern`` once (one work-item) on ``target`` with ``scalars`` then ``out``; return ``out``."""
    mod = pk.build([kern], targets=[target])
    mod.on(kind)[kern.name](*scalars, out, **ONE)
    return out


# ---------------------------------------------------------------- 1. names are the user's, on every backend

@pk.kernel
def k_keyword_locals(out: Buffer[f32]):
    int_ = 5
    int = 7
    out[0] = f32(int_ * 10 + int)


@pk.kernel
def k_keyword_params(loop: f32, loop_: f32, half: i32, out: Buffer[f32]):
    kernel = loop * 10.0 + loop_
    var = f32(half)
    main = kernel + var
    __x = main * 2.0
    out[0] = __x


@pytest.mark.parametrize("target,kind", RUNTIMES)
def test_keyword_names_do_not_collide(target, kind):
    assert run1(k_keyword_locals, target, kind, np.zeros(1, np.float32))[0] == 57.0
    out = run1(k_keyword_params, target, kind, np.zeros(1, np.float32), np.float32(5), np.float32(7), np.int32(1))
    assert out[0] == 116.0


@pytest.mark.parametrize("kind", all_target_kinds())
def test_user_names_are_the_abi_on_every_backend(kind, monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    mod = pk.build([k_keyword_params, k_keyword_locals], targets=[kind])
    for m in (mod, mod.imports[0]):
        assert [a.name for a in m.functions["k_keyword_params"].args] == ["loop", "loop_", "half", "out"]
    assert mod.imports[0].inspect_source()
