"""passes/bounds_proof.py on the CPU's loop shapes: a counter (``k = init`` ... ``while k < X: ...;
k += c``), a local defined from the counter before its loop (``end = min(k + per, n4)``), a local
assigned once inside a loop, integer ``min``/``max`` and a quotient by a variable. Proven accesses are
left unguarded (the loop vectorizes, benchmarks/cpu.py's sum); what the rules do not cover stays checked."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import LaunchError


@pk.kernel
def chunk_sums(n4: i32, x: Buffer[f32, "readonly"], part: Buffer[f32]):
    """benchmarks/tuned_kernels.py sum_chunks' loop: a contiguous run of float4 groups per work-item."""
    items = pk.num_groups(0) * pk.local_size(0)
    per = (n4 + items - 1) // items
    k = pk.global_id(0) * per
    end = pk.min(k + per, n4)
    s0 = 0.0
    s1 = 0.0
    while k < end:
        a0, a1, a2, a3 = pk.vload(x, k, 4)
        s0 += a0 + a1
        s1 += a2 + a3
        k += 1
    part[pk.global_id(0)] = s0 + s1


@pk.kernel
def clamped(n: i32, y: Buffer[f32]):
    i = pk.min(pk.global_id(0), n - 1)
    y[pk.max(i, 0)] = 1.0


@pk.kernel
def counter_set_twice(n: i32, y: Buffer[f32]):
    k = pk.global_id(0)
    while k < n:
        k += 1
        y[k] = 1.0  # k may be n here
        k += 1


@pk.kernel
def limit_moves(n: i32, y: Buffer[f32]):
    k = 0
    end = n
    while k < end:
        y[k] = 1.0
        end = end + 1  # the limit grows: no bound
        k += 1


@pk.kernel
def counter_from_a_branch(n: i32, m: i32, y: Buffer[f32]):
    k = 0
    if m > 0:
        k = m - 100  # a second first value, maybe negative
    while k < n:
        y[k] = 1.0
        k += 1


@pk.kernel
def not_a_less_than(n: i32, y: Buffer[f32]):
    k = 0
    while k != n:
        y[k] = 1.0
        k += 1


def _checked(kernel) -> int:
    """How many accesses of the default llvm build are left checked (0: all proven)."""
    info = pk.build([kernel]).on("llvm").function_info(kernel.name)
    return int(info.attrs.get("bounds_accesses", 0)) if info.attrs.get("bounds_check") == "1" else 0


def test_a_counter_loop_is_proven_and_compiles_to_the_raw_code():
    assert _checked(chunk_sums) == 0
    safe, raw = pk.build([chunk_sums]), pk.build([chunk_sums], bounds_check=False)
    assert safe.on("llvm").inspect_source("ll") == raw.on("llvm").inspect_source("ll")


@pytest.mark.parametrize("n4, grid, block", [(1000, 2, 64), (7, 3, 8), (4096, 16, 64), (0, 1, 8)])
def test_a_proven_counter_loop_runs_as_the_interpreter_does(n4, grid, block):
    x = np.random.default_rng(n4).standard_normal(4 * n4 + 3).astype(np.float32)
    got = {}
    for target in ("llvm", "interpret"):
        part = np.zeros(grid * block, np.float32)
        pk.build([chunk_sums], targets=[target])["chunk_sums"](n4, x, part, grid=grid, block=block)
        got[target] = part
    np.testing.assert_array_equal(got["llvm"], got["interpret"])


def test_a_counter_loop_past_its_array_is_refused_before_running():
    k = pk.build([chunk_sums])["chunk_sums"]
    x = np.zeros(4 * 100, np.float32)
    part = np.zeros(16, np.float32)
    with pytest.raises(LaunchError, match="possible out-of-bounds access to 'x'"):
        k(101, x, part, grid=2, block=8)
    assert not part.any()


def test_min_and_max_bound_an_index():
    assert _checked(clamped) == 0
    y = np.zeros(5, np.float32)
    pk.build([clamped])["clamped"](5, y, grid=2, block=8)
    assert y.tolist() == [1.0] * 5
    with pytest.raises(LaunchError, match="possible out-of-bounds access to 'y'"):
        pk.build([clamped])["clamped"](6, y, grid=2, block=8)


@pytest.mark.parametrize("kernel", [counter_set_twice, limit_moves, counter_from_a_branch, not_a_less_than])
def test_loops_outside_the_rules_stay_checked(kernel):
    assert _checked(kernel) >= 1


def test_a_checked_counter_loop_still_stops_at_the_end():
    y = np.zeros(7, np.float32)  # k = 6 < 7: y[7] is written after k += 1
    with pytest.raises(LaunchError, match="out-of-bounds write to buffer 'y' at index 7"):
        pk.build([counter_set_twice])["counter_set_twice"](7, y, grid=1, block=1)
    assert y.tolist() == [0, 1, 0, 1, 0, 1, 0]
