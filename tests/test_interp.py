"""The IR interpreter (polykern.testing.interp), the fuzzer's oracle: the language's exact meaning,
and refusal of programs that have none (races, divergent barriers, out-of-bounds accesses)."""
import math

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, i8, i32, u8, u32
from polykern.lang.frontend import translate
from polykern.testing import kernelgen
from polykern.testing.compare import compare
from polykern.testing.interp import OracleError, interpret, prepare


@pk.kernel
def int_ops(a: Buffer[i32, "readonly"], b: Buffer[i32, "readonly"], o: Buffer[i32]):
    i = pk.global_id(0)
    o[i * 6 + 0] = a[i] + b[i]
    o[i * 6 + 1] = a[i] * b[i]
    o[i * 6 + 2] = a[i] // b[i]
    o[i * 6 + 3] = a[i] % b[i]
    o[i * 6 + 4] = a[i] << b[i]
    o[i * 6 + 5] = a[i] >> b[i]


def test_integers_wrap_truncate_and_divide_by_zero_as_numerics_defines():
    a = np.array([2**31 - 1, -7, -2**31, 7, -2**31, 5], np.int32)
    b = np.array([1, 2, -1, 0, 0, 33], np.int32)
    o = np.zeros(36, np.int32)
    got = interpret(int_ops, [a, b, o], grid=1, block=6).buffers["o"].reshape(6, 6)
    assert list(got[0][:2]) == [-2**31, 2**31 - 1]  # add and mul wrap
    assert list(got[1][2:4]) == [-3, -1]  # // and % truncate toward zero
    assert list(got[2][2:4]) == [-2**31, 0]  # MIN // -1 wraps, MIN % -1 == 0
    assert list(got[3][2:4]) == [7, 0]  # x // 0 == x, x % 0 == 0
    assert got[5][4] == 5 << 1 and got[5][5] == 5 >> 1  # shift amount modulo 32


@pk.kernel
def casts(x: Buffer[f32, "readonly"], o: Buffer[i32], p: Buffer[u8], q: Buffer[u32]):
    i = pk.global_id(0)
    o[i] = i32(x[i])
    p[i] = u8(x[i])
    q[i] = u32(x[i])


def test_float_to_int_casts_saturate_and_nan_is_zero():
    x = np.array([math.nan, math.inf, -math.inf, -1.5, 300.7, 3e9], np.float32)
    r = interpret(casts, [x, np.zeros(6, np.int32), np.zeros(6, np.uint8), np.zeros(6, np.uint32)],
                  grid=1, block=6).buffers
    assert list(r["o"]) == [0, 2**31 - 1, -2**31, -1, 300, 2**31 - 1]
    assert list(r["p"]) == [0, 255, 0, 0, 255, 255]
    assert list(r["q"]) == [0, 2**32 - 1, 0, 0, 300, 3000000000]


@pk.kernel
def rounding(o: Buffer[f32], h: Buffer[f16]):
    big = f32(16777216.0)
    o[0] = (big + 1.0) - big  # f32: 2^24 + 1 rounds to 2^24
    x = f16(2048.0)
    h[0] = (x + f16(1.0)) - x  # f16: 2049 rounds to 2048


def test_floats_round_to_their_type_after_every_operation():
    r = interpret(rounding, [np.ones(1, np.float32), np.ones(1, np.float16)], grid=1, block=1).buffers
    assert r["o"][0] == 0.0 and r["h"][0] == 0.0


@pk.kernel
def rotate(x: Buffer[i32, "readonly"], o: Buffer[i32]):
    lid = pk.local_id(0)
    sh = pk.shared(i32, 4)
    la = pk.local(i32, 4)
    sh[lid] = x[pk.global_id(0)]
    pk.barrier()
    o[pk.global_id(0)] = sh[(lid + 1) % 4] + la[lid]


def test_shared_memory_is_per_group_and_barriers_order_it():
    x = np.arange(8, dtype=np.int32) * 10
    r = interpret(rotate, [x, np.zeros(8, np.int32)], grid=2, block=4).buffers
    assert list(r["o"]) == [10, 20, 30, 0, 50, 60, 70, 40]  # locals start at zero
    mod = pk.build([rotate], ["llvm"])
    o = np.zeros(8, np.int32)
    mod["rotate"](x, o, grid=2, block=4)
    assert list(o) == list(r["o"])


@pk.kernel
def divergent_barrier(o: Buffer[i32]):
    if pk.local_id(0) < 2:
        pk.barrier()
    o[pk.global_id(0)] = 1


@pk.kernel
def racy(o: Buffer[i32]):
    o[0] = pk.global_id(0)


@pk.kernel
def read_unwritten_shared(o: Buffer[i32]):
    sh = pk.shared(i32, 4)
    o[pk.global_id(0)] = sh[pk.local_id(0)]


@pk.kernel
def out_of_bounds(o: Buffer[i32]):
    o[pk.global_id(0) + 1] = 1


@pk.kernel
def forever(o: Buffer[i32]):
    k = 0
    while o[0] == 0:
        k += 1


@pk.kernel
def mixed_atomics(o: Buffer[i32]):
    pk.atomic_add(o, 0, 1)
    pk.atomic_max(o, 0, pk.global_id(0))


@pytest.mark.parametrize("kernel,grid,block,message", [
    # The language refuses this barrier (polykern.passes.uniformity); the oracle must still refuse its IR.
    (translate(divergent_barrier.pyfunc, check_barriers=False), 1, 4, "barrier in divergent control flow"),
    (racy, 1, 2, "data race on o[0]"),
    (read_unwritten_shared, 1, 4, "which no work-item has written"),
    (out_of_bounds, 1, 4, "index 4 is out of bounds of 'o' (4 elements)"),
    (forever, 1, 1, "loop iterations"),
    (mixed_atomics, 1, 2, "atomic_max() by work-item 0 after atomic_add()"),
])
def test_programs_without_one_meaning_are_refused_with_a_location(kernel, grid, block, message):
    with pytest.raises(OracleError) as ei:
        interpret(kernel, [np.zeros(4, np.int32)], grid=grid, block=block)
    assert message in str(ei.value)
    assert "test_interp.py:" in str(ei.value)


@pk.kernel
def atomics(o: Buffer[i32], m: Buffer[u32]):
    i = pk.global_id(0)
    pk.atomic_add(o, 0, i)
    pk.atomic_min(m, 0, u32(i) + u32(5))
    pk.atomic_max(m, 1, u32(i))


def test_commutative_atomics_give_the_order_independent_result():
    r = interpret(atomics, [np.zeros(1, np.int32), np.array([100, 0], np.uint32)], grid=2, block=8).buffers
    assert r["o"][0] == sum(range(16)) and list(r["m"]) == [5, 15]


@pk.kernel
def inexact_store(x: Buffer[f32, "readonly"], o: Buffer[f32]):
    i = pk.global_id(0)
    o[i] = pk.sin(x[i])
    o[i + 4] = x[i] * 2.0


@pk.kernel
def inexact_branch(x: Buffer[f32, "readonly"], o: Buffer[f32]):
    if pk.exp(x[0]) > 1.0:
        o[0] = 1.0


def test_inexact_results_are_compared_within_their_promise_and_refused_in_control_flow():
    x = np.array([0.5, 1.0, 2.0, 3.0], np.float32)
    r = interpret(inexact_store, [x, np.zeros(8, np.float32)], grid=1, block=4)
    direct, tags, operands = r.taint["o"][0]
    assert direct == ("sin", "f32") and operands == (0.5,)
    assert r.taint["o"][4] is None  # x * 2 is exact
    got = dict(r.buffers)
    got["o"] = r.buffers["o"].copy()
    got["o"][0] = np.nextafter(got["o"][0], np.float32(1))  # 1 ulp: within sin's budget
    assert compare(r, got, "llvm").ok
    got["o"][4] = np.nextafter(got["o"][4], np.float32(10))  # exact element 1 ulp off: a mismatch
    c = compare(r, got, "llvm")
    assert [(m.buffer, m.index) for m in c.mismatches] == [("o", 4)]
    with pytest.raises(OracleError, match="a condition depends on inexact operations"):
        prepare(inexact_branch)


def test_build_does_not_change_what_the_oracle_sees():
    before = prepare(int_ops).fn
    pk.build([int_ops], ["llvm"])
    after = prepare(int_ops).fn
    from polykern.ir.printer import function_str

    assert function_str(before) == function_str(after)


@pytest.mark.parametrize("seed", [3, 11, 29, 40])
def test_oracle_agrees_with_the_cpu_backend_on_generated_programs(seed, tmp_path):
    from polykern.testing import fuzzcase

    p = kernelgen.generate(seed, avoid=kernelgen.BEFORE_MEMORY)  # the programs of before the generator's 2026-11-28 sections
    case = fuzzcase.Case(p.name, p.source, p.grid, p.block, p.make_args(), p.features)
    case.kernel(str(tmp_path))
    out = fuzzcase.check_target(case, case.oracle(), "llvm")
    assert out.status == "ok", out.detail


@pk.kernel
def mul_add(x: Buffer[f32, "readonly"], o: Buffer[f32]):
    i = pk.global_id(0)
    t = x[i] * 3.1
    o[i] = t + x[i]


def test_a_product_plus_addend_is_unchecked_only_where_contraction_is_allowed():
    x = np.array([1.1, 2.3], np.float32)
    r = interpret(mul_add, [x, np.zeros(2, np.float32)], grid=1, block=2)
    assert r.contractible and not prepare(rounding).contractible
    got = {"x": x, "o": r.buffers["o"].copy()}
    got["o"][0] = np.nextafter(got["o"][0], np.float32(10))  # what a fused a*b+c may give
    assert not compare(r, got, "llvm").ok  # llvm never contracts
    c = compare(r, got, "webgpu")  # numerics.MAY_CONTRACT
    assert c.ok and c.unchecked == 2  # o, which the a*b+c fed (tests/test_interp_contraction.py)


@pk.kernel
def range_once(o: Buffer[i32]):
    n = 3
    for k in range(n):
        n += 1
        o[0] = o[0] + 1


def test_range_bounds_are_evaluated_once_as_in_python():
    r = interpret(range_once, [np.zeros(1, np.int32)], grid=1, block=1)
    assert r.buffers["o"][0] == 3



@pk.kernel
def nan_in_condition(a: Buffer[f32, "readonly"], o: Buffer[i32], p: Buffer[i32]):
    g = pk.global_id(0)
    la = pk.local(f32, 2)
    p[g] = g * 3
    if la[1] * a[g]:  # 0 * NaN is NaN (true); lavapipe folds 0 * x to 0 (fuzz case fz12000023)
        o[g] = 1


@pk.kernel
def hidden_specials(a: Buffer[f32, "readonly"], o: Buffer[f32], k: Buffer[i32]):
    g = pk.global_id(0)
    o[g * 4] = 1.0 / a[g]           # 1 / inf == 0: a finite result of an infinite operand
    k[g * 2] = i32(a[g] < 5.0)      # a comparison with an infinity
    o[g * 4 + 1] = pk.exp(-a[g])    # exp(-inf) == 0
    t = pk.min(a[g], 2.0)           # min(NaN, 2) == 2
    o[g * 4 + 2] = t
    o[g * 4 + 3] = a[g]             # a copy: no float operation
    k[g * 2 + 1] = g                # exact, integer


@pk.kernel
def add_chain(a: Buffer[f32, "readonly"], o: Buffer[f32], p: Buffer[f32]):
    g = pk.global_id(0)
    o[g] = pk.max(2.1, a[g]) + 35.25 - 9.5
    p[g] = a[g] + 1.0


def test_special_values_are_recorded_where_a_float_operation_sees_or_makes_them():
    f = np.float32
    r = interpret(nan_in_condition, [np.array([1.5, np.nan], f), np.full(2, 7, np.int32), np.zeros(2, np.int32)],
                  grid=1, block=2)
    assert list(r.buffers["o"]) == [7, 1] and r.special_anywhere  # the NaN decided a branch
    r = interpret(nan_in_condition, [np.array([1.5, -2.0], f), np.full(2, 7, np.int32), np.zeros(2, np.int32)],
                  grid=1, block=2)
    assert not r.special_anywhere and not any(m.any() for m in r.special.values())
    for x in (np.inf, -np.inf, np.nan):  # each operation hides the special operand from its result
        r = interpret(hidden_specials, [np.array([1.0, x], f), np.zeros(8, f), np.zeros(4, np.int32)],
                      grid=1, block=2)
        assert not r.special_anywhere
        assert list(r.special["o"]) == [False] * 4 + [True, True, True, False], x
        assert list(r.special["k"]) == [False, False, True, False], x


def test_specials_are_unchecked_only_where_the_backend_and_device_do_not_promise_them():
    a = np.array([1.5, np.nan], np.float32)
    r = interpret(nan_in_condition, [a, np.full(2, 7, np.int32), np.zeros(2, np.int32)], grid=1, block=2)
    folded = {"a": a, "o": np.array([7, 7], np.int32), "p": np.array([0, 3], np.int32)}  # lavapipe's answer
    lavapipe = "vulkan:0: llvmpipe (LLVM 15.0.6, 256 bits) (CPU, Vulkan 1.3.230, lavapipe, Mesa 22.3.6)"
    nvidia = "vulkan:0: NVIDIA H100 80GB HBM3 (discrete GPU, Vulkan 1.4.312, NVIDIA 580.65.06)"
    assert not compare(r, folded, "llvm").ok
    assert not compare(r, folded, "vulkan", device=nvidia).ok
    assert not compare(r, folded, "vulkan").ok  # an unknown device keeps the backend's promise
    for backend, device in (("vulkan", lavapipe), ("webgpu", "")):
        c = compare(r, folded, backend, device=device)
        assert c.ok and c.unchecked == 6, backend
    # where the special only fed some elements, the others stay exact on those devices
    x = np.array([1.0, np.inf], np.float32)
    r = interpret(hidden_specials, [x, np.zeros(8, np.float32), np.zeros(4, np.int32)], grid=1, block=2)
    good = {"a": x, "o": r.buffers["o"].copy(), "k": r.buffers["k"].copy()}
    for i in (4, 5, 6):
        good["o"][i] = 42.0
    good["k"][2] = 9
    c = compare(r, good, "vulkan", device=lavapipe)
    assert c.ok and c.unchecked == 4
    assert not compare(r, good, "vulkan", device=nvidia).ok
    for buf, i, v in (("o", 0, 0.5), ("o", 7, 0.0), ("k", 3, 0)):
        bad = {k: v_.copy() for k, v_ in good.items()}
        bad[buf][i] = v
        assert [(m.buffer, m.index) for m in compare(r, bad, "webgpu").mismatches] == [(buf, i)]


def test_add_sub_chains_are_unchecked_only_where_reassociation_is_allowed():
    x = np.array([1.0, 3.3], np.float32)
    r = interpret(add_chain, [x, np.zeros(2, np.float32), np.zeros(2, np.float32)], grid=1, block=2)
    assert not r.contractible and not r.chained_anywhere
    assert list(r.chained["o"]) == [True, True] and list(r.chained["p"]) == [False, False]
    got = {"a": x, "o": (np.maximum(np.float32(2.1), x) + np.float32(25.75)).astype(np.float32),
           "p": r.buffers["p"].copy()}
    assert not np.array_equal(got["o"], r.buffers["o"])  # the reassociated sum differs (fz11000223)
    assert not compare(r, got, "llvm").ok and not compare(r, got, "vulkan").ok
    c = compare(r, got, "webgpu")  # numerics.MAY_REASSOCIATE
    assert c.ok and c.unchecked == 2
    got["p"][1] += 1
    assert [(m.buffer, m.index) for m in compare(r, got, "webgpu").mismatches] == [("p", 1)]
