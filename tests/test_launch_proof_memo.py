"""polykern.runtime.launch_proof: the launch check's verdict is kept per tuple of the condition's symbol values (a
launch repeated with the same sizes does not evaluate the polynomials again), and a launch with other
values is judged on its own."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.runtime import launch_proof
from polykern.errors import LaunchError


@pk.kernel
def shift_copy(n: i32, k: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = x[i + k]


def _proven():
    return pk.build([shift_copy], targets=["llvm"])["shift_copy"].resolve()[1]


def test_a_verdict_is_kept_per_symbol_values_and_others_are_judged_anew():
    p = _proven()
    seen = p.fast.__globals__["seen"]
    x, y = np.arange(40, dtype=np.float32), np.zeros(32, np.float32)
    p(32, 8, x, y, grid=1, block=32)
    assert len(seen) == 1 and list(seen.values()) == [-1]
    p(32, 8, x, y, grid=1, block=32)
    assert len(seen) == 1  # looked up
    with pytest.raises(LaunchError, match="possible out-of-bounds access to 'x'"):
        p(32, 9, x, y, grid=1, block=32)  # x[31 + 9] is past the end
    assert len(seen) == 2 and sorted(seen.values())[0] == -1 and sorted(seen.values())[1] >= 0
    with pytest.raises(LaunchError, match="possible out-of-bounds access to 'x'"):
        p(32, 9, x, y, grid=1, block=32)  # the kept verdict refuses again
    np.testing.assert_array_equal(y, x[8:40])


def test_the_kept_verdicts_are_bounded():
    p = _proven()
    seen = p.fast.__globals__["seen"]
    x, y = np.arange(200, dtype=np.float32), np.zeros(100, np.float32)
    for k in range(launch_proof._SEEN_MAX + 10):
        p(100, k % 100, x, y, grid=1, block=128)
        assert len(seen) <= launch_proof._SEEN_MAX
