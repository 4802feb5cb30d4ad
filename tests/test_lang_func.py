"""Device functions (``@pk.func``, lang/functions.py): inlined at each call, on every runtime here,
against NumPy and the IR interpreter; and the located errors of calls, returns and recursion."""
import inspect

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, Local, Shared, bool_, f32, i32
from polykern.errors import KernelSyntaxError, KernelTypeError, LaunchError, PolykernError
from polykern.ir import nodes as ir
from polykern.testing.interp import interpret
from runtimes import runnable_targets

import lang_future_kernels

TARGETS = [pytest.param(t, k, id=k) for t, k, _ in runnable_targets()]


@pk.func
def sq(x: f32) -> f32:
    return x * x


@pk.func
def poly(x: f32) -> f32:
    """x^2 + 2x + 1, through another function."""
    return sq(x) + 2.0 * x + 1.0


@pk.func
def first_below(b: Buffer[f32, "readonly"], n: i32, limit: f32) -> i32:
    for i in range(n):
        j = 0
        while j < 3:
            if b[i] < limit:
                return i
            j += 1
    return -1


@pk.func
def bump(x: i32) -> i32:
    x += 100  # the parameter is a copy: the caller's variable keeps its value
    return x


@pk.func
def store_twice(out: Buffer[i32], i: i32, v: i32):
    out[i] = v
    if v < 0:
        return
    out[i] = 2 * v


@pk.func
def odd_only(v: i32) -> i32:
    if v % 2 == 1:
        w = v * 10  # assigned only on this branch: reads as zero on the other, on every call
    return w


@pk.func
def fill_local(a: Local[i32], base: i32):
    for k in range(4):
        a[k] = base + k


@pk.func
def block_sum(t: Shared[i32], x: Buffer[i32, "readonly"]) -> i32:
    lid = pk.local_id(0)
    t[lid] = x[pk.global_id(0)]
    pk.barrier()
    s = 0
    for k in range(8):
        s += t[k]
    pk.barrier()
    return s


@pk.func
def in_range(x: Buffer[f32, "readonly"], i: i32, n: i32) -> bool_:
    return i < n and x[i] > 0.0


@pk.kernel
def fkern(n: i32, x: Buffer[f32, "readonly"], xi: Buffer[i32, "readonly"], y: Buffer[f32], z: Buffer[i32],
          w: Buffer[i32], s: Buffer[i32]):
    i = pk.global_id(0)
    t = pk.shared(i32, 8)
    total = block_sum(t, xi)
    if i < n:
        y[i] = poly(x[i]) + sq(f32(2.0))
        a = pk.local(i32, 4)
        fill_local(a, i)
        k = i
        z[i] = bump(k) + k + a[3] + first_below(x, n, x[i])
        acc = 0
        for r in range(3):
            acc += odd_only(xi[i] + r)
        w[i] = acc
        store_twice(s, i, xi[i] - 4)
        if in_range(x, i + 1, n):
            w[i] += 1000
    if i < 32:
        s[i + 32] = total


def _expected(x, xi, n):
    x = x[:n + 1]
    y = (x[:n] * x[:n] + 2 * x[:n] + 1 + 4).astype(np.float32)
    first = [next((j for j in range(n) if x[j] < x[i]), -1) for i in range(n)]
    z = np.array([(i + 100) + i + (i + 3) + first[i] for i in range(n)], np.int32)
    w = np.array([sum((v + r) * 10 for r in range(3) if (v + r) % 2 == 1) for v in xi[:n]], np.int32)
    w += np.array([1000 if i + 1 < n and x[i + 1] > 0 else 0 for i in range(n)], np.int32)
    v = xi[:n] - 4
    s = np.where(v < 0, v, 2 * v).astype(np.int32)
    sums = [int(xi[g * 8:(g + 1) * 8].sum()) for g in range(4)]
    return y, z, w, s, np.array([sums[i // 8] for i in range(32)], np.int32)


def _args(n=32):
    rng = np.random.default_rng(5)
    x = rng.uniform(-4, 4, n).astype(np.float32)
    xi = rng.integers(0, 9, n).astype(np.int32)
    return [np.int32(n - 3), x, xi, np.zeros(n, np.float32), np.zeros(n, np.int32), np.zeros(n, np.int32),
            np.zeros(2 * n, np.int32)]


def _check(bufs, args):
    n = int(args[0])
    y, z, w, s, sums = _expected(args[1], args[2], n)
    np.testing.assert_allclose(bufs["y"][:n], y, rtol=1e-6)
    assert bufs["z"][:n].tolist() == z.tolist()
    assert bufs["w"][:n].tolist() == w.tolist()
    assert bufs["s"][:n].tolist() == s.tolist()
    assert bufs["s"][32:].tolist() == sums.tolist()


def test_oracle_runs_functions():
    args = _args()
    _check(interpret(fkern, args, grid=4, block=8).buffers, args)


@pytest.mark.parametrize("target,kind", TARGETS)
def test_functions_on_runtime(target, kind):
    args = _args()
    mod = pk.build([fkern], targets=[target]).on(kind)
    mod["fkern"](*args, grid=4, block=8)
    _check(dict(zip(["n", "x", "xi", "y", "z", "w", "s"], args)), args)


def test_calls_are_inlined_and_names_are_fresh():
    f = fkern.ir
    names = list(f.locals) + list(f.arrays)
    assert len(names) == len(set(names))
    assert any(n.startswith("sq__x_") for n in f.locals)
    assert "fill_local__k_0" in f.locals and "a" in f.arrays  # the Local[] parameter aliases 'a'
    assert not any(isinstance(s, ir.Return) for s in ir.walk_stmts(f.body))


# ---------------------------------------------------------------------- errors


def _line_of(obj, text):
    lines, first = inspect.getsourcelines(obj.pyfunc if hasattr(obj, "pyfunc") else obj)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pk.func
def rec_a(x: i32) -> i32:
    return rec_b(x) + 1


@pk.func
def rec_b(x: i32) -> i32:
    return rec_a(x - 1)


@pk.func
def rec_self(x: i32) -> i32:
    if x > 0:
        return rec_self(x - 1)
    return 0


@pk.kernel
def calls_mutual(y: Buffer[i32]):
    y[0] = rec_a(3)


@pk.kernel
def calls_self(y: Buffer[i32]):
    y[0] = rec_self(3)


def test_mutual_recursion_is_refused_naming_the_cycle():
    with pytest.raises(KernelTypeError) as e:
        calls_mutual.ir
    assert "rec_a -> rec_b -> rec_a" in e.value.message
    assert e.value.loc.line == _line_of(rec_b, "return rec_a(x - 1)")
    assert f"called at {__file__}:{_line_of(calls_mutual, 'rec_a(3)')}" in e.value.message


def test_direct_recursion_is_refused():
    with pytest.raises(KernelTypeError, match=r"rec_self -> rec_self") as e:
        calls_self.ir
    assert e.value.loc.line == _line_of(rec_self, "return rec_self(x - 1)")


@pk.func
def bad_inside(x: f32) -> f32:
    k = 1
    return x + k


@pk.kernel
def calls_bad_inside(y: Buffer[f32]):
    y[0] = bad_inside(y[0])


def test_error_inside_a_function_points_into_it_and_names_the_call():
    with pytest.raises(KernelTypeError) as e:
        calls_bad_inside.ir
    assert e.value.loc.file == __file__
    assert e.value.loc.line == _line_of(bad_inside, "return x + k")
    assert "mismatched operand types f32 and i32" in e.value.message
    call = _line_of(calls_bad_inside, "bad_inside(y[0])")
    assert f"in device function 'bad_inside', called at {__file__}:{call}:" in e.value.message


@pk.kernel
def wrong_count(y: Buffer[f32]):
    y[0] = sq(y[0], 2.0)


@pk.kernel
def wrong_type(y: Buffer[f32]):
    k = 3
    y[0] = sq(k)


@pk.kernel
def wrong_buffer(y: Buffer[i32]):
    y[0] = first_below(y, 1, 0.0)


@pk.kernel
def void_as_value(y: Buffer[i32]):
    y[0] = store_twice(y, 0, 1)


@pk.kernel
def shared_for_local(y: Buffer[i32]):
    t = pk.shared(i32, 4)
    fill_local(t, 1)
    y[0] = t[0]


@pytest.mark.parametrize("kern,text,where", [
    (wrong_count, "sq() takes 1 argument (x), got 2", "sq(y[0], 2.0)"),
    (wrong_type, "argument 'x' of sq(): expected f32, got i32", "sq(k)"),
    (wrong_buffer, "argument 'b' of first_below() must be a Buffer[f32, readonly], got Buffer[i32] 'y'",
     "first_below(y"),
    (shared_for_local, "argument 'a' of fill_local() must be a Local[i32] array, got shared[i32 x 4] 't'",
     "fill_local(t, 1)"),
])
def test_call_mismatches_are_located_at_the_call(kern, text, where):
    with pytest.raises(KernelTypeError) as e:
        kern.ir
    assert text in e.value.message
    assert e.value.loc.line == _line_of(kern, where)
    assert "in device function" not in e.value.message


def test_void_function_used_as_a_value():
    with pytest.raises(KernelTypeError, match="'store_twice' returns nothing"):
        void_as_value.ir


@pk.func
def no_final_return(x: i32) -> i32:
    if x > 0:
        return 1


@pk.func
def value_from_void(x: i32):
    return x


@pk.func
def writes_readonly(b: Buffer[f32]):
    b[0] = 1.0


@pk.kernel
def k_no_final_return(y: Buffer[i32]):
    y[0] = no_final_return(y[0])


@pk.kernel
def k_value_from_void(y: Buffer[i32]):
    value_from_void(y[0])


@pk.kernel
def k_writes_readonly(x: Buffer[f32, "readonly"]):
    writes_readonly(x)


@pytest.mark.parametrize("kern,func,text,where", [
    (k_no_final_return, no_final_return, "can reach its end without 'return'", "def no_final_return"),
    (k_value_from_void, value_from_void, "has no return type annotation", "return x"),
    (k_writes_readonly, writes_readonly, "cannot write to readonly Buffer 'b'", "b[0] = 1.0"),
])
def test_errors_in_functions_are_located_in_them(kern, func, text, where):
    with pytest.raises(KernelTypeError) as e:
        kern.ir
    assert text in e.value.message
    assert e.value.loc.line == _line_of(func, where)
    assert "called at" in e.value.message


@pk.func
def synced(t: Shared[f32]) -> f32:
    pk.barrier()
    return t[0]


@pk.kernel
def barrier_in_branch(y: Buffer[f32]):
    t = pk.shared(f32, 4)
    if pk.local_id(0) < 2:
        y[0] = synced(t)


def test_barrier_in_a_function_under_a_non_uniform_branch_is_refused():
    with pytest.raises(KernelTypeError) as e:
        barrier_in_branch.ir
    assert "barrier() is reached only by some work-items" in e.value.message
    assert e.value.loc.line == _line_of(synced, "pk.barrier()")
    assert f"in a device function called at {__file__}:{_line_of(barrier_in_branch, 'synced(t)')}" \
        in e.value.message


def test_calling_a_device_function_from_python_is_an_error():
    with pytest.raises(PolykernError, match="device function 'sq' can only be called inside"):
        sq(1.0)


@pk.func
def kw_user(x: f32) -> f32:
    return x


@pk.kernel
def keyword_call(y: Buffer[f32]):
    y[0] = kw_user(x=y[0])


def test_keyword_arguments_are_refused():
    with pytest.raises(KernelSyntaxError, match="keyword arguments"):
        keyword_call.ir


# ---------------------------------------------------------------------- bounds checking sees calls


@pk.func
def read_at(x: Buffer[f32, "readonly"], i: i32) -> f32:
    return x[i + 1]


@pk.kernel
def reads_past(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = read_at(x, i)


@pytest.mark.parametrize("target,kind", TARGETS)
def test_bounds_check_names_the_access_inside_the_function(target, kind):
    mod = pk.build([reads_past], targets=[target], bounds_check=True).on(kind)
    with pytest.raises(LaunchError) as e:
        mod["reads_past"](8, np.ones(8, np.float32), np.zeros(8, np.float32), grid=1, block=8)
    assert f"test_lang_func.py:{_line_of(read_at, 'return x[i + 1]')}:12: return x[i + 1]" in str(e.value)


# ---------------------------------------------------------------------- calls in conditions, other modules


@pk.func
def count_call(c: Buffer[i32]) -> i32:
    return pk.atomic_add(c, 0, 1)


@pk.func
def below(x: Buffer[f32, "readonly"], j: i32, limit: f32) -> bool_:
    return x[j] < limit


@pk.kernel
def conditions(n: i32, x: Buffer[f32, "readonly"], c: Buffer[i32], y: Buffer[i32], z: Buffer[f32]):
    i = pk.global_id(0)
    if i < 3 and count_call(c) >= 0:  # the call runs only where i < 3 (short-circuit)
        y[i] = 1
    j = 0
    while j < n and below(x, j, 2.0):  # the call is evaluated before every iteration
        j += 1
    y[i + 8] = j
    z[i] = lang_future_kernels.twice(f32, x[i]) if i < n else f32(-1.0)  # a function of another module


def test_calls_in_conditions_and_from_another_module():
    n, x = 6, np.array([0, 1, 1.5, 3, 0, 0, 0, 0], np.float32)
    args = [np.int32(n), x, np.zeros(1, np.int32), np.zeros(16, np.int32), np.zeros(8, np.float32)]
    for target, kind in [(p.values[0], p.values[1]) for p in TARGETS] + [(None, "oracle")]:
        a = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        if target is None:
            out = interpret(conditions, a, grid=1, block=8).buffers
            c, y, z = out["c"], out["y"], out["z"]
        else:
            pk.build([conditions], targets=[target]).on(kind)["conditions"](*a, grid=1, block=8)
            c, y, z = a[2], a[3], a[4]
        assert c.tolist() == [3], kind
        assert y.tolist() == [1, 1, 1, 0, 0, 0, 0, 0] + [3] * 8, kind
        assert z.tolist() == [0, 2, 3, 6, 0, 0, -1, -1], kind


@pk.func
def marks(v: i32) -> i32:
    a = pk.local(i32, 4)  # zero on every call, like a kernel's pk.local array
    if v > 0:
        a[v & 3] = v
    return a[0] + a[1] + a[2] + a[3]


@pk.kernel
def calls_in_a_loop(y: Buffer[i32]):
    s = 0
    for r in range(4):
        s = s * 100 + marks(r)
    y[pk.global_id(0)] = s


@pytest.mark.parametrize("target,kind", TARGETS)
def test_a_local_array_of_a_function_starts_at_zero_on_every_call(target, kind):
    y = np.zeros(2, np.int32)
    pk.build([calls_in_a_loop], targets=[target]).on(kind)["calls_in_a_loop"](y, grid=1, block=2)
    assert y.tolist() == [10203, 10203]  # 0, 1, 2, 3: not 0, 1, 3, 6
    assert interpret(calls_in_a_loop, [np.zeros(2, np.int32)], grid=1, block=2).buffers["y"].tolist() == y.tolist()
