"""Conformance kernels, part 1: elementwise arithmetic per dtype, math builtins, integer semantics,
casts, control flow, local arrays, launch geometry. Each case checks its result against NumPy."""

import numpy as np

import polykern as pk
from polykern import Buffer, bool_, f16, f32, f64, i8, i16, i32, i64, numerics, u8, u16, u32, u64
from polykern.testing.fuzzcase import numerics_backend

from .case import Case, launch_1d


# ---------------------------------------------------------------- elementwise in every dtype

def _make_elementwise(T):
    @pk.kernel
    def elementwise(n: i32, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], c: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            c[i] = a[i] * b[i] + a[i] - b[i]

    return elementwise


def _elementwise_case(T, feature):
    k = _make_elementwise(T)

    def run(mod, rng):
        n = 1003
        dt = T.numpy
        if T.is_float:
            a = rng.uniform(-4, 4, n).astype(dt)
            b = rng.uniform(-4, 4, n).astype(dt)
        else:
            info = np.iinfo(dt)
            a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
            b = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        c = np.zeros(n, dt)
        launch_1d(mod, "elementwise", n, [n, a, b, c], block=64)
        with np.errstate(over="ignore"):
            expect = a * b + a - b
        if T.is_float:
            tol = 2e-3 if T.bits == 16 else 1e-5
            np.testing.assert_allclose(c, expect, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(c, expect)  # integers wrap like NumPy's

    feats = frozenset([feature]) if feature else frozenset()
    return Case(f"elementwise_{T.name}", [k], run, feats)


ELEMENTWISE = [
    _elementwise_case(f32, None), _elementwise_case(i32, None), _elementwise_case(u32, None),
    _elementwise_case(f64, "f64"), _elementwise_case(f16, "f16"), _elementwise_case(i64, "i64"),
    _elementwise_case(u64, "i64"), _elementwise_case(i8, "i8"), _elementwise_case(u8, "i8"),
    _elementwise_case(i16, "i16"), _elementwise_case(u16, "i16"),
]

# ---------------------------------------------------------------- math builtins

# Tolerances are the language's promises for the module's backend (polykern.numerics, one table): those its
# kind declares it keeps (Capabilities.numerics).
def _ulp_check(name, got, expect, backend, args):
    p = numerics.promise(name, expect.dtype.name.replace("float", "f"), numerics_backend(backend))
    ok = numerics.agrees(p, name, expect.dtype.name.replace("float", "f"), got, expect, args)
    if not ok.all():
        i = int(np.argmax(~ok))
        raise AssertionError(f"{name}: {int((~ok).sum())} results outside {p} on {backend}; "
                             f"first at {i}: got {got[i]!r}, expected {expect[i]!r}")


def _exact_fma(a, b, c):
    """a*b+c rounded once to a's dtype (exact rational arithmetic, so f64 is right too)."""
    from fractions import Fraction

    out = [float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))) for x, y, z in zip(a, b, c)]
    return np.array(out, dtype=np.float64).astype(a.dtype)


def _make_math(T):
    @pk.kernel
    def math_funcs(n: i32, x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], out: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            a = x[i]
            b = y[i]
            out[i * 16 + 0] = pk.sqrt(a)
            out[i * 16 + 1] = pk.rsqrt(a)
            out[i * 16 + 2] = pk.exp(b)
            out[i * 16 + 3] = pk.exp2(b)
            out[i * 16 + 4] = pk.log(a)
            out[i * 16 + 5] = pk.log2(a)
            out[i * 16 + 6] = pk.sin(b)
            out[i * 16 + 7] = pk.cos(b)
            out[i * 16 + 8] = pk.tanh(b)
            out[i * 16 + 9] = pk.pow(a, b)
            out[i * 16 + 10] = pk.fma(a, b, a)
            out[i * 16 + 11] = pk.abs(b)
            out[i * 16 + 12] = pk.min(a, b)
            out[i * 16 + 13] = pk.max(a, b)
            out[i * 16 + 14] = pk.floor(b)
            out[i * 16 + 15] = pk.ceil(b)

    return math_funcs


_MATH_NAMES = ["sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "fma", "abs",
               "min", "max", "floor", "ceil"]


def _math_case(T, feature):
    k = _make_math(T)

    def run(mod, rng):
        n = 257
        dt = T.numpy
        x = rng.uniform(0.125, 8.0, n).astype(dt)
        y = rng.uniform(-3.0, 3.0, n).astype(dt)
        out = np.zeros(n * 16, dt)
        launch_1d(mod, "math_funcs", n, [n, x, y, out], block=32)
        out = out.reshape(n, 16)
        xd, yd = x.astype(np.float64), y.astype(np.float64)
        ref = {
            "sqrt": np.sqrt(xd), "rsqrt": 1 / np.sqrt(xd), "exp": np.exp(yd), "exp2": np.exp2(yd),
            "log": np.log(xd), "log2": np.log2(xd), "sin": np.sin(yd), "cos": np.cos(yd), "tanh": np.tanh(yd),
            "pow": np.power(xd, yd), "fma": _exact_fma(x, y, x), "abs": np.abs(yd), "min": np.minimum(xd, yd),
            "max": np.maximum(xd, yd), "floor": np.floor(yd), "ceil": np.ceil(yd),
        }
        args = {"sqrt": (x,), "rsqrt": (x,), "log": (x,), "log2": (x,), "pow": (x, y), "fma": (x, y, x),
                "min": (x, y), "max": (x, y)}
        for j, name in enumerate(_MATH_NAMES):
            _ulp_check(name, out[:, j], ref[name].astype(dt), mod.kind, args.get(name, (y,)))

    return Case(f"math_{T.name}", [k], run, frozenset([feature]) if feature else frozenset())


MATH = [_math_case(f32, None), _math_case(f64, "f64")]

# ---------------------------------------------------------------- integer semantics


def _make_int_ops(T):
    @pk.kernel
    def int_ops(n: i32, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], out: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            x = a[i]
            y = b[i]
            out[i * 10 + 0] = x + y
            out[i * 10 + 1] = x - y
            out[i * 10 + 2] = x * y
            out[i * 10 + 3] = x // y
            out[i * 10 + 4] = x % y
            out[i * 10 + 5] = (x & y) | (x ^ 85)
            out[i * 10 + 6] = x << y
            out[i * 10 + 7] = x >> y
            out[i * 10 + 8] = ~x
            out[i * 10 + 9] = pk.max(x, y) - pk.min(x, y)

    return int_ops


def _c_divmod(x, y):
    """C division (truncating) and remainder, exact for 64-bit values."""
    q = np.array([int(abs(int(p)) // abs(int(r))) * (1 if (int(p) >= 0) == (int(r) >= 0) else -1)
                  for p, r in zip(x, y)], dtype=object)
    rem = np.array([int(p) - int(qq) * int(r) for p, r, qq in zip(x, y, q)], dtype=object)
    return q, rem


def _int_case(T, feature):
    k = _make_int_ops(T)

    def run(mod, rng):
        n = 301
        dt = T.numpy
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        b = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        b[b == 0] = 7
        if T.code == 0:  # avoid the one overflowing division, MIN // -1 (undefined in C)
            b[(a == info.min) & (b == -1)] = 3
        a[:4] = np.array([-7, 7, -7, 7] if T.code == 0 else [7, 9, 250, 1], dtype=dt)
        b[:4] = np.array([2, -2, -2, 2] if T.code == 0 else [2, 4, 3, 1], dtype=dt)
        out = np.zeros(n * 10, dt)
        launch_1d(mod, "int_ops", n, [n, a, b, out], block=64)
        out = out.reshape(n, 10)
        bits = T.bits
        sh = (b.astype(np.int64) & (bits - 1)).astype(dt)
        q, r = _c_divmod(a, b)
        with np.errstate(over="ignore"):
            expect = np.stack([
                a + b, a - b, a * b, q.astype(np.int64).astype(dt) if T.code == 0 else (a // b),
                r.astype(np.int64).astype(dt) if T.code == 0 else (a % b), (a & b) | (a ^ dt.type(85)),
                np.left_shift(a, sh), np.right_shift(a, sh), ~a, np.maximum(a, b) - np.minimum(a, b),
            ], axis=1).astype(dt)
        for j, name in enumerate(["+", "-", "*", "//", "%", "&|^", "<<", ">>", "~", "max-min"]):
            np.testing.assert_array_equal(out[:, j], expect[:, j], err_msg=f"{T} {name}")

    return Case(f"int_ops_{T.name}", [k], run, frozenset([feature]) if feature else frozenset())


INT_OPS = [_int_case(i32, None), _int_case(u32, None), _int_case(i64, "i64")]

# ---------------------------------------------------------------- casts


@pk.kernel
def casts(n: i32, f: Buffer[f32, "readonly"], i: Buffer[i32, "readonly"], out_i: Buffer[i32],
          out_f: Buffer[f32], out_u: Buffer[u32]):
    g = pk.global_id(0)
    if g < n:
        out_i[g * 3 + 0] = i32(f[g])            # truncation toward zero
        out_i[g * 3 + 1] = i32(u8(i[g] & 255))   # narrowing then widening
        out_i[g * 3 + 2] = i32(f[g] > 0.0)       # bool -> int
        out_f[g * 2 + 0] = f32(i[g])
        out_f[g * 2 + 1] = f32(f16(f[g]))
        out_u[g] = u32(i[g])                     # reinterpretation modulo 2**32


def _run_casts(mod, rng):
    n = 200
    f = rng.uniform(-1000, 1000, n).astype(np.float32)
    i = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32)
    out_i, out_f, out_u = np.zeros(n * 3, np.int32), np.zeros(n * 2, np.float32), np.zeros(n, np.uint32)
    launch_1d(mod, "casts", n, [n, f, i, out_i, out_f, out_u], block=64)
    out_i, out_f = out_i.reshape(n, 3), out_f.reshape(n, 2)
    np.testing.assert_array_equal(out_i[:, 0], np.trunc(f).astype(np.int32))
    np.testing.assert_array_equal(out_i[:, 1], (i & 255).astype(np.int32))
    np.testing.assert_array_equal(out_i[:, 2], (f > 0).astype(np.int32))
    np.testing.assert_array_equal(out_f[:, 0], i.astype(np.float32))
    np.testing.assert_array_equal(out_f[:, 1], f.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(out_u, i.astype(np.uint32))


CASTS = Case("casts", [casts], _run_casts, frozenset(["f16", "i8"]))

# ---------------------------------------------------------------- control flow


@pk.kernel
def control_flow(n: i32, x: Buffer[i32, "readonly"], out: Buffer[i32]):
    i = pk.global_id(0)
    if i >= n:
        return
    v = x[i]
    steps = 0
    while v != 1 and steps < 1000:          # Collatz
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    acc = 0
    for a in range(10):
        if a == 7:
            break
        if a % 3 == 0:
            continue
        for b in range(a, 0, -2):
            acc += b
    if steps > 100:
        kind = 3
    elif steps > 50:
        kind = 2
    elif steps > 10:
        kind = 1
    else:
        kind = 0
    out[i * 3 + 0] = steps
    out[i * 3 + 1] = acc
    out[i * 3 + 2] = kind


def _collatz(v):
    s = 0
    while v != 1 and s < 1000:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        s += 1
    return s


def _run_control(mod, rng):
    n = 517
    x = rng.integers(1, 10_000, n, dtype=np.int32)
    out = np.zeros(n * 3, np.int32)
    launch_1d(mod, "control_flow", n, [n, x, out], block=64)
    out = out.reshape(n, 3)
    acc = sum(b for a in range(7) if a % 3 for b in range(a, 0, -2))
    steps = np.array([_collatz(int(v)) for v in x])
    kind = np.select([steps > 100, steps > 50, steps > 10], [3, 2, 1], 0)
    np.testing.assert_array_equal(out[:, 0], steps)
    np.testing.assert_array_equal(out[:, 1], acc)
    np.testing.assert_array_equal(out[:, 2], kind)


CONTROL = Case("control_flow", [control_flow], _run_control)


@pk.kernel
def logic(n: i32, x: Buffer[f32, "readonly"], flags: Buffer[bool_], out: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        # short-circuit: x[i + 1] is read only when i + 1 < n
        rising = i + 1 < n and x[i + 1] > x[i]
        flags[i] = rising or not (x[i] >= 0.0)
        out[i] = pk.select(rising, 1, -1) + (2 if flags[i] else 0)


def _run_logic(mod, rng):
    n = 333
    x = rng.standard_normal(n).astype(np.float32)
    flags = np.zeros(n, np.bool_)
    out = np.zeros(n, np.int32)
    launch_1d(mod, "logic", n, [n, x, flags, out], block=32)
    rising = np.zeros(n, bool)
    rising[:-1] = x[1:] > x[:-1]
    expect_flags = rising | ~(x >= 0)
    np.testing.assert_array_equal(flags, expect_flags)
    np.testing.assert_array_equal(out, np.where(rising, 1, -1) + np.where(expect_flags, 2, 0))


LOGIC = Case("logic_and_bool", [logic], _run_logic, frozenset(["bool_buffer"]))

# ---------------------------------------------------------------- private arrays


@pk.kernel
def sort8(n: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    i = pk.global_id(0)
    if i >= n:
        return
    v = pk.local(f32, 8)
    for k in range(8):
        v[k] = x[i * 8 + k]
    for a in range(8):
        for b in range(7 - a):
            if v[b] > v[b + 1]:
                t = v[b]
                v[b] = v[b + 1]
                v[b + 1] = t
    for k in range(8):
        out[i * 8 + k] = v[k]


def _run_sort8(mod, rng):
    n = 129
    x = rng.standard_normal(n * 8).astype(np.float32)
    out = np.zeros_like(x)
    launch_1d(mod, "sort8", n, [n, x, out], block=32)
    np.testing.assert_array_equal(out.reshape(n, 8), np.sort(x.reshape(n, 8), axis=1))


SORT8 = Case("local_array_sort", [sort8], _run_sort8)

# ---------------------------------------------------------------- launch geometry


@pk.kernel
def geometry(w: i32, h: i32, d: i32, out: Buffer[i32]):
    x = pk.global_id(0)
    y = pk.global_id(1)
    z = pk.global_id(2)
    if x < w and y < h and z < d:
        i = ((z * h + y) * w + x) * 4
        out[i + 0] = pk.group_id(0) + 10 * pk.group_id(1) + 100 * pk.group_id(2)
        out[i + 1] = pk.local_id(0) + 10 * pk.local_id(1) + 100 * pk.local_id(2)
        out[i + 2] = pk.local_size(0) + 10 * pk.local_size(1) + 100 * pk.local_size(2)
        out[i + 3] = pk.num_groups(0) + 10 * pk.num_groups(1) + 100 * pk.num_groups(2)


def _run_geometry(mod, rng):
    w, h, d = 13, 7, 5
    block = (4, 2, 3)
    grid = tuple((s + b - 1) // b for s, b in zip((w, h, d), block))
    out = np.full(w * h * d * 4, -1, np.int32)
    mod["geometry"](w, h, d, out, grid=grid, block=block)
    out = out.reshape(d, h, w, 4)
    z, y, x = np.meshgrid(np.arange(d), np.arange(h), np.arange(w), indexing="ij")
    np.testing.assert_array_equal(out[..., 0], x // 4 + 10 * (y // 2) + 100 * (z // 3))
    np.testing.assert_array_equal(out[..., 1], x % 4 + 10 * (y % 2) + 100 * (z % 3))
    np.testing.assert_array_equal(out[..., 2], 4 + 20 + 300)
    np.testing.assert_array_equal(out[..., 3], grid[0] + 10 * grid[1] + 100 * grid[2])


GEOMETRY = Case("launch_geometry_3d", [geometry], _run_geometry)

CASES = ELEMENTWISE + MATH + INT_OPS + [CASTS, CONTROL, LOGIC, SORT8, GEOMETRY]
