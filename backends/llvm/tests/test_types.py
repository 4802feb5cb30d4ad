"""Every scalar type through every IR operator, cast and math builtin on the CPU, against NumPy.

Kernels are built by hand (one per type, many outputs each) so the whole matrix costs a handful
of LLVM compilations. References implement the IR's semantics (nodes.py): C integer division and
remainder, shift amounts modulo the width, float->int conversion saturating (NaN -> 0), f16
arithmetic rounded after every operation.
"""
from __future__ import annotations

import numpy as np
import pytest
from irk import ALL_TYPES, FLOAT_TYPES, INT_TYPES, N, buf, compile_llvm, const, elementwise, load, scalar, store, var

from polykern.ir.types import bool_, f16, f32, f64, i32, i64, u64

RNG = np.random.default_rng(1234)
N_ELEMS = 301  # not a multiple of the block: the tail work-items must do nothing


def int_values(t, n=N_ELEMS):
    info = np.iinfo(t.numpy)
    edge = [0, 1, -1, 2, 7, -7, 127, -128, 255, 256, info.min, info.max, info.min + 1, info.max - 1]
    vals = [v for v in edge if info.min <= v <= info.max]
    rand = RNG.integers(info.min, info.max, size=n - len(vals), dtype=t.numpy, endpoint=True)
    return np.concatenate([np.array(vals, dtype=t.numpy), rand])


def float_values(t, n=N_ELEMS, special=True):
    edge = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 3.5, 1e-3, 100.25, 65504.0, 6e-8, 1e-30, 1e30, 123456.789]
    if special:
        edge += [np.inf, -np.inf, np.nan]
    rand = RNG.standard_normal(n - len(edge)) * RNG.choice([1e-2, 1.0, 100.0, 1e4], n - len(edge))
    with np.errstate(over="ignore"):
        return np.concatenate([np.array(edge), rand]).astype(t.numpy)


def values(t, n=N_ELEMS):
    if t.is_bool:
        return RNG.integers(0, 2, n).astype(bool)
    return float_values(t, n) if t.is_float else int_values(t, n)


# ---------------------------------------------------------------- binary operators

CMP = ("lt", "le", "gt", "ge", "eq", "ne")


def ops_for(t):
    if t.is_bool:
        return ("and", "or", "xor", "land", "lor") + CMP
    if t.is_float:
        return ("add", "sub", "mul", "div", "floordiv", "mod") + CMP
    return ("add", "sub", "mul", "div", "floordiv", "mod", "and", "or", "xor", "shl", "shr") + CMP


def binop_kernel(t):
    n = scalar("n", i32)
    a, b = buf("a", t, True), buf("b", t, True)
    outs = [buf(f"o_{op}", bool_ if op in CMP or t.is_bool else t) for op in ops_for(t)]

    def body(i):
        return [store(o, i, N.BinOp(op, load(a, i), load(b, i))) for o, op in zip(outs, ops_for(t))]

    return elementwise(f"binop_{t}", n, [a, b] + outs, body)


def c_div(a, b, t):
    q = [(abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(a.tolist(), b.tolist())]
    return np.array([x & ((1 << t.bits) - 1) for x in q], dtype=np.uint64).astype(t.numpy) if t.code == 1 else \
        np.array([((x + (1 << (t.bits - 1))) % (1 << t.bits)) - (1 << (t.bits - 1)) for x in q]).astype(t.numpy)


def reference_binop(op, a, b, t):
    with np.errstate(all="ignore"):
        if op in CMP:
            return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]
        if t.is_bool:
            return {"and": a & b, "or": a | b, "xor": a ^ b, "land": a & b, "lor": a | b}[op]
        if t.is_float:
            return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "floordiv": np.floor(a / b),
                    "mod": np.fmod(a, b)}[op].astype(t.numpy)
        if op in ("div", "floordiv"):
            return c_div(a, b, t)
        if op == "mod":
            return (a - c_div(a, b, t) * b).astype(t.numpy)
        if op in ("shl", "shr"):
            amount = (b & (t.bits - 1)).astype(t.numpy)
            return (a << amount) if op == "shl" else (a >> amount)
        return {"add": a + b, "sub": a - b, "mul": a * b, "and": a & b, "or": a | b, "xor": a ^ b}[op]


@pytest.fixture(scope="module")
def binop_module():
    return compile_llvm([binop_kernel(t) for t in ALL_TYPES])


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_binary_operators(binop_module, t):
    a, b = values(t), values(t)
    if t.is_int:
        b[b == 0] = 3  # x/0 is undefined
        if t.code == 0:  # INT_MIN / -1 overflows: covered by test_division_never_traps
            b[(a == np.iinfo(t.numpy).min) & (b == -1)] = 5
    ops = ops_for(t)
    outs = [np.zeros(N_ELEMS, dtype=bool if op in CMP or t.is_bool else t.numpy) for op in ops]
    binop_module[f"binop_{t}"](N_ELEMS, a, b, *outs, grid=(N_ELEMS + 63) // 64, block=64)
    for op, got in zip(ops, outs):
        want = reference_binop(op, a, b, t)
        np.testing.assert_array_equal(got, want, err_msg=f"{t} {op}")


def test_division_never_traps():
    """x/0 and INT_MIN/-1 are undefined in the IR but must not kill the process on x86 (SIGFPE)."""
    outs = []
    fns = []
    for t in (i32, i64):
        n = scalar("n", i32)
        a, b, q, r = buf("a", t), buf("b", t), buf("q", t), buf("r", t)
        fns.append(elementwise(f"divs_{t}", n, [a, b, q, r], lambda i, a=a, b=b, q=q, r=r: [
            store(q, i, N.BinOp("floordiv", load(a, i), load(b, i))),
            store(r, i, N.BinOp("mod", load(a, i), load(b, i)))]))
    mod = compile_llvm(fns)
    for t in (i32, i64):
        mn = np.iinfo(t.numpy).min
        a = np.array([mn, 7, mn, 5], dtype=t.numpy)
        b = np.array([-1, 0, 0, 2], dtype=t.numpy)
        q, r = np.zeros(4, t.numpy), np.zeros(4, t.numpy)
        mod[f"divs_{t}"](4, a, b, q, r, grid=1, block=4)
        assert q[0] == mn and r[0] == 0  # wraps, as two's complement hardware does
        assert q[3] == 2 and r[3] == 1
        outs.append(q)
    assert len(outs) == 2


# ---------------------------------------------------------------- unary operators, select, scalars


def unary_kernel(t):
    n = scalar("n", i32)
    a, c = buf("a", t, True), buf("c", bool_, True)
    ops = unary_ops(t)
    outs = [buf(f"o_{op}", t) for op in ops]
    sel = buf("o_select", t)

    def body(i):
        out = [store(o, i, N.UnaryOp(op, load(a, i))) for o, op in zip(outs, ops)]
        out.append(store(sel, i, N.Select(load(c, i), load(a, i), const(1, t))))
        return out

    return elementwise(f"unary_{t}", n, [a, c] + outs + [sel], body)


def unary_ops(t):
    if t.is_bool:
        return ("not",)
    if t.is_float:
        return ("neg",)
    return ("neg", "invert")


@pytest.fixture(scope="module")
def unary_module():
    return compile_llvm([unary_kernel(t) for t in ALL_TYPES])


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_unary_and_select(unary_module, t):
    a, c = values(t), RNG.integers(0, 2, N_ELEMS).astype(bool)
    outs = [np.zeros(N_ELEMS, t.numpy) for _ in unary_ops(t)]
    sel = np.zeros(N_ELEMS, t.numpy)
    unary_module[f"unary_{t}"](N_ELEMS, a, c, *outs, sel, grid=5, block=64)
    with np.errstate(all="ignore"):
        for op, got in zip(unary_ops(t), outs):
            want = {"not": lambda x: ~x, "neg": lambda x: -x, "invert": lambda x: ~x}[op](a)
            np.testing.assert_array_equal(got, want, err_msg=f"{t} {op}")
    np.testing.assert_array_equal(sel, np.where(c, a, t.numpy.type(1)))


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_scalar_parameters_of_every_type(t):
    s = scalar("s", t)
    out = buf("out", t)
    fn = N.Function(f"param_{t}", [s, out], [store(out, const(0, i32), var("s", t))], {})
    mod = compile_llvm([fn])
    for v in values(t, 20)[:20]:
        if t.is_float and not np.isfinite(v):
            continue
        o = np.zeros(1, t.numpy)
        mod[f"param_{t}"](v.item() if t.is_bool else v, o, grid=1, block=1)
        np.testing.assert_array_equal(o[0], v)


# ---------------------------------------------------------------- casts


def cast_kernel(src):
    n = scalar("n", i32)
    a = buf("a", src, True)
    outs = [buf(f"o_{d}", d) for d in ALL_TYPES]
    return elementwise(f"cast_from_{src}", n, [a] + outs,
                       lambda i: [store(o, i, N.Cast(o.type.elem, load(a, i))) for o in outs])


def reference_cast(a, src, dst):
    if dst.is_bool:
        return a != 0  # NaN != 0 is true, as in C
    if src.is_float and dst.is_int:
        info = np.iinfo(dst.numpy)
        x = np.trunc(a.astype(np.float64))
        x = np.where(np.isnan(x), 0, x)
        out = np.empty(a.shape, dtype=object)
        for k, v in enumerate(x.tolist()):
            out[k] = min(max(int(v) if np.isfinite(v) else (info.max if v > 0 else info.min), info.min), info.max)
        return out.astype(dst.numpy)
    with np.errstate(all="ignore"):
        return a.astype(dst.numpy)


@pytest.fixture(scope="module")
def cast_module():
    return compile_llvm([cast_kernel(t) for t in ALL_TYPES])


@pytest.mark.parametrize("src", ALL_TYPES, ids=str)
def test_casts_between_every_pair(cast_module, src):
    a = values(src)
    outs = [np.zeros(N_ELEMS, d.numpy) for d in ALL_TYPES]
    cast_module[f"cast_from_{src}"](N_ELEMS, a, *outs, grid=3, block=128)
    for d, got in zip(ALL_TYPES, outs):
        np.testing.assert_array_equal(got, reference_cast(a, src, d), err_msg=f"{src} -> {d}")


# ---------------------------------------------------------------- f16 conversions, exhaustively


def test_f16_conversions_are_exact():
    """The soft conversion routines (x86 without F16C) against NumPy, bit for bit: all 65536 halves
    widened; float and double values narrowed (normals, subnormals, ties, overflow, NaN)."""
    n = scalar("n", i32)
    h, f, d = buf("h", f16, True), buf("f", f32, True), buf("d", f64, True)
    hf, hd, fh, dh = buf("hf", f32), buf("hd", f64), buf("fh", f16), buf("dh", f16)
    fn = elementwise("f16conv", n, [h, f, d, hf, hd, fh, dh], lambda i: [
        store(hf, i, N.Cast(f32, load(h, i))), store(hd, i, N.Cast(f64, load(h, i))),
        store(fh, i, N.Cast(f16, load(f, i))), store(dh, i, N.Cast(f16, load(d, i)))])
    mod = compile_llvm([fn])
    with np.errstate(all="ignore"):
        _f16_roundtrip(mod)


def _f16_roundtrip(mod):
    count = 1 << 16
    halves = np.arange(count, dtype=np.uint16).view(np.float16)
    wide = halves.astype(np.float64)
    # Narrowing inputs: every half widened, the midpoints between neighbouring halves (ties to
    # even), points just beside them, and random bit patterns.
    mids = (wide[:-1] + wide[1:]) / 2
    mids = mids[np.isfinite(mids)]
    near = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])
    rnd = RNG.integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32).view(np.float32).astype(np.float64)
    pool = np.concatenate([wide, near, rnd, [65520.0, 65519.99, 1e300, -1e300, 2.0 ** -25, 2.0 ** -26]])
    pool = pool[RNG.permutation(len(pool))][:count]
    f32s = pool.astype(np.float32)
    hf, hd = np.zeros(count, np.float32), np.zeros(count, np.float64)
    fh, dh = np.zeros(count, np.float16), np.zeros(count, np.float16)
    mod["f16conv"](count, halves, f32s, pool, hf, hd, fh, dh, grid=count // 256, block=256)

    def same(got, want):
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))

    same(hf, halves.astype(np.float32))
    same(hd, halves.astype(np.float64))
    same(fh, f32s.astype(np.float16))
    same(dh, pool.astype(np.float16))


# ---------------------------------------------------------------- math builtins


UNARY_MATH = ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "abs", "floor", "ceil")
BINARY_MATH = ("pow", "min", "max")


def math_kernel(t):
    n = scalar("n", i32)
    a, b, c = buf("a", t, True), buf("b", t, True), buf("c", t, True)
    funcs = math_funcs(t)
    outs = [buf(f"o_{f}", t) for f in funcs]

    def body(i):
        args = {1: [load(a, i)], 2: [load(a, i), load(b, i)], 3: [load(a, i), load(b, i), load(c, i)]}
        return [store(o, i, N.Call(f, args[arity(f)])) for o, f in zip(outs, funcs)]

    return elementwise(f"math_{t}", n, [a, b, c] + outs, body)


def arity(f):
    return 1 if f in UNARY_MATH else 3 if f == "fma" else 2


def math_funcs(t):
    if t.is_float:
        return UNARY_MATH + BINARY_MATH + ("fma",)
    return ("abs", "min", "max")


def reference_math(f, a, b, c, t):
    wide = np.float64 if t.bits == 64 else np.float32
    x, y, z = (v.astype(wide) if t.is_float else v for v in (a, b, c))
    with np.errstate(all="ignore"):
        r = {"sqrt": lambda: np.sqrt(x), "rsqrt": lambda: 1 / np.sqrt(x), "exp": lambda: np.exp(x),
             "exp2": lambda: np.exp2(x), "log": lambda: np.log(x), "log2": lambda: np.log2(x),
             "sin": lambda: np.sin(x), "cos": lambda: np.cos(x), "tanh": lambda: np.tanh(x),
             "abs": lambda: np.abs(x), "floor": lambda: np.floor(x), "ceil": lambda: np.ceil(x),
             "pow": lambda: np.power(x, y), "min": lambda: np.fmin(x, y), "max": lambda: np.fmax(x, y),
             "fma": lambda: (x.astype(np.float64) * y + z) if t.bits < 64 else x * y + z}[f]()
        return r.astype(t.numpy)


@pytest.fixture(scope="module")
def math_module():
    return compile_llvm([math_kernel(t) for t in FLOAT_TYPES + INT_TYPES])


@pytest.mark.parametrize("t", FLOAT_TYPES + INT_TYPES, ids=str)
def test_math_builtins(math_module, t):
    if t.is_float:
        a = float_values(t, special=False)
        a = np.where(np.abs(a) > 80, a / 1000, a).astype(t.numpy)  # keep exp() finite
        b = (RNG.random(N_ELEMS) * 4 - 2).astype(t.numpy)
        c = float_values(t, special=False)
    else:
        a, b, c = int_values(t), int_values(t), int_values(t)
        if t.code == 0:
            a[a == np.iinfo(t.numpy).min] = 0  # abs(INT_MIN) overflows
    funcs = math_funcs(t)
    outs = [np.zeros(N_ELEMS, t.numpy) for _ in funcs]
    math_module[f"math_{t}"](N_ELEMS, a, b, c, *outs, grid=(N_ELEMS + 31) // 32, block=32)
    exact = ("abs", "floor", "ceil", "min", "max", "sqrt")
    for f, got in zip(funcs, outs):
        want = reference_math(f, a, b, c, t)
        if not t.is_float or f in exact:
            np.testing.assert_array_equal(got, want, err_msg=f"{t} {f}")
        else:
            rtol = {16: 2e-3, 32: 2e-6, 64: 1e-14}[t.bits]
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True, err_msg=f"{t} {f}")


# ---------------------------------------------------------------- bool and narrow memory


def test_bool_buffers_and_narrow_stores():
    n = scalar("n", i32)
    a, o8, ob = buf("a", bool_, True), buf("o8", f16), buf("ob", bool_)
    fn = elementwise("boolmem", n, [a, o8, ob], lambda i: [
        store(ob, i, N.UnaryOp("not", load(a, i))),
        store(o8, i, N.Cast(f16, load(a, i)))])
    mod = compile_llvm([fn])
    a = RNG.integers(0, 2, 77).astype(bool)
    o8, ob = np.full(77, 7, np.float16), np.zeros(77, bool)
    mod["boolmem"](77, a, o8, ob, grid=2, block=64)
    np.testing.assert_array_equal(ob, ~a)
    np.testing.assert_array_equal(o8, a.astype(np.float16))
    assert ob.view(np.uint8).max() <= 1  # stored as 0/1 bytes


def test_u64_constants_and_wide_indices():
    n = scalar("n", i32)
    o = buf("o", u64)
    big = (1 << 64) - 5
    fn = elementwise("u64c", n, [o], lambda i: [
        store(o, N.Cast(i64, i), N.BinOp("add", const(big, u64), N.Cast(u64, i)))])
    mod = compile_llvm([fn])
    out = np.zeros(10, np.uint64)
    mod["u64c"](10, out, grid=1, block=16)
    np.testing.assert_array_equal(out, (np.arange(10, dtype=np.uint64) + np.uint64(big)))
