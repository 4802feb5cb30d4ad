"""One numeric meaning on every backend (docs/correctness.md section 1), checked on every runtime present here
against ``polykern.numerics`` (the table of the language's promises) and NumPy.

- integer ``//`` and ``%``: truncating, x // 0 == x, x % 0 == 0, MIN // -1 == MIN, MIN % -1 == 0;
- float -> int conversion: saturating, NaN -> 0, for every (float, int) pair a backend has;
- math builtins: special values (C99 Annex F) and accuracy within ``numerics.promise``;
- no silent contraction of a*b+c into an fma.
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from polykern import numerics
from polykern.errors import KernelTypeError
from polykern.testing import tier_skip
from polykern.testing.fuzzcase import numerics_backend
from runtimes import runnable_targets

# Inputs deliberately overflow to infinity when cast to f16.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")

TARGETS = [(t, kind, skips) for t, kind, skips in runnable_targets()]


def _profile(target):
    """The numeric promises (numerics.BACKENDS) ``target``'s kind declares it keeps (Capabilities.numerics)."""
    return numerics_backend(target.split()[0])


INTS = [i8, i16, i32, i64, u8, u16, u32, u64]
FLOATS = [f16, f32, f64]
_FEATURE = {"i8": "i8", "u8": "i8", "i16": "i16", "u16": "i16", "i64": "i64", "u64": "i64", "f64": "f64",
            "f16": "f16"}


def _params(types_list):
    out = []
    for target, kind, skips in TARGETS:
        for types in types_list:
            feats = [_FEATURE[t.name] for t in types if t.name in _FEATURE]
            reason = next((skips[f] for f in feats if f in skips), None)
            marks = [pytest.mark.skip(reason=f"{target}: {reason}")] if reason else []
            ids = "-".join(t.name for t in types)
            out.append(pytest.param(target, kind, *types, id=f"{kind}-{ids}", marks=marks))
    return out


def _run(kernel, target, kind, *args, n):
    try:
        mod = pk.build([kernel], targets=[target]).on(kind)
    except KernelTypeError as e:  # a backend lacking a type says so; anything else is a failure
        if "f64" in str(e) or "f16" in str(e) or "64-bit" in str(e):
            pytest.skip(f"{kind}: {e}")
        raise
    mod[kernel.name](n, *args, grid=max(1, (n + 63) // 64), block=64)


# ------------------------------------------------------------------ integer division (items 5, 6)

def _divrem_kernel(T):
    @pk.kernel
    def divrem(n: i32, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], q: Buffer[T], r: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            q[i] = a[i] // b[i]
            r[i] = a[i] % b[i]
    return divrem


def _divrem_inputs(T):
    lo, hi = numerics.int_range(T.name)
    edges = sorted(v for v in {lo, lo + 1, -7, -2, -1, 0, 1, 2, 3, 7, hi - 1, hi} if lo <= v <= hi)
    pairs = [(a, b) for a in edges for b in edges]
    rng = np.random.default_rng(11)
    pairs += list(zip(rng.integers(lo, hi, 200, endpoint=True, dtype=T.numpy).tolist(),
                      rng.integers(max(lo, -100), min(hi, 100), 200, endpoint=True, dtype=T.numpy).tolist()))
    a = np.array([p[0] for p in pairs], T.numpy)
    b = np.array([p[1] for p in pairs], T.numpy)
    return a, b


@pytest.mark.parametrize("target,kind,T", _params([(t,) for t in INTS]))
def test_int_div_rem_edges(target, kind, T):
    a, b = _divrem_inputs(T)
    q, r = np.zeros_like(a), np.zeros_like(a)
    _run(_divrem_kernel(T), target, kind, a, b, q, r, n=len(a))
    want_q = np.array([numerics.int_div(int(x), int(y), T.name) for x, y in zip(a, b)], T.numpy)
    want_r = np.array([numerics.int_rem(int(x), int(y), T.name) for x, y in zip(a, b)], T.numpy)
    bad = np.flatnonzero((q != want_q) | (r != want_r))
    assert not len(bad), (f"{kind} {T}: {len(bad)} wrong of {len(a)}; e.g. "
                          + "; ".join(f"{a[k]} // {b[k]} = {q[k]} (want {want_q[k]}), {a[k]} % {b[k]} = {r[k]} "
                                      f"(want {want_r[k]})" for k in bad[:4]))


def test_int_semantics_table():
    assert numerics.int_div(-2 ** 31, -1, "i32") == -2 ** 31
    assert numerics.int_rem(-2 ** 31, -1, "i32") == 0
    assert numerics.int_div(-7, 2, "i32") == -3 and numerics.int_rem(-7, 2, "i32") == -1
    assert numerics.int_div(7, -2, "i8") == -3 and numerics.int_rem(7, -2, "i8") == 1
    assert numerics.int_div(5, 0, "u32") == 5 and numerics.int_rem(5, 0, "u32") == 0
    assert numerics.int_div(-128, -1, "i8") == -128


# ------------------------------------------------------------------ float -> int (item 7)

def _cast_kernel(F, I):
    @pk.kernel
    def cvt(n: i32, a: Buffer[F, "readonly"], o: Buffer[I]):
        i = pk.global_id(0)
        if i < n:
            o[i] = I(a[i])
    return cvt


def _cast_inputs(F, I):
    lo, hi = numerics.int_range(I.name)
    vals = [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 0.999, -0.999, 1.5, -1.5,
            2.5, -2.5, 1e30, -1e30, 3.4e38, -3.4e38, 65504.0, -65504.0, 1e-40]
    for edge in (lo, hi, hi + 1, lo - 1, hi // 2):
        vals += [float(edge), float(edge) * (1 + 2 ** -20), float(edge) * (1 - 2 ** -20), float(edge) + 0.5,
                 float(edge) - 0.5]
    with np.errstate(over="ignore"):
        a = np.array(vals, np.float64).astype(F.numpy)
    # the neighbours of the exact bounds in the float type itself
    for bound in numerics.saturation_bounds("f64" if F.bits == 64 else "f32", I.name):
        if math.isfinite(bound):
            b = np.array(bound, F.numpy)
            if np.isfinite(b):
                a = np.concatenate([a, [b, np.nextafter(b, F.numpy.type(-np.inf)), np.nextafter(b, F.numpy.type(np.inf))]])
    return a


@pytest.mark.parametrize("target,kind,F,I", _params([(f, i) for f in FLOATS for i in INTS]))
def test_float_to_int_saturates(target, kind, F, I):
    a = _cast_inputs(F, I)
    o = np.zeros(len(a), I.numpy)
    _run(_cast_kernel(F, I), target, kind, a, o, n=len(a))
    want = np.array([numerics.float_to_int(float(x), I.name) for x in a], I.numpy)
    bad = np.flatnonzero(o != want)
    assert not len(bad), (f"{kind} {F}->{I}: {len(bad)} wrong; e.g. "
                          + "; ".join(f"{I}({float(a[k])!r}) = {o[k]} (want {want[k]})" for k in bad[:6]))


def test_saturation_bounds_are_exact():
    for f in ("f32", "f64"):
        for i in (t.name for t in INTS):
            lo, hi = numerics.saturation_bounds(f, i)
            dt = np.float32 if f == "f32" else np.float64
            assert float(dt(hi)) == hi and float(dt(lo)) == lo, (f, i)
            assert hi == numerics.int_range(i)[1] + 1
    assert numerics.saturation_bounds("f16", "i32") == (-math.inf, math.inf)
    assert numerics.float_to_int(2147483647.9, "i32") == 2147483647
    assert numerics.float_to_int(float("nan"), "u8") == 0


# ------------------------------------------------------------------ math specials and accuracy (item 8)

_UNARY = ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "abs", "floor", "ceil")
_BINARY = ("pow", "min", "max")


def _math_kernel(func, T):
    fn = getattr(pk, func)
    if func in _BINARY:
        @pk.kernel
        def m2(n: i32, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], o: Buffer[T]):
            i = pk.global_id(0)
            if i < n:
                o[i] = fn(a[i], b[i])
        return m2

    @pk.kernel
    def m1(n: i32, a: Buffer[T, "readonly"], o: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            o[i] = fn(a[i])
    return m1


_REF = {"sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "exp": np.exp, "exp2": np.exp2, "log": np.log,
        "log2": np.log2, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "abs": np.abs, "floor": np.floor,
        "ceil": np.ceil, "pow": np.power, "min": np.fmin, "max": np.fmax}

_SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 100.0,
             1e-40, -1.5e-45, 3e-5, 3.4e38, -3.4e38]   # f32 subnormals, an f16 subnormal, huge arguments


def _reference(func, T, args):
    """The exact result rounded to T (float64 libm results are within 1 f64 ulp: exact enough for f32/f16)."""
    with np.errstate(all="ignore"):
        wide = _REF[func](*[np.asarray(x, np.float64) for x in args])
    with np.errstate(over="ignore"):
        return wide.astype(T.numpy)


def _math_inputs(func, T, rng):
    """Special values (every pair for binary functions), then ordinary values of the function's range."""
    if func in _BINARY:
        a = np.array([x for x in _SPECIALS for _ in _SPECIALS] + [-8.0, -8.0, 0.1, 10.0], np.float64)
        b = np.array([y for _ in _SPECIALS for y in _SPECIALS] + [1 / 3, 3.0, -0.5, 7.5], np.float64)
        if func == "pow":
            x = rng.uniform(0.01, 20, 300)
            y = rng.uniform(-4, 4, 300)
        else:
            x, y = rng.uniform(-1e3, 1e3, 300), rng.uniform(-1e3, 1e3, 300)
        return a.astype(T.numpy), b.astype(T.numpy), np.concatenate([a, x]).astype(T.numpy), \
            np.concatenate([b, y]).astype(T.numpy)
    lim = {"exp": 80, "exp2": 120, "sin": 3.14, "cos": 3.14, "tanh": 10}.get(func, 1e4)
    if T == f16:
        lim = min(lim, {"exp": 10, "exp2": 15}.get(func, 6e4))
    a = np.array(_SPECIALS, np.float64)
    x = rng.uniform(-lim, lim, 400)
    if func in ("sqrt", "rsqrt", "log", "log2"):
        x = np.abs(x)
    return a.astype(T.numpy), None, np.concatenate([a, x]).astype(T.numpy), None


@pytest.mark.parametrize("func", _UNARY + _BINARY)
@pytest.mark.parametrize("target,kind,T", _params([(f32,), (f16,), (f64,)]))
def test_math_within_promise(target, kind, T, func):
    if kind == "vulkan" and T == f64 and func not in ("sqrt", "rsqrt", "abs", "floor", "ceil", "min", "max"):
        pytest.skip("vulkan: GLSL.std.450 has no 64-bit transcendental functions (refused at compile time)")
    rng = np.random.default_rng(5)
    _, _, a, b = _math_inputs(func, T, rng)
    args = (a,) if b is None else (a, b)
    o = np.zeros(len(a), T.numpy)
    _run(_math_kernel(func, T), target, kind, *args, o, n=len(a))
    ref = _reference(func, T, args)
    p = numerics.promise(func, T.name, _profile(target))
    ok = numerics.agrees(p, func, T.name, o, ref, args)
    bad = np.flatnonzero(~ok)
    assert not len(bad), (f"{kind} {func}({T}): {len(bad)} of {len(a)} outside {p}; e.g. "
                          + "; ".join(f"{func}{tuple(float(x[k]) for x in args)} = {float(o[k])!r} "
                                      f"(want {float(ref[k])!r})" for k in bad[:6]))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("target,kind,T", _params([(f32,), (f16,), (f64,)]))
def test_arithmetic_within_promise(target, kind, T, op):
    code = ("add", "sub", "mul", "div").index(op)

    @pk.kernel
    def arith(n: i32, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], o: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            if code == 0:
                o[i] = a[i] + b[i]
            elif code == 1:
                o[i] = a[i] - b[i]
            elif code == 2:
                o[i] = a[i] * b[i]
            else:
                o[i] = a[i] / b[i]

    rng = np.random.default_rng(3)
    a = np.concatenate([np.array(_SPECIALS * len(_SPECIALS)), rng.uniform(-100, 100, 600)]).astype(T.numpy)
    b = np.concatenate([np.repeat(_SPECIALS, len(_SPECIALS)), rng.uniform(-100, 100, 600)]).astype(T.numpy)
    o = np.zeros(len(a), T.numpy)
    _run(arith, target, kind, a, b, o, n=len(a))
    with np.errstate(all="ignore"):
        ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op](a, b)  # IEEE in T
    p = numerics.promise(op, T.name, _profile(target))
    bad = np.flatnonzero(~numerics.agrees(p, op, T.name, o, ref, (a, b)))
    assert not len(bad), (f"{kind} {op}({T}): {len(bad)} outside {p}; e.g. "
                          + "; ".join(f"{a[k]!r} {op} {b[k]!r} = {o[k]!r} (want {ref[k]!r})" for k in bad[:6]))


def test_opencl_builds_with_correctly_rounded_divide_sqrt():
    if not any(kind == "opencl" for _, kind, _ in TARGETS):
        tier_skip.skip("pocl", "no OpenCL runtime here")
    import polykern_opencl.runtime as rt
    from polykern_opencl.runtime.program import CORRECTLY_ROUNDED_DIVIDE_SQRT, build_options

    dev = rt.get_device()
    assert (CORRECTLY_ROUNDED_DIVIDE_SQRT in build_options(dev)) == dev.correctly_rounded_divide_sqrt
    if dev.correctly_rounded_divide_sqrt:  # then the table promises exact f32 / and sqrt
        assert numerics.promise("div", "f32", "opencl") == numerics.EXACT
    assert numerics.OPENCL_WITHOUT_CORRECT_ROUNDING["div"].ulp == 2.5


def _round_exact(q, T):
    """The rational ``q`` correctly rounded (nearest, ties to even) to T."""
    v = T.numpy.type(float(q))  # float(Fraction) is correctly rounded to f64; fix a double rounding
    t = T.numpy.type
    if not np.isfinite(v):  # beyond the largest finite value plus half an ulp
        return v
    cands = [c for c in (v, np.nextafter(v, t(np.inf)), np.nextafter(v, t(-np.inf))) if np.isfinite(c)]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(np.asarray(c).view(f"u{T.bits // 8}")) & 1))
    return best


@pytest.mark.parametrize("target,kind,T", _params([(f32,), (f16,), (f64,)]))
def test_fma_within_promise(target, kind, T):
    @pk.kernel
    def fused(n: i32, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], c: Buffer[T, "readonly"], o: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            o[i] = pk.fma(a[i], b[i], c[i])

    rng = np.random.default_rng(9)
    n = 400
    a, b = rng.uniform(-10, 10, n).astype(T.numpy), rng.uniform(-10, 10, n).astype(T.numpy)
    c = (-(a.astype(np.float64) * b) * rng.choice([1.0, 0.999, 0.5], n)).astype(T.numpy)  # cancellation
    o = np.zeros(n, T.numpy)
    _run(fused, target, kind, a, b, c, o, n=n)
    ref = np.array([_round_exact(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), T)
                    for x, y, z in zip(a, b, c)], T.numpy)
    p = numerics.promise("fma", T.name, _profile(target))
    bad = np.flatnonzero(~numerics.agrees(p, "fma", T.name, o, ref, (a, b, c)))
    assert not len(bad), (f"{kind} fma({T}): {len(bad)} outside {p}; e.g. "
                          + "; ".join(f"fma({a[k]!r}, {b[k]!r}, {c[k]!r}) = {o[k]!r} (want {ref[k]!r})"
                                      for k in bad[:6]))


# ------------------------------------------------------------------ contraction (item 8)

@pytest.mark.parametrize("target,kind,T", _params([(f32,), (f64,)]))
def test_no_silent_fma_contraction(target, kind, T):
    @pk.kernel
    def muladd(n: i32, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], c: Buffer[T, "readonly"],
               o: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            o[i] = a[i] * b[i] + c[i]

    eps = 2.0 ** (-12 if T == f32 else -27)
    # (1 + eps)^2 = 1 + 2 eps + eps^2: the eps^2 term is lost when the product is rounded (a tie
    # to even), so a*b + c is exactly 0 unfused and eps^2 fused.
    a = np.full(64, 1 + eps, T.numpy)
    c = np.full(64, -(1 + 2 * eps), T.numpy)
    o = np.ones(64, T.numpy)
    _run(muladd, target, kind, a, a, c, o, n=64)
    fused = T.numpy.type(eps * eps)
    if numerics.contraction_allowed(_profile(target)):  # recorded in the table: either result
        assert numerics.promise("add", T.name, _profile(target)).may_contract
        assert ((o == 0) | (o == fused)).all(), f"{kind}: a*b+c gave {o[0]!r}: neither 0 nor {fused!r}"
    else:
        assert (o == 0).all(), f"{kind}: a*b+c was contracted into an fma: got {o[0]!r}, unfused gives 0"


# ------------------------------------------------------------------ the table itself

def test_promise_table_covers_every_backend_op_and_type():
    for b in numerics.BACKENDS:
        for op in numerics.OPS:
            for dt in numerics.FLOAT_TYPES:
                p = numerics.promise(op, dt, b)
                assert p.ulp >= 0 and p.abs_err >= 0
            assert numerics.promise(op, "i32", b) == numerics.EXACT
    for bad in (("nope", "f32", "llvm"), ("sin", "f32", "nope"), ("sin", "f8", "llvm")):
        with pytest.raises(ValueError, match="numerics.promise: unknown"):
            numerics.promise(*bad)


def test_agrees_rejects_what_the_promise_excludes():
    p = numerics.promise("sin", "f32", "llvm")
    ref = np.float32(0.5)
    assert numerics.agrees(p, "sin", "f32", ref, ref, (np.float32(0.52),))
    assert not numerics.agrees(p, "sin", "f32", np.nextafter(ref, np.float32(1), dtype=np.float32) + 1e-5, ref,
                               (np.float32(0.52),))
    assert not numerics.agrees(p, "sin", "f32", np.float32(np.nan), ref, (np.float32(0.52),))
    assert numerics.agrees(p, "sin", "f32", np.float32(np.nan), np.float32(np.nan), (np.float32(np.inf),))
    v = numerics.promise("sin", "f32", "vulkan")  # absolute bound only inside [-pi, pi]
    assert numerics.agrees(v, "sin", "f32", np.float32(-1.0), np.float32(-0.2444), (np.float32(3.4e38),))
    assert not numerics.agrees(v, "sin", "f32", np.float32(0.7), np.float32(0.5), (np.float32(0.52),))


def test_markdown_table_lists_every_op():
    text = numerics.markdown_table()
    for op in numerics.OPS:
        assert f"| {op} | f32 |" in text
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + len(numerics.OPS) * len(numerics.FLOAT_TYPES)


# ------------------------------------------------------------------ nvptx / rocm / hexagon math, on the CPU

def _portable_math_cpu_module(kernel):
    """The kernel with ``llvm_devmath.PortableMath`` (nvptx, rocm and hexagon's math) run by the CPU runtime."""
    import copy

    from polykern import backends
    from polykern.codegen import llvm_devmath
    from polykern.codegen.llvm_target import compile_ir, data_layout, target_machine
    from polykern.module import create_with_fallback
    from polykern.passes import run_default_passes
    from polykern.target import Target
    from polykern_llvm import codegen as llvm_codegen

    class CPUWithPortableMath(llvm_devmath.PortableMath, llvm_codegen.CPUEmitter):
        pass

    backends.load_all()
    funcs = [run_default_passes(copy.deepcopy(kernel.ir))]
    triple, cpu, features, opt = llvm_codegen.resolve(Target("llvm"))
    tm = target_machine(triple, cpu, features, opt)
    em = CPUWithPortableMath(triple, data_layout(tm)).emit(funcs)
    out = compile_ir(em.render(), triple, cpu, features, opt, tm=tm)
    fmap = llvm_codegen.function_map(funcs, em.kernel_facts, triple, cpu, features)
    return create_with_fallback("llvm", out.obj, "o", fmap, {})


@pytest.mark.parametrize("func", [f for f in _UNARY + _BINARY if f in
                                  ("exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow")])
@pytest.mark.parametrize("T", [f32, f16, f64], ids=lambda t: t.name)
def test_portable_math_within_promise(T, func):
    rng = np.random.default_rng(5)
    _, _, a, b = _math_inputs(func, T, rng)
    args = (a,) if b is None else (a, b)
    o = np.zeros(len(a), T.numpy)
    k = _math_kernel(func, T)
    _portable_math_cpu_module(k)[k.name](len(a), *args, o, grid=max(1, (len(a) + 63) // 64), block=64)
    ref = _reference(func, T, args)
    for backend in ("nvptx", "rocm", "hexagon"):
        p = numerics.promise(func, T.name, backend)
        bad = np.flatnonzero(~numerics.agrees(p, func, T.name, o, ref, args))
        assert not len(bad), (f"PortableMath {func}({T}) for {backend}: {len(bad)} outside {p}; e.g. "
                              + "; ".join(f"{func}{tuple(float(x[k]) for x in args)} = {float(o[k])!r} "
                                          f"(want {float(ref[k])!r})" for k in bad[:6]))


@pytest.mark.parametrize("target,kind,T", _params([(f32,), (f16,), (f64,)]))
def test_comparisons_with_nan_are_ieee(target, kind, T):
    """NaN compares unequal to everything (also itself), and every ordered comparison with it is false."""
    @pk.kernel
    def cmp(n: i32, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], o: Buffer[i32]):
        i = pk.global_id(0)
        if i < n:
            o[6 * i] = i32(a[i] != b[i])
            o[6 * i + 1] = i32(a[i] == b[i])
            o[6 * i + 2] = i32(a[i] < b[i])
            o[6 * i + 3] = i32(a[i] <= b[i])
            o[6 * i + 4] = i32(a[i] > b[i])
            o[6 * i + 5] = i32(a[i] >= b[i])

    vals = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0]
    a = np.array([x for x in vals for _ in vals], T.numpy)
    b = np.array([y for _ in vals for y in vals], T.numpy)
    o = np.full(6 * len(a), 7, np.int32)
    _run(cmp, target, kind, a, b, o, n=len(a))
    with np.errstate(invalid="ignore"):
        want = np.stack([a != b, a == b, a < b, a <= b, a > b, a >= b], axis=1).astype(np.int32).ravel()
    bad = np.flatnonzero(o != want)
    names = ("!=", "==", "<", "<=", ">", ">=")
    assert not len(bad), f"{kind}: " + "; ".join(
        f"{a[k // 6]} {names[k % 6]} {b[k // 6]} gave {o[k]}" for k in bad[:6])


def test_docs_embed_the_generated_promise_table():
    import pathlib

    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "correctness.md"
    if not doc.exists():
        pytest.skip("docs/correctness.md is not written yet")
    text = doc.read_text()
    assert numerics.DOC_BEGIN in text and numerics.DOC_END in text, \
        "docs/correctness.md must embed polykern.numerics.markdown_table() between DOC_BEGIN and DOC_END"
    embedded = text.split(numerics.DOC_BEGIN, 1)[1].split(numerics.DOC_END, 1)[0].strip("\n") + "\n"
    assert embedded == numerics.markdown_table(), \
        "docs/correctness.md's numerics table is stale: paste polykern.numerics.markdown_table() again"


@pytest.mark.parametrize("target,kind,T", _params([(f32,), (f16,)]))
def test_math_of_constants_gives_the_ieee_result(target, kind, T):
    """Builtins of constants outside their domain (folded by some shader compilers) give NaN/inf."""
    @pk.kernel
    def consts(n: i32, o: Buffer[T]):
        if pk.global_id(0) == 0:
            o[0] = pk.sqrt(T(-2.0))
            o[1] = pk.rsqrt(T(-3.0))
            o[2] = pk.exp(T(100.0))
            o[3] = pk.log(T(0.0))
            o[4] = pk.log2(T(-1.0))
            o[5] = pk.pow(T(-8.0), T(0.5))
            o[6] = pk.rsqrt(T(0.0))

    o = np.zeros(7, T.numpy)
    _run(consts, target, kind, o, n=1)
    want = np.array([np.nan, np.nan, np.inf, -np.inf, np.nan, np.nan, np.inf], T.numpy)
    assert np.array_equal(o, want, equal_nan=True), f"{kind}: got {o.tolist()}, want {want.tolist()}"


@pytest.mark.parametrize("target,kind,T", _params([(f32,), (f16,), (f64,)]))
def test_float_mod_within_promise(target, kind, T):
    @pk.kernel
    def fmod(n: i32, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], o: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            o[i] = a[i] % b[i]

    rng = np.random.default_rng(4)
    sp = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.1, 17.0, -17.0, 3.0]
    a = np.concatenate([np.array([x for x in sp for _ in sp]), rng.uniform(-1000, 1000, 400)]).astype(T.numpy)
    b = np.concatenate([np.array([y for _ in sp for y in sp]), rng.uniform(-10, 10, 400)]).astype(T.numpy)
    o = np.zeros(len(a), T.numpy)
    _run(fmod, target, kind, a, b, o, n=len(a))
    with np.errstate(all="ignore"):
        ref = np.fmod(a, b)  # C fmod: exact
    p = numerics.promise("mod", T.name, _profile(target))
    bad = np.flatnonzero(~numerics.agrees(p, "mod", T.name, o, ref, (a, b)))
    assert not len(bad), (f"{kind} %({T}): {len(bad)} outside {p}; e.g. "
                          + "; ".join(f"{a[k]!r} % {b[k]!r} = {o[k]!r} (want {ref[k]!r})" for k in bad[:6]))


@pytest.mark.parametrize("target,kind,S,D", _params([(f64, f32), (f64, f16), (f32, f16), (i32, f32), (i64, f32),
                                                     (u64, f32), (i32, f16), (i64, f64), (u64, f64)]))
def test_conversions_round_once_to_nearest_even(target, kind, S, D):
    @pk.kernel
    def narrow(n: i32, a: Buffer[S, "readonly"], o: Buffer[D]):
        i = pk.global_id(0)
        if i < n:
            o[i] = D(a[i])

    rng = np.random.default_rng(8)
    if S.is_float:
        # halfway points of D, and their neighbours in S: a double rounding (through f32) lands on the
        # wrong side of these
        base = rng.uniform(-2, 2, 200).astype(D.numpy).astype(np.float64)
        ulp = np.spacing(np.abs(base.astype(D.numpy))).astype(np.float64)
        mids = base + ulp / 2
        a = np.concatenate([mids, np.nextafter(mids.astype(S.numpy), S.numpy.type(np.inf)),
                            np.nextafter(mids.astype(S.numpy), S.numpy.type(-np.inf)),
                            [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 65520.0, 65519.0, 1e-8]]).astype(S.numpy)
        with np.errstate(over="ignore", invalid="ignore"):
            want = a.astype(D.numpy)  # NumPy converts with one rounding to nearest even
    else:
        lo, hi = numerics.int_range(S.name)
        vals = rng.integers(lo, hi, 300, endpoint=True, dtype=S.numpy).tolist()
        vals += [lo, hi, hi - 1, (1 << 24) + 1, (1 << 53) + 1, 65519, 65520, 2049] if S.bits == 64 else [lo, hi, 65519, 65520, 2049]
        a = np.array([v for v in vals if lo <= v <= hi], S.numpy)
        want = np.array([_round_exact(Fraction(int(v)), D) for v in a], D.numpy)
    o = np.zeros(len(a), D.numpy)
    _run(narrow, target, kind, a, o, n=len(a))
    same = (o == want) | (np.isnan(o.astype(np.float64)) & np.isnan(want.astype(np.float64)))
    bad = np.flatnonzero(~same)
    assert not len(bad), f"{kind} {S}->{D}: {len(bad)} wrong; e.g. " + "; ".join(
        f"{D}({a[k]!r}) = {o[k]!r} (want {want[k]!r})" for k in bad[:6])


@pytest.mark.parametrize("target,kind", [pytest.param(t, k, id=k) for t, k, _ in TARGETS])
def test_log_of_subnormals(target, kind):
    """log/log2 of f32 subnormals: within the strict promise, or (where subnormals may flush) the
    log of zero. Lavapipe keeps subnormals in arithmetic but its log did not (log(1e-40) was -88.02,
    neither): the shader path scales them by 2^24 first."""
    @pk.kernel
    def logs(n: i32, a: Buffer[f32, "readonly"], o: Buffer[f32]):
        i = pk.global_id(0)
        if i < n:
            o[2 * i] = pk.log(a[i])
            o[2 * i + 1] = pk.log2(a[i])

    a = np.array([1e-40, 1.5e-45, 1e-45, 3e-39, 1.1754942e-38, 1.17549435e-38, 1.0], np.float32)
    o = np.zeros(2 * len(a), np.float32)
    _run(logs, target, kind, a, o, n=len(a))
    for j, func in enumerate(("log", "log2")):
        ref = _reference(func, f32, (a,))
        strict = numerics.promise(func, "f32", "llvm")
        ok = numerics.agrees(strict, func, "f32", o[j::2], ref, (a,))
        if numerics.promise(func, "f32", _profile(target)).may_flush_subnormals:  # or the input read as 0
            ok |= (o[j::2] == -np.inf) & numerics.is_subnormal(a, "f32")
        assert ok.all(), f"{kind} {func}: got {o[j::2].tolist()}, want {ref.tolist()}"


# ------------------------------------------------------------------ the polyfills in code no runtime here runs

def _numerics_kernel():
    @pk.kernel
    def semantics(q: Buffer[i32], r: Buffer[i32], c: Buffer[f32], k: Buffer[i32]):
        i = pk.global_id(0)
        q[i] = q[i] // r[i]
        r[i] = q[i] % r[i]
        k[i] = i32(c[i])
        c[i] = c[i] * c[i + 1] + c[i + 2]
        c[i + 3] = c[i] % c[i + 1]
        c[i + 4] = pk.pow(c[i], c[i + 1])
    return semantics


@pytest.mark.parametrize("target", ["cuda", "metal", "opencl"])
def test_c_like_sources_define_division_and_conversion(target):
    src = pk.build([_numerics_kernel()], targets=[target]).on(target).inspect_source()
    # passes/legalize_numerics.py: the divisor is 1 where x/0 or MIN/-1 would be undefined in C, and
    # only a float in range is converted
    assert src.count("== -1)) ? 1 : ") >= 2, (target, "both divisions guarded")
    assert "2147483648.0f" in src or "2.1474836e9f" in src  # the exact saturation bound
    if target == "opencl":
        assert "#pragma OPENCL FP_CONTRACT OFF" in src
    if target == "metal":
        assert "precise::pow(" in src and "precise::fmod(" in src


@pytest.mark.parametrize("target", ["nvptx", "rocm", "hexagon"])
def test_llvm_gpu_code_defines_division_conversion_and_fmod(target):
    if target == "rocm":
        from polykern_rocm import lld

        if not lld.candidates():
            tier_skip.skip("ld.lld", f"rocm: no ld.lld here ({lld.INSTALL_HINT})")
    mod = pk.build([_numerics_kernel()], targets=[target]).on(target)
    if "llvm" not in mod.source_formats():
        pytest.skip(f"{target}: no LLVM IR embedded")
    ll = mod.inspect_source("llvm")
    assert "llvm.fptosi.sat.i32.f32" in ll
    body = ll.split("sdiv", 1)[0]
    assert "select" in body, "the divisor is replaced by 1 where x/0 or MIN/-1 would be undefined"
    assert " contract " not in ll and "fast " not in ll
    if target != "hexagon":  # LLVM's frem lowering for GPUs is x - trunc(x/y)*y, not fmod: the exact
        assert " frem " not in ll and "while" in ll  # loops of passes/legalize_numerics.py instead


def test_cuda_compiles_without_contraction():
    from polykern_cuda import toolchain

    if toolchain.available_compiler() is None:
        pytest.skip("neither NVRTC nor nvcc is available here")
    @pk.kernel
    def muladd(c: Buffer[f32]):
        i = pk.global_id(0)
        c[i] = c[i] * c[i + 1] + c[i + 2]

    ptx = pk.build([muladd], targets=["cuda -fmt=ptx"]).on("cuda").inspect_source("ptx")
    assert "fma.rn.f32" not in ptx, "a*b+c was contracted (CUDA compiles with --fmad=false)"
    assert "mul.rn.f32" in ptx and "add.rn.f32" in ptx


def test_specials_and_reassociation_promises_name_backends_and_drivers():
    lavapipe = "vulkan:0: llvmpipe (LLVM 15.0.6, 256 bits) (CPU, Vulkan 1.3.230, lavapipe, Mesa 22.3.6)"
    assert numerics.specials_promised("vulkan") and numerics.specials_promised("vulkan", "NVIDIA H100 80GB HBM3")
    assert not numerics.specials_promised("vulkan", lavapipe)
    assert not numerics.specials_promised("webgpu") and not numerics.specials_promised("webgpu", "NVIDIA H100")
    assert numerics.specials_promised("llvm", lavapipe)  # a driver exception is per backend
    for b in numerics.BACKENDS:
        expect = b not in numerics.SPECIALS_NOT_PROMISED
        assert all(numerics.promise(op, dt, b).specials == expect
                   for op in ("add", "mul", "div", "sqrt", "exp", "cast") for dt in numerics.FLOAT_TYPES), b
        assert numerics.promise("add", "f32", b).may_reassociate == (b in numerics.MAY_REASSOCIATE)
        assert numerics.promise("mul", "f32", b).may_reassociate == (b in numerics.MAY_REASSOCIATE)
        assert not numerics.promise("div", "f32", b).may_reassociate
    with pytest.raises(ValueError, match="unknown backend 'vk'"):
        numerics.specials_promised("vk")
    table = numerics.markdown_table()
    assert "may reassociate" in table and 'vulkan on a device whose name has "lavapipe"' in table
    # where specials are not promised, a special result agrees with anything; exact values stay exact
    p = numerics.promise("sub", "f32", "webgpu")
    assert numerics.agrees(p, "sub", "f32", 0.0, math.nan, (math.inf, math.inf))
    assert not numerics.agrees(p, "sub", "f32", 1.0, 2.0, (3.0, 1.0))
