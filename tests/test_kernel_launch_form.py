"""``saxpy[grid, block](...)`` (Numba's launch form) is a PolykernError that shows polykern's form with
the values given, not Python's "'Kernel' object is not subscriptable"."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import PolykernError


@pk.kernel
def saxpy(n: i32, a: f32, x: Buffer[f32], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@pytest.mark.parametrize("launch,grid,block", [((4, 256), "grid=4", "block=256"), (((2, 2), 64), "grid=(2, 2)",
                                                                                   "block=64"), (8, "grid=8", "")])
def test_numba_launch_form_explains_polykerns(launch, grid, block):
    with pytest.raises(PolykernError) as info:
        saxpy[launch]
    msg = str(info.value)
    assert "Numba's form" in msg and "pk.build([saxpy]" in msg and "mod['saxpy'](" in msg, msg
    assert grid in msg and block in msg, msg


def test_the_form_the_message_shows_runs():
    n, x, y = 16, np.ones(16, np.float32), np.ones(16, np.float32)
    mod = pk.build([saxpy], targets=["llvm"])
    mod["saxpy"](n, 2.0, x, y, grid=4, block=4)
    assert (y == 3.0).all()


def test_a_kernel_is_still_not_iterable():
    with pytest.raises(TypeError):
        iter(saxpy)
