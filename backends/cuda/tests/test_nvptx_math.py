"""The nvptx math expansions (``PortableMath``) are target-independent IR, so this test runs the very
same expansion on the CPU: the CPU backend's work-item loops with ``PortableMath`` mixed in, run by
the polykern CPU runtime. Accuracy is measured against correctly rounded references (mpmath where
installed, else NumPy's float64 functions with a correspondingly looser bound)."""

import copy
import pathlib
import sys

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, f64, i32
from polykern.codegen.llvm_target import compile_ir, data_layout, target_machine
from polykern.module import create_with_fallback
from polykern.passes import run_default_passes
from polykern.passes.legalize_target import legalize_for_target
from polykern.target import Target
from polykern_cuda.nvptx import PortableMath
from polykern.testing import tier_skip

llvm_codegen = pytest.importorskip("polykern_llvm.codegen", reason="the CPU backend (polykern_llvm) runs the IR")
try:
    import mpmath
except ImportError:  # NumPy references: allow their own error on top
    mpmath = None

try:
    from conformance import ALL_CASES
except ImportError:  # plain pytest: the suite lives in the repository's tests/
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests"))
    from conformance import ALL_CASES

FUNCS = ["exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow"]


class CPUWithPortableMath(PortableMath, llvm_codegen.CPUEmitter):
    """The CPU emitter whose transcendental functions are the nvptx expansions (float % is the nvptx
    one too: ``cpu_module`` legalizes the IR as nvptx declares, passes/legalize_numerics.py)."""


def cpu_module(kernels):
    from polykern import backends

    backends.load_all()
    if not backends.record_for_kind("llvm").runtime_available:
        tier_skip.skip("llvm", f"the CPU runtime is unavailable: {backends.runtime_reason('llvm')}")
    funcs = [legalize_for_target(run_default_passes(copy.deepcopy(k.ir)), "nvptx") for k in kernels]
    triple, cpu, features, opt = llvm_codegen.resolve(Target("llvm"))
    tm = target_machine(triple, cpu, features, opt)
    em = CPUWithPortableMath(triple, data_layout(tm)).emit(funcs)
    out = compile_ir(em.render(), triple, cpu, features, opt, tm=tm)
    fmap = llvm_codegen.function_map(funcs, em.kernel_facts, triple, cpu, features)
    mod = create_with_fallback("llvm", out.obj, "o", fmap, {"ll": out.ll})
    assert mod.is_runnable
    return mod


def _math_kernel(T):
    @pk.kernel
    def all8(n: i32, x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], out: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            a = x[i]
            b = y[i]
            out[i * 8 + 0] = pk.exp(a)
            out[i * 8 + 1] = pk.exp2(a)
            out[i * 8 + 2] = pk.log(a)
            out[i * 8 + 3] = pk.log2(a)
            out[i * 8 + 4] = pk.sin(a)
            out[i * 8 + 5] = pk.cos(a)
            out[i * 8 + 6] = pk.tanh(a)
            out[i * 8 + 7] = pk.pow(a, b)

    return all8


KERNELS = {32: _math_kernel(f32), 64: _math_kernel(f64), 16: _math_kernel(f16)}


@pytest.fixture(scope="module")
def mods():
    return {bits: cpu_module([k]) for bits, k in KERNELS.items()}


def run(mods, x, y):
    n = len(x)
    out = np.zeros(n * 8, x.dtype)
    mods[x.dtype.itemsize * 8]["all8"](n, x, y, out, grid=(n + 127) // 128, block=128)
    return out.reshape(n, 8)


def _np_ref(x, y):
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        return [np.exp(xd), np.exp2(xd), np.log(xd), np.log2(xd), np.sin(xd), np.cos(xd), np.tanh(xd),
                np.power(xd, yd)]


def _mp_ref(x, y):
    mpmath.mp.prec = 2200  # enough for sin/cos of any double
    fs = [mpmath.exp, lambda v: mpmath.mpf(2) ** v, mpmath.log, lambda v: mpmath.log(v, 2), mpmath.sin, mpmath.cos,
          mpmath.tanh]
    out = [np.array([float(f(mpmath.mpf(float(v)))) if (j not in (2, 3) or v > 0) else np.nan for v in x])
           for j, f in enumerate(fs)]
    out.append(np.array([float(mpmath.power(mpmath.mpf(float(a)), mpmath.mpf(float(b)))) if a > 0 else np.nan
                         for a, b in zip(x, y)]))
    return out


def max_ulp(got, ref, dtype):
    """Largest error in ulp of the result format over finite, normal references."""
    with np.errstate(all="ignore"):
        r = ref.astype(dtype)
        ok = np.isfinite(r) & (np.abs(r) >= np.finfo(dtype).tiny) & np.isfinite(ref)
        err = np.abs(got[ok].astype(np.float64) - ref[ok]) / np.spacing(np.abs(r[ok])).astype(np.float64)
    return (float(err.max()), int(np.flatnonzero(ok)[np.argmax(err)])) if err.size else (0.0, -1)


def _inputs(dtype, n, rng):
    if dtype == np.float32:
        x = np.concatenate([rng.uniform(-4, 4, n), rng.uniform(-1, 1, n) * 10.0 ** rng.uniform(-6, 38, n),
                            np.exp(rng.uniform(-100, 88, n))])
    else:
        x = np.concatenate([rng.uniform(-4, 4, n), rng.uniform(-1, 1, n) * 10.0 ** rng.uniform(-9, 300, n),
                            np.exp(rng.uniform(-700, 700, n))])
    x = x.astype(dtype)
    y = rng.uniform(-12, 12, len(x)).astype(dtype)
    return x, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_within_2_ulp(mods, dtype):
    rng = np.random.default_rng(11)
    n = 20000 if (dtype == np.float32 or mpmath is None) else 300
    x, y = _inputs(dtype, n, rng)
    y = np.where(np.abs(x) > 1e3, y / 100, y).astype(dtype)  # keep most pow results finite
    got = run(mods, x, y)
    exact = dtype == np.float32 or mpmath is not None
    ref = _np_ref(x, y) if dtype == np.float32 or mpmath is None else _mp_ref(x, y)
    bound = 2.0 if exact else 3.0  # NumPy's float64 functions carry up to ~1 ulp themselves
    for j, name in enumerate(FUNCS):
        err, i = max_ulp(got[:, j], ref[j], dtype)
        assert err <= bound, f"{name}({x[i]!r}{', ' + repr(y[i]) if name == 'pow' else ''}): {err:.2f} ulp"


def test_sin_cos_huge_and_near_multiples_of_half_pi(mods):
    """Payne-Hanek reduction: exact for every finite argument, also where x is closest to k*pi/2."""
    rng = np.random.default_rng(3)
    x32 = (rng.uniform(-1, 1, 4000) * 2.0 ** rng.uniform(17, 127, 4000)).astype(np.float32)
    x32 = np.concatenate([x32, (np.arange(1, 3000) * (np.pi / 2)).astype(np.float32), [np.float32(3.4e38)]])
    got = run(mods, x32, np.ones_like(x32))
    ref = _np_ref(x32, x32)  # float64 sin/cos of the f32 value: exact enough for f32 results
    for j in (4, 5):
        err, i = max_ulp(got[:, j], ref[j], np.float32)
        assert err <= 2.0, f"{FUNCS[j]}({x32[i]!r}): {err:.2f} ulp"
    if mpmath is None:
        pytest.skip("mpmath is not installed: f64 huge arguments need exact references")
    mpmath.mp.prec = 2200
    x64 = np.array([6381956970095103.0 * 2.0 ** 797, 1e300, 1e22, 2.0 ** 30, 2.0 ** 30 - 0.5, 1.7976931348623157e308]
                   + [float(mpmath.mpf(int(k)) * mpmath.pi / 2) for k in rng.integers(1, 2 ** 50, 40)])
    got = run(mods, x64, np.ones_like(x64))
    for j, f in ((4, mpmath.sin), (5, mpmath.cos)):
        ref = np.array([float(f(mpmath.mpf(float(v)))) for v in x64])
        err, i = max_ulp(got[:, j], ref, np.float64)
        assert err <= 2.0, f"{FUNCS[j]}({x64[i]!r}): {err:.2f} ulp"


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_ieee_special_values(mods, dtype):
    inf, nan = np.inf, np.nan
    x = np.array([0.0, -0.0, inf, -inf, nan, 1.0, -1.0, 0.5, -2.0, 2.0], dtype)
    for yv in [0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, inf, -inf, nan]:
        y = np.full(len(x), yv, dtype)
        got = run(mods, x, y)
        with np.errstate(all="ignore"):
            want = [np.exp(x), np.exp2(x), np.log(x), np.log2(x), np.sin(x), np.cos(x), np.tanh(x), np.power(x, y)]
        for j, name in enumerate(FUNCS):
            if name != "pow" and yv != 0.0:
                continue
            w, g = want[j].astype(dtype), got[:, j]
            exactish = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= 2 * np.spacing(np.abs(w)))
            same_sign = np.isnan(w) | (np.signbit(g) == np.signbit(w))
            bad = np.flatnonzero(~(exactish & same_sign))
            assert bad.size == 0, f"{name}: " + ", ".join(f"x={x[i]} y={yv}: got {g[i]}, want {w[i]}" for i in bad)


def test_f16_goes_through_f32(mods):
    rng = np.random.default_rng(5)
    x = rng.uniform(0.1, 4, 2000).astype(np.float16)
    y = rng.uniform(-2, 2, 2000).astype(np.float16)
    got = run(mods, x, y)
    for j, name in enumerate(FUNCS):
        err, i = max_ulp(got[:, j], _np_ref(x, y)[j], np.float16)
        assert err <= 1.0, f"f16 {name}({x[i]!r}): {err:.2f} ulp"


@pytest.mark.parametrize("name", ["math_f32", "math_f64"])
def test_conformance_math_case(name):
    case = next(c for c in ALL_CASES if c.name == name)
    case.run(cpu_module(case.kernels), np.random.default_rng(0))


def _fmod_kernel(T):
    @pk.kernel
    def fmod(n: i32, x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], out: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            out[i] = x[i] % y[i]

    return fmod


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=["f16", "f32", "f64"])
def test_float_mod_is_exact_fmod(dtype):
    """LLVM lowers frem for NVPTX as x - trunc(x/y)*y; the expansion is C's fmod, bit for bit."""
    kernel = _fmod_kernel({np.float16: f16, np.float32: f32, np.float64: f64}[dtype])
    mod = cpu_module([kernel])
    fi = np.finfo(dtype)
    rng = np.random.default_rng(2)
    lo, hi = np.log2(float(fi.smallest_subnormal)), fi.maxexp - 1
    x, y = ((rng.uniform(-1, 1, 5000) * 2.0 ** rng.uniform(lo, hi, 5000)).astype(dtype) for _ in range(2))
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0, 5.5, float(fi.max),
                   float(fi.smallest_subnormal)], dtype)
    x, y = np.concatenate([x, np.repeat(sp, len(sp))]), np.concatenate([y, np.tile(sp, len(sp))])
    out = np.zeros_like(x)
    mod["fmod"](len(x), x, y, out, grid=(len(x) + 127) // 128, block=128)
    with np.errstate(all="ignore"):
        want = np.fmod(x, y)
    same = ((out == want) & (np.signbit(out) == np.signbit(want))) | (np.isnan(out) & np.isnan(want))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, ", ".join(f"fmod({x[i]!r}, {y[i]!r}) = {out[i]!r}, want {want[i]!r}" for i in bad[:5])
