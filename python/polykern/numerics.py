"""The language's numeric promises: the one table that docs, tests, the oracle and the fuzzer read.

A *promise* says how far a backend's result of one operation may be from the exact (infinitely precise)
result rounded to the result type, written ``ref`` below:

    allowed = max(ulp_budget * ulp_of(ref), abs_err)        (ulp_budget = ulp + ulp_growth * |t|)

``ulp == 0`` means correctly rounded (round to nearest even). ``t`` is the operation's *exponent
argument*: ``x`` for ``exp``/``exp2``, ``|y * log2(x)| + |y|`` for ``pow``; it is 0 for everything else.
Outside ``domain`` (a closed interval of the first argument; of ``|y|`` for ``div``) the magnitude bound does not hold: only
"finite vs. non-finite" agreement is promised. ``specials`` says NaN, infinities and signed zeros follow
C99 Annex F (IEEE 754) for that operation; when it is False the result for a special input is
unspecified (but the kernel still runs). ``may_flush_subnormals`` says a subnormal input may be read as a
zero of the same sign, and a subnormal result may be written as one; the result of an operation
with a subnormal *input* is then unchecked (lavapipe's log(1e-40) is -88.02: neither log(1e-40) nor
log(0)). ``unfused_ok`` (only ``fma``) says
the backend may round the product before the add. ``may_contract`` (only ``add``/``sub``) says an
operand that is a product may enter unrounded (a*b+c fused; see MAY_CONTRACT). ``may_reassociate``
(``add``/``sub``, and ``mul``) says a chain of them may be evaluated in any association (see MAY_REASSOCIATE).
Whether specials hold can also depend on the device's driver: ``specials_promised(backend, device)``.

Fast math (opt-in: ``pk.fast_<op>``, ``build(fast_math=True)``) has promises of its own: ``FAST_MATH`` says
per backend what an f32 ``fast_<op>`` compiles to and its bound; ``promise("fast_<op>", ...)`` reads it.

Exact integer semantics (``int_div``, ``int_rem``) and the float-to-int conversion (``float_to_int``)
are defined here too: every backend implements exactly these, and the oracle calls them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np

BACKENDS = ("llvm", "cuda", "nvptx", "rocm", "opencl", "vulkan", "metal", "webgpu", "hexagon")
FLOAT_TYPES = ("f16", "f32", "f64", "bf16")
INT_TYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")

# Operations with a promise. Integer and bool operations are always exact (integers wrap modulo 2^bits).
ARITH_OPS = ("add", "sub", "mul", "div", "mod")   # mod: float % is C's fmod (exact)
MATH_OPS = ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "fma", "abs",
            "min", "max", "floor", "ceil")
# subgroup_add: pk.subgroup_add of floats, the lanes' values summed in an order the device chooses.
SUBGROUP_OPS = ("subgroup_add",)
# mma: pk.mma's float sums (docs/language.md "Matrix fragments"), in an order and with internal rounding
# the matrix engine chooses; the bound a device meets is mma_error_bound (below).
MATRIX_OPS = ("mma",)
OPS = ARITH_OPS + MATH_OPS + ("cast",) + SUBGROUP_OPS + MATRIX_OPS

# Floating-point contraction: a*b+c is never fused into an fma unless the kernel calls fma() -- except
# on the backends listed here, whose source language cannot forbid it: WGSL has no NoContraction, and
# NVIDIA's Vulkan driver fuses naga's OpFMul + OpFAdd (lavapipe does not). There an add or sub whose
# operand is a product may be computed from the unrounded product (``Promise.may_contract``).
CONTRACTION_ALLOWED = False
MAY_CONTRACT = frozenset({"webgpu"})


def contraction_allowed(backend: str) -> bool:
    """Whether ``backend`` may fuse a*b+c (see MAY_CONTRACT)."""
    return CONTRACTION_ALLOWED or backend in MAY_CONTRACT


# Reassociation: float + and - are evaluated exactly as written, each rounded -- except on the backends
# listed here: WGSL does not forbid reassociating them, and naga's SPIR-V carries no NoContraction, so
# lavapipe computes (max(2.1, x) + 35.25) - 9.5 as max(2.1, x) + 25.75 (fuzz case fz11000223). There a
# float add/sub with an operand that is itself a float add/sub may be computed in any association, and
# so may a float product with an operand that is itself a product: naga->lavapipe computes
# (s * s) * -2.4 as s * (s * -2.4) (fuzz seed 33001069: -10234.7002, not -10234.6992).
MAY_REASSOCIATE = frozenset({"webgpu"})


def reassociation_allowed(backend: str) -> bool:
    """Whether ``backend`` may reassociate chains of float + and -, or of float * (see MAY_REASSOCIATE)."""
    return backend in MAY_REASSOCIATE


# IEEE specials (NaN, infinities, signed zeros) follow C99 Annex F on every backend except:
# - SPECIALS_NOT_PROMISED: WGSL lets an implementation assume finite math (naga/NVIDIA fold v - v to 0
#   for v = inf; lavapipe folds inf * 0.0 to 0). There a result that depends on a NaN/inf/-0 operand or
#   produces one is unspecified (the kernel still runs); every Promise of the backend has specials=False.
# - SPECIALS_NOT_PRESERVED_BY: devices of a backend whose driver ignores the SPIR-V execution mode
#   SignedZeroInfNanPreserve that polykern's shaders declare, keyed by a word of the device's name.
SPECIALS_NOT_PROMISED = frozenset({"webgpu"})
SPECIALS_NOT_PRESERVED_BY: Dict[str, Dict[str, str]] = {
    "vulkan": {
        "lavapipe": "Mesa 22.3 folds 0 * x to 0 for x = NaN/inf/-0 where it can see the zero, e.g. a "
                    "zero-initialized local, although the shader declares SignedZeroInfNanPreserve "
                    "(fuzz case fz12000023)",
    },
}


# Matrix fragments (pk.mma, docs/language.md "Matrix fragments"): d = a @ b + c is defined as exact
# products (f32 inputs first rounded to tf32, ir.matrix.round_tf32, so their products are exact too)
# added to c in k order, each add rounded to f32, an f16 accumulator rounded once at the end
# (polykern.ir.matrix.reference_mma: what the oracle and the CPU backends compute, bit for bit). Matrix
# engines (tensor cores, cooperative matrices, simdgroup matrices) add in their own order and with their
# own internal rounding (NVIDIA's truncates in places), so a device's d may differ from the reference by
# up to MMA_SUM_ULPS[acc] * (K + 1) * eps(acc) * (|a| @ |b| + |c|) elementwise (mma_error_bound): the
# classic bound of a sum of K + 1 terms in any order, twice over. Integer accumulators are exact
# (products exact, sums wrap modulo 2**32) everywhere.
MMA_SUM_ULPS = {"f32": 2.0, "f16": 2.0, "i32": 0.0}


def mma_error_bound(acc: str, a, b, c):
    """The largest difference (elementwise, float64) a backend's ``a @ b + c`` (of accumulator type
    ``acc``) may show from the reference; for a chain of mma into one accumulator, pass the
    concatenated A (columns) and B (rows) of all steps. f32 (tf32) inputs: their f32 values or their tf32
    roundings (the reference's products are those of the rounded values, within 2**-11 of these; the
    factor MMA_SUM_ULPS leaves room for that), not a device's unrounded products."""
    a64, b64 = np.abs(np.asarray(a, np.float64)), np.abs(np.asarray(b, np.float64))
    k = a64.shape[1]
    eps = float(np.finfo(_NP[acc]).eps) if acc in _NP else 0.0
    return MMA_SUM_ULPS[acc] * (k + 1) * eps * (a64 @ b64 + np.abs(np.asarray(c, np.float64)))


def specials_promised(backend: str, device_name: str = "") -> bool:
    """Whether NaN/inf/-0 follow IEEE 754 on ``backend`` running on the device named ``device_name``
    (a runtime's device description; "" for "any device of the backend", which is the table's promise)."""
    if backend not in BACKENDS:
        raise ValueError(f"numerics.specials_promised: unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if backend in SPECIALS_NOT_PROMISED:
        return False
    name = device_name.lower()
    return not any(word in name for word in SPECIALS_NOT_PRESERVED_BY.get(backend, {}))


@dataclass(frozen=True)
class Promise:
    ulp: float
    abs_err: float = 0.0
    domain: Optional[Tuple[float, float]] = None
    specials: bool = True
    may_flush_subnormals: bool = False
    ulp_growth: float = 0.0
    unfused_ok: bool = False
    may_contract: bool = False
    may_reassociate: bool = False


EXACT = Promise(0.0)

# ---------------------------------------------------------------------------------------------------
# The table. _LANGUAGE[op][dtype] is what every backend meets unless _BACKEND overrides it (a backend
# may be looser only where it is listed here, with the reason).

_F16_TRANSCENDENTAL = Promise(2.0)   # computed in f32 (or natively) and rounded to f16
_SUBGROUP_SUM = Promise(0.0, may_reassociate=True)

_LANGUAGE: Dict[str, Dict[str, Promise]] = {
    "add": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "sub": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "mul": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "div": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "mod": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "sqrt": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "rsqrt": {"f16": Promise(1.0), "f32": Promise(2.0), "f64": Promise(2.0)},
    "exp": {"f16": _F16_TRANSCENDENTAL, "f32": Promise(3.0), "f64": Promise(3.0)},
    "exp2": {"f16": _F16_TRANSCENDENTAL, "f32": Promise(3.0), "f64": Promise(3.0)},
    "log": {"f16": _F16_TRANSCENDENTAL, "f32": Promise(3.0), "f64": Promise(3.0)},
    "log2": {"f16": _F16_TRANSCENDENTAL, "f32": Promise(3.0), "f64": Promise(3.0)},
    "sin": {"f16": _F16_TRANSCENDENTAL, "f32": Promise(4.0), "f64": Promise(4.0)},
    "cos": {"f16": _F16_TRANSCENDENTAL, "f32": Promise(4.0), "f64": Promise(4.0)},
    "tanh": {"f16": _F16_TRANSCENDENTAL, "f32": Promise(5.0), "f64": Promise(5.0)},
    "pow": {"f16": _F16_TRANSCENDENTAL, "f32": Promise(16.0), "f64": Promise(16.0)},
    "fma": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "abs": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "min": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "max": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "floor": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "ceil": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    "cast": {"f16": EXACT, "f32": EXACT, "f64": EXACT},
    # Every add rounded, in an association the device chooses (a tree of shuffles, redux, the CPU's lane
    # order): the result is some rounded sum of the lanes' values, not one fixed order's.
    "subgroup_add": {"f16": _SUBGROUP_SUM, "f32": _SUBGROUP_SUM, "f64": _SUBGROUP_SUM},
    # The accumulator types (f64 has no fragments; listed so the table is complete). Not a per-element
    # ulp budget: the oracle leaves elements an mma fed unchecked, tests use mma_error_bound.
    "mma": {"f16": _SUBGROUP_SUM, "f32": _SUBGROUP_SUM, "f64": _SUBGROUP_SUM},
}

# Vulkan's precision table ("Precision and Operation of SPIR-V Instructions"); WGSL copies it. Drivers
# may flush subnormals (lavapipe does: no DenormPreserve) and GLSL.std.450 leaves NaN handling of
# min/max/pow open.
_SHADER_FLUSH = dict(may_flush_subnormals=True)
_SHADER = {
    "add": Promise(0.0, **_SHADER_FLUSH),
    "sub": Promise(0.0, **_SHADER_FLUSH),
    "mul": Promise(0.0, **_SHADER_FLUSH),
    "div": Promise(2.5, domain=(2.0 ** -126, 2.0 ** 126), **_SHADER_FLUSH),
    "sqrt": Promise(3.0, **_SHADER_FLUSH),
    "rsqrt": Promise(2.0, **_SHADER_FLUSH),
    "exp": Promise(3.0, ulp_growth=2.0, **_SHADER_FLUSH),
    "exp2": Promise(3.0, ulp_growth=2.0, **_SHADER_FLUSH),
    "log": Promise(3.0, abs_err=2.0 ** -21, **_SHADER_FLUSH),
    "log2": Promise(3.0, abs_err=2.0 ** -21, **_SHADER_FLUSH),
    "sin": Promise(4.0, abs_err=2.0 ** -11, domain=(-math.pi, math.pi), **_SHADER_FLUSH),
    "cos": Promise(4.0, abs_err=2.0 ** -11, domain=(-math.pi, math.pi), **_SHADER_FLUSH),
    "tanh": Promise(5.0, abs_err=2.0 ** -11, **_SHADER_FLUSH),
    "pow": Promise(16.0, ulp_growth=8.0, domain=(0.0, math.inf), **_SHADER_FLUSH),
    "fma": Promise(1.0, unfused_ok=True, **_SHADER_FLUSH),
    "abs": Promise(0.0, **_SHADER_FLUSH),
    "min": Promise(0.0, specials=False, **_SHADER_FLUSH),
    "max": Promise(0.0, specials=False, **_SHADER_FLUSH),
    "floor": Promise(0.0, **_SHADER_FLUSH),
    "ceil": Promise(0.0, **_SHADER_FLUSH),
    "cast": Promise(0.0, **_SHADER_FLUSH),
    "subgroup_add": Promise(0.0, may_reassociate=True, **_SHADER_FLUSH),
}

# Vulkan's table for 16-bit floats is looser (NVIDIA's f16 sin is ~7e-4 off near pi).
_SHADER_F16 = dict(_SHADER, **{
    "sin": Promise(4.0, abs_err=2.0 ** -7, domain=(-math.pi, math.pi), **_SHADER_FLUSH),
    "cos": Promise(4.0, abs_err=2.0 ** -7, domain=(-math.pi, math.pi), **_SHADER_FLUSH),
    "log": Promise(3.0, abs_err=2.0 ** -7, **_SHADER_FLUSH),
    "log2": Promise(3.0, abs_err=2.0 ** -7, **_SHADER_FLUSH),
})

# OpenCL C's full-profile table would allow 2.5 ulp for f32 division and 3 ulp for sqrt; the runtime
# builds with -cl-fp32-correctly-rounded-divide-sqrt on every device that reports
# CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (PoCL and NVIDIA do), so they are exact. A device without it
# keeps OpenCL's bounds: OPENCL_WITHOUT_CORRECT_ROUNDING.
OPENCL_WITHOUT_CORRECT_ROUNDING = {"div": Promise(2.5), "sqrt": Promise(3.0)}

_BACKEND: Dict[Tuple[str, str], Dict[str, Promise]] = {
    ("vulkan", "f32"): _SHADER,
    ("vulkan", "f16"): _SHADER_F16,
    # GLSL.std.450 Fma on doubles keeps Vulkan's "inherited from a*b+c" (lavapipe rounds twice); no
    # wider type exists to fuse it exactly as the f16/f32 path does.
    ("vulkan", "f64"): {"fma": Promise(0.0, unfused_ok=True)},
    ("webgpu", "f32"): _SHADER,
    ("webgpu", "f16"): _SHADER_F16,
    ("metal", "f32"): _SHADER,
    ("metal", "f16"): _SHADER_F16,
}


# ---------------------------------------------------------------------------------------------------
# Fast math (opt-in; docs/correctness.md "Fast math", docs/language.md "Fast math"). ``fast_<op>`` (the
# builtins pk.fast_exp ... pk.fast_div, or every f32 ``op`` of FAST_MATH_OPS under build(fast_math=True))
# may be computed by a faster, looser instruction; FAST_MATH says, per backend, which one and the promise
# it keeps. The promise of ``fast_<op>`` is that entry's for f32 and, where the backend has no entry or
# the type is not f32, the precise ``op``'s promise: passes/fast_math.py turns those back into ``op``.

FAST_MATH_OPS = ("exp", "exp2", "log", "log2", "rsqrt", "div")
FAST_PREFIX = "fast_"


@dataclass(frozen=True)
class FastMath:
    """What ``fast_<op>`` on f32 compiles to on one backend: ``lowering`` is the name its emitter prints or
    calls (a C function, an NVVM intrinsic, polykern's own expansion); ``promise`` the bound it keeps;
    ``source`` where the bound comes from (a vendor document, or measured here: tests/test_fast_math.py,
    tools/gpu/fast_math_bounds.py)."""

    lowering: str
    promise: Promise
    source: str


_FTZ = dict(may_flush_subnormals=True)
_DIV_DOMAIN = (2.0 ** -126, 2.0 ** 126)
# Not measured here (no NVIDIA GPU): from the vendor's documents, padded to whole ulps; a GPU machine
# measures them with tools/gpu/fast_math_bounds.py.
_CUDA_GUIDE = "CUDA C++ Programming Guide, intrinsics"
_PTX_ISA = "PTX ISA"
# Fast math on NVIDIA: the special-function unit (MUFU), flushing subnormals. exp(x) is ex2(x * log2 e):
# the rounded product moves the result by up to |x log2 e| * 2^-24 relatively, the ulp_growth term.
_NV_EXP = Promise(3.0, ulp_growth=1.0, **_FTZ)
_NV_EXP2 = Promise(3.0, **_FTZ)
_NV_LOG = Promise(3.0, abs_err=2.0 ** -21, **_FTZ)
_NV_RSQRT = Promise(3.0, **_FTZ)
_NV_DIV = Promise(2.0, domain=_DIV_DOMAIN, specials=False, **_FTZ)  # 0 or NaN for |y| > 2^126

FAST_MATH: Dict[str, Dict[str, FastMath]] = {
    "cuda": {
        "exp": FastMath("__expf", _NV_EXP, _CUDA_GUIDE + ": 2 + floor(1.173 abs(x)) ulp"),
        "exp2": FastMath("pk_fast_exp2", _NV_EXP2, _PTX_ISA + ": ex2.approx.ftz.f32, relative 2^-22.5"),
        "log": FastMath("__logf", _NV_LOG, _CUDA_GUIDE + ": abs 2^-21.41 in [0.5, 2], else 3 ulp"),
        "log2": FastMath("__log2f", _NV_LOG, _CUDA_GUIDE + ": abs 2^-22 in [0.5, 2], else 2 ulp"),
        "rsqrt": FastMath("pk_fast_rsqrt", _NV_RSQRT, _PTX_ISA + ": rsqrt.approx.ftz.f32, relative 2^-22.9"),
        "div": FastMath("__fdividef", _NV_DIV, _CUDA_GUIDE + ": 2 ulp for abs(y) in [2^-126, 2^126]"),
    },
    "nvptx": {
        "exp": FastMath("llvm.nvvm.ex2.approx.ftz.f", _NV_EXP, _PTX_ISA + ": ex2.approx of x * log2(e)"),
        "exp2": FastMath("llvm.nvvm.ex2.approx.ftz.f", _NV_EXP2, _PTX_ISA + ": ex2.approx, relative 2^-22.5"),
        "log": FastMath("llvm.nvvm.lg2.approx.ftz.f", _NV_LOG, _PTX_ISA + ": lg2.approx(x) * ln 2"),
        "log2": FastMath("llvm.nvvm.lg2.approx.ftz.f", _NV_LOG, _PTX_ISA + ": lg2.approx, abs 2^-22.6"),
        "rsqrt": FastMath("llvm.nvvm.rsqrt.approx.ftz.f", _NV_RSQRT, _PTX_ISA + ": rsqrt.approx, relative 2^-22.9"),
        "div": FastMath("llvm.nvvm.div.approx.ftz.f", _NV_DIV, _PTX_ISA + ": div.approx, 2 ulp for abs(y) in [2^-126, 2^126]"),
    },
    # OpenCL's native_* accuracy is the implementation's: these bounds are NVIDIA's (native_* is MUFU
    # there) and cover what PoCL measured (tests/test_fast_math.py).
    "opencl": {
        "exp": FastMath("pk_native_exp", _NV_EXP, "NVIDIA's MUFU bounds; PoCL measured here (native_exp, "
                        "a NaN returned first: PoCL folds native_exp of a NaN it can see to poison)"),
        "exp2": FastMath("pk_native_exp2", _NV_EXP2, "NVIDIA's MUFU bounds; PoCL measured here (native_exp2, "
                         "NaN returned first)"),
        "log": FastMath("native_log", _NV_LOG, "NVIDIA's MUFU bounds; PoCL measured here"),
        "log2": FastMath("native_log2", _NV_LOG, "NVIDIA's MUFU bounds; PoCL measured here"),
        "rsqrt": FastMath("native_rsqrt", _NV_RSQRT, "NVIDIA's MUFU bounds; PoCL measured here"),
        "div": FastMath("native_divide", _NV_DIV, "NVIDIA's MUFU bounds; PoCL measured here"),
    },
}
# Backends without an entry compile fast_<op> as <op>: the CPU (llvm: its precise f32 exp/exp2 are already
# the fast inline expansion, plain multiplies and adds that the work-item loops vectorize,
# codegen/cpu/vector_exp.py, 1.18 ulp measured; the rest has no cheaper form), Vulkan and WebGPU
# (GLSL.std.450 / WGSL builtins are already the driver's fast instructions, within the shader table
# above), ROCm (the AMDGPU backend already lowers f32 exp/log to the hardware instructions), Hexagon (no
# cheaper instruction), Metal (fast:: variants exist but no Metal device here could measure them).


def fast_op(op: str) -> str:
    """``op`` without the ``fast_`` prefix (``fast_exp`` -> ``exp``); other names unchanged."""
    base = op[len(FAST_PREFIX):] if op.startswith(FAST_PREFIX) else op
    return base if base in FAST_MATH_OPS else op


def fast_math(backend: str, op: str) -> Optional[FastMath]:
    """The fast lowering of f32 ``op`` (``exp`` or ``fast_exp``) on ``backend``, or None: it compiles
    as the precise ``op``."""
    return FAST_MATH.get(backend, {}).get(fast_op(op))


def _bf16(p: Promise) -> Promise:
    """bf16's promise from f32's: every bf16 operation is the f32 operation rounded once to bf16
    (docs/language.md "bf16"), so an exact f32 operation stays exact and an inexact one (a few f32 ulps,
    2^-16 of a bf16 ulp each) may move the result to a neighbouring bf16: 1 ulp."""
    if p.ulp == 0 and not p.ulp_growth:
        return p
    return dataclasses.replace(p, ulp=1.0, ulp_growth=0.0)


def promise(op: str, dtype: str, backend: str, fast_math: bool = False) -> Promise:
    """The promise for ``op`` on values of ``dtype`` compiled for ``backend``.

    Integer and bool dtypes get the exact promise for every op; bf16 derives from f32 (:func:`_bf16`).
    ``fast_<op>`` (FAST_MATH_OPS) is the fast-math promise; ``fast_math=True`` (a build with
    ``fast_math=True``) gives it for ``op`` too. Unknown names raise ``ValueError``.
    """
    if fast_math and op in FAST_MATH_OPS:
        op = FAST_PREFIX + op
    if op != fast_op(op):
        entry = FAST_MATH.get(backend, {}).get(fast_op(op))
        if entry is not None and dtype in ("f32", "bf16"):
            p = entry.promise
            if backend in SPECIALS_NOT_PROMISED:
                p = dataclasses.replace(p, specials=False)
            return _bf16(p) if dtype == "bf16" else p
        return promise(fast_op(op), dtype, backend)
    if dtype == "bf16" and backend in BACKENDS and op in OPS:
        return _bf16(promise(op, "f32", backend))
    if backend not in BACKENDS:
        raise ValueError(f"numerics.promise: unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if op not in OPS:
        raise ValueError(f"numerics.promise: unknown operation {op!r} (known: {', '.join(OPS)})")
    if dtype in INT_TYPES or dtype == "bool":
        return EXACT
    if dtype not in FLOAT_TYPES:
        raise ValueError(f"numerics.promise: unknown dtype {dtype!r}")
    over = _BACKEND.get((backend, dtype), {})
    p = over[op] if op in over else _LANGUAGE[op][dtype]
    if op in ("add", "sub") and backend in MAY_CONTRACT:
        p = dataclasses.replace(p, may_contract=True)
    if op in ("add", "sub", "mul") and backend in MAY_REASSOCIATE:
        p = dataclasses.replace(p, may_reassociate=True)
    if backend in SPECIALS_NOT_PROMISED:
        p = dataclasses.replace(p, specials=False)
    return p


# ---------------------------------------------------------------------------------------------------
# Comparing a result with the reference under a promise.

# bf16 values are f32 values with 8 significant bits (the same exponent range, so the same subnormal
# range); ulp_of computes bf16's spacing itself.
_NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.float32}


def ulp_of(ref, dtype: str):
    """The spacing of ``dtype`` at ``ref`` (elementwise; the smallest subnormal spacing at 0)."""
    if dtype == "bf16":  # 8 significant bits, f32's exponent range: 2^(e - 7), at least 2^-133
        r = np.abs(np.asarray(ref, dtype=np.float64))
        with np.errstate(invalid="ignore"):
            gap = np.maximum(np.ldexp(1.0, np.frexp(r)[1] - 8), 2.0 ** -133)
        return np.where(np.isfinite(r), gap, np.nan)
    t = _NP[dtype]
    r = np.abs(np.asarray(ref, dtype=t))
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.spacing(r).astype(np.float64)
        # at the type's maximum np.spacing is inf (the next value is inf): the spacing is the gap below
        top = np.isinf(gap) & np.isfinite(r)
        return np.where(top, r.astype(np.float64) - np.nextafter(r, t(0)).astype(np.float64), gap)


def exponent_argument(op: str, args) -> np.ndarray:
    """``t`` of the module docstring for ``op`` applied to ``args`` (a tuple of arrays)."""
    with np.errstate(all="ignore"):
        if op in ("exp", "exp2"):
            return np.abs(np.asarray(args[0], np.float64)) * (1.4426950408889634 if op == "exp" else 1.0)
        if op == "pow":
            x = np.asarray(args[0], np.float64)
            y = np.asarray(args[1], np.float64)
            return np.abs(y * np.log2(np.abs(x))) + np.abs(y)
    return np.zeros(np.shape(np.asarray(args[0])) if args else ())


def allowed_error(p: Promise, op: str, dtype: str, ref, args=()):
    """The largest absolute difference from ``ref`` that ``p`` allows (elementwise, float64)."""
    budget = p.ulp
    if p.ulp_growth:
        budget = budget + p.ulp_growth * np.nan_to_num(exponent_argument(op, args), posinf=1e300)
    return np.maximum(budget * ulp_of(ref, dtype), p.abs_err)


def in_domain(p: Promise, op: str, args):
    """Elementwise: whether the domain argument lies in ``p.domain`` (all True without a domain).

    The domain argument is the first argument, except for ``div``: the divisor's magnitude ``|y|``.
    """
    if op == "div" and len(args) > 1:
        x = np.abs(np.asarray(args[1], np.float64))
    else:
        x = np.asarray(args[0], np.float64) if args else np.float64(0)
    if p.domain is None:
        return np.ones(np.shape(x), bool)
    lo, hi = p.domain
    return (x >= lo) & (x <= hi)


def agrees(p: Promise, op: str, dtype: str, got, ref, args=()):
    """Elementwise: whether ``got`` meets promise ``p`` against the exact-rounded ``ref``.

    NaN must meet NaN and an infinity the same infinity (where ``p.specials``; a signed zero meets
    either zero). Outside ``p.domain`` only finite-vs-non-finite agreement is checked. With
    ``p.may_flush_subnormals`` a result within the bound of ``ref`` with subnormals flushed also
    agrees, and any result of a subnormal input does.
    """
    g = np.asarray(got, np.float64)
    r = np.asarray(ref, np.float64)
    with np.errstate(all="ignore"):
        tol = allowed_error(p, op, dtype, r, args)
        close = np.abs(g - r) <= tol
        same_special = (np.isnan(g) & np.isnan(r)) | (np.isinf(g) & (g == r))
        finite_both = np.isfinite(g) & np.isfinite(r)
        ok = np.where(finite_both, close, same_special) | (g == r)  # the exact result always agrees
        if not p.specials:
            special_in = ~np.isfinite(r)
            for a in args:
                special_in = special_in | ~np.isfinite(np.asarray(a, np.float64))
            ok = ok | special_in
        outside = ~in_domain(p, op, args) if args else np.zeros(np.shape(r), bool)
        ok = np.where(outside, np.isfinite(g) == np.isfinite(r), ok) if p.domain is not None else ok
        if p.unfused_ok and op == "fma" and len(args) == 3:  # a*b rounded, then + c rounded
            t = _NP[dtype]
            with np.errstate(all="ignore"):
                prod = (np.asarray(args[0], t) * np.asarray(args[1], t)).astype(t)
                ru = np.asarray((prod + np.asarray(args[2], t)).astype(t), np.float64)
            ok = ok | (np.abs(g - ru) <= np.maximum(allowed_error(p, op, dtype, ru, args), 0)) | (
                np.isnan(g) & np.isnan(ru)) | (np.isinf(g) & (g == ru))
        if p.may_flush_subnormals:
            rf = np.asarray(flush_subnormals(r, dtype), np.float64)
            ok = ok | (finite_both & (np.abs(g - rf) <= tol))
            for a in args:
                ok = ok | is_subnormal(a, dtype)
    return ok


def is_subnormal(x, dtype: str):
    """Elementwise: whether ``x`` (as ``dtype``) is a nonzero subnormal."""
    t = _NP[dtype]
    with np.errstate(over="ignore"):
        a = np.abs(np.asarray(x, dtype=t))
    return (a < np.finfo(t).tiny) & (a != 0)


def flush_subnormals(x, dtype: str):
    """``x`` with every subnormal of ``dtype`` replaced by a zero of the same sign."""
    t = _NP[dtype]
    a = np.asarray(x, dtype=t)
    tiny = np.finfo(t).tiny
    return np.where((np.abs(a) < tiny) & (a != 0), np.copysign(t(0), a), a).astype(t)


# ---------------------------------------------------------------------------------------------------
# Exact integer and conversion semantics (what every backend implements; the oracle calls these).

def int_range(dtype: str) -> Tuple[int, int]:
    bits = int(dtype[1:])
    if dtype[0] == "u":
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def wrap(value: int, dtype: str) -> int:
    """``value`` reduced modulo 2^bits into ``dtype``'s range (two's complement)."""
    bits = int(dtype[1:])
    v = value & ((1 << bits) - 1)
    if dtype[0] == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def int_div(a: int, b: int, dtype: str) -> int:
    """``a // b`` in a kernel: truncates toward zero; ``x // 0 == x``; ``MIN // -1 == MIN`` (wraps)."""
    if b == 0:
        return a
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    return wrap(q, dtype)


def int_rem(a: int, b: int, dtype: str) -> int:
    """``a % b`` in a kernel: sign of the dividend (C's ``%``); ``x % 0 == 0``; ``MIN % -1 == 0``."""
    if b == 0:
        return 0
    r = abs(a) % abs(b)
    return wrap(-r if a < 0 else r, dtype)


def float_to_int(x: float, dtype: str) -> int:
    """Conversion of a float to ``dtype``: truncates toward zero, saturates at the type's range, NaN -> 0."""
    if math.isnan(x):
        return 0
    lo, hi = int_range(dtype)
    if math.isinf(x):
        return hi if x > 0 else lo
    v = math.trunc(x)
    return min(max(v, lo), hi)


def saturation_bounds(float_dtype: str, int_dtype: str) -> Tuple[float, float]:
    """``(lo, hi)`` floats of ``float_dtype``: a value ``< lo`` becomes MIN, a value ``>= hi`` becomes MAX.

    Both are exact powers of two (``lo`` is 0 for unsigned types: a value in (-1, 0) truncates to 0
    anyway), so comparing in the float type never rounds. ``hi`` may be ``inf`` when the
    float type cannot reach the integer's maximum (f16 to i32: every finite f16 fits).
    """
    lo_i, hi_i = int_range(int_dtype)
    t = _NP[float_dtype]
    fmax = float(np.finfo(t).max)
    hi = float(hi_i + 1)            # 2^(bits-1) or 2^bits: exactly representable in every float type
    hi = hi if hi <= fmax else math.inf
    lo = float(lo_i) if lo_i else 0.0
    lo = lo if -lo <= fmax else -math.inf
    return lo, hi


# Integer division by zero is *defined* (WGSL's choice): x // 0 == x, x % 0 == 0. Undefined behaviour
# here would trap the host process on the CPU backend (x86 idiv raises SIGFPE) and give driver-dependent
# values on GPUs; a defined value costs one select per division and lets the fuzzer divide freely.
INT_DIV_BY_ZERO = "x // 0 == x, x % 0 == 0"


DOC_BEGIN = "<!-- numerics table: generated by polykern.numerics.markdown_table(); do not edit -->"
DOC_END = "<!-- end of numerics table -->"


def markdown_table() -> str:
    """The promises as a markdown table (docs/correctness.md embeds it between DOC_BEGIN and DOC_END)."""
    lines = ["| op | dtype | " + " | ".join(BACKENDS) + " |",
             "|---|---|" + "---|" * len(BACKENDS)]
    for op in OPS:
        for dt in FLOAT_TYPES:
            cells = [describe(promise(op, dt, b)) for b in BACKENDS]
            lines.append(f"| {op} | {dt} | " + " | ".join(cells) + " |")
    lines.append("")
    for backend, drivers in sorted(SPECIALS_NOT_PRESERVED_BY.items()):
        for word, why in sorted(drivers.items()):
            lines.append(f"- {backend} on a device whose name has \"{word}\": NaN unspec. for every op ({why}).")
    return "\n".join(lines) + "\n"


FAST_DOC_BEGIN = "<!-- fast math table: generated by polykern.numerics.fast_math_table(); do not edit -->"
FAST_DOC_END = "<!-- end of fast math table -->"


def fast_math_table() -> str:
    """FAST_MATH as a markdown table (docs/correctness.md embeds it between FAST_DOC_BEGIN and FAST_DOC_END)."""
    lines = ["| backend | f32 op | lowering | promise | bound from |", "|---|---|---|---|---|"]
    for backend in BACKENDS:
        for op in FAST_MATH_OPS:
            entry = fast_math(backend, op)
            if entry is not None:
                lines.append(f"| {backend} | {op} | `{entry.lowering}` | "
                             f"{describe(promise(FAST_PREFIX + op, 'f32', backend))} | {entry.source} |")
    rest = [b for b in BACKENDS if b not in FAST_MATH]
    lines += ["", f"- {', '.join(rest)}: no fast lowering; `fast_<op>` is `<op>`, with its promise.",
              "- The ops a backend does not list: `fast_<op>` is `<op>`, with its promise; so is every f16 and f64 one (bf16 is f32 rounded once)."]
    return "\n".join(lines) + "\n"


def describe(p: Promise) -> str:
    """``p`` as a table cell ("3 ulp, abs 2^-21, FTZ")."""
    parts = ["exact" if p.ulp == 0 and not p.ulp_growth and not p.abs_err else f"{p.ulp:g} ulp"]
    if p.ulp_growth:
        parts[0] += f" + {p.ulp_growth:g}·\\|t\\|"
    if p.abs_err:
        parts.append(f"abs 2^{math.log2(p.abs_err):g}")
    if p.domain is not None:
        lo, hi = p.domain
        parts.append(f"in [{_num(lo)}, {_num(hi)}]")
    if not p.specials:
        parts.append("NaN unspec.")
    if p.unfused_ok:
        parts.append("may be unfused")
    if p.may_flush_subnormals:
        parts.append("FTZ")
    if p.may_contract:
        parts.append("may contract a*b+c")
    if p.may_reassociate:
        parts.append("may reassociate")
    return ", ".join(parts)


def _num(v: float) -> str:
    if v in (math.pi, -math.pi):
        return "-π" if v < 0 else "π"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if v and abs(v) >= 2 ** 20:
        return ("-" if v < 0 else "") + f"2^{math.log2(abs(v)):g}"
    return f"{v:g}"
