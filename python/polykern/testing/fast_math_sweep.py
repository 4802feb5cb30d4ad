"""Measuring fast math (docs/correctness.md "Fast math"): each ``pk.fast_<op>`` of ``numerics.FAST_MATH_OPS``
run over many f32 inputs on one target, against the correctly rounded result, checked against
``numerics.promise("fast_<op>", "f32", backend)``. tests/test_fast_math.py runs it on every runtime here,
tools/gpu/fast_math_bounds.py on the CUDA targets of a GPU machine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32

from .. import capabilities, numerics

__all__ = ["Sweep", "kernels", "inputs", "reference", "sweep", "run_sweeps"]

_F32 = np.float32


@dataclass
class Sweep:
    """One op on one backend: the largest error seen in ulps of the correctly rounded result (normal
    results, inputs in the promise's domain), where, the largest fraction of the promise's allowed error
    any result used, and how many results the promise refused."""

    op: str
    backend: str
    count: int
    max_ulp: float
    used: float
    worst_input: Tuple[float, ...]
    failures: int
    first_failure: str

    def line(self) -> str:
        p = numerics.promise(numerics.FAST_PREFIX + self.op, "f32", self.backend)
        verdict = "ok" if not self.failures else f"{self.failures} OUTSIDE the promise, e.g. {self.first_failure}"
        return (f"{self.backend:7} fast_{self.op:6} n={self.count:7}  max {self.max_ulp:7.2f} ulp at "
                f"{self.worst_input}, {self.used:.0%} of the promise ({numerics.describe(p).replace(chr(92), '')}): "
                f"{verdict}")


def _unary(fast):
    """``y[i] = fast(x[i])`` for the builtin ``fast``."""
    @pk.kernel
    def fast_unary_sweep(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
        i = pk.global_id(0)
        if i < n:
            y[i] = fast(x[i])
    return fast_unary_sweep


@pk.kernel
def fast_div_sweep(n: i32, x: Buffer[f32, "readonly"], z: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = pk.fast_div(x[i], z[i])


def kernels():
    """``{op: kernel}``: ``y[i] = pk.fast_<op>(x[i])`` (``fast_div``: of ``x[i]`` and ``z[i]``)."""
    return {op: fast_div_sweep if op == "div" else _unary(getattr(pk, numerics.FAST_PREFIX + op))
            for op in numerics.FAST_MATH_OPS}


_SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-40, -1e-40, 2.0 ** -126, 3.4e38]


def _bits(rng, n: int, lo: int, hi: int) -> np.ndarray:
    """``n`` f32 whose bit patterns are uniform in [lo, hi] (every binade equally often)."""
    return rng.integers(lo, hi, n, endpoint=True, dtype=np.int64).astype(np.uint32).view(_F32)


def inputs(op: str, n: int, seed: int = 1) -> Tuple[np.ndarray, ...]:
    """The arguments of ``fast_<op>``: ``n`` random values where the op is interesting, plus specials."""
    rng = np.random.default_rng(seed)
    half = n // 2
    if op == "exp":
        x = np.concatenate([rng.uniform(-104, 89, half), rng.uniform(-2, 2, n - half)])
    elif op == "exp2":
        x = np.concatenate([rng.uniform(-151, 129, half), rng.uniform(-2, 2, n - half)])
    elif op in ("log", "log2", "rsqrt"):
        x = np.concatenate([_bits(rng, half, 1, 0x7F7FFFFF), rng.uniform(0.5, 2.0, n - half)])
    elif op == "div":
        a = _bits(rng, n, 0, 0x7F7FFFFF) * rng.choice(_F32([-1, 1]), n)
        b = np.concatenate([_bits(rng, half, 1, 0x7F7FFFFF), rng.uniform(0.25, 4.0, n - half)])
        sa = np.array([s for s in _SPECIALS for _ in _SPECIALS], _F32)
        sb = np.array([s for _ in _SPECIALS for s in _SPECIALS], _F32)
        return (np.concatenate([a.astype(_F32), sa]), np.concatenate([b.astype(_F32), sb]))
    else:
        raise ValueError(f"fast_math_sweep.inputs: unknown op {op!r} (known: {', '.join(numerics.FAST_MATH_OPS)})")
    return (np.concatenate([x.astype(_F32), np.array(_SPECIALS, _F32)]),)


def reference(op: str, args) -> np.ndarray:
    """The correctly rounded f32 result (computed in float64: within 2^-29 relative, then rounded once;
    for ``div`` the float64 quotient rounded to f32 is the correctly rounded one)."""
    x = np.asarray(args[0], np.float64)
    with np.errstate(all="ignore"):
        if op == "div":
            r = x / np.asarray(args[1], np.float64)
        elif op == "rsqrt":
            r = 1.0 / np.sqrt(x)
        else:
            r = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2}[op](x)
        return r.astype(_F32)


def sweep(op: str, backend: str, got, args) -> Sweep:
    """Check ``got`` (the device's ``fast_<op>`` of ``args``) on ``backend`` against its promise."""
    got = np.asarray(got, _F32)
    ref = reference(op, args)
    p = numerics.promise(numerics.FAST_PREFIX + op, "f32", backend)
    ok = numerics.agrees(p, op, "f32", got, ref, args)
    g, r = got.astype(np.float64), ref.astype(np.float64)
    with np.errstate(all="ignore"):
        judged = np.isfinite(g) & np.isfinite(r) & numerics.in_domain(p, op, args)
        if p.may_flush_subnormals:  # subnormal inputs and results may be flushed: not measured
            judged &= np.abs(r) >= np.finfo(_F32).tiny
            for a in args:
                judged &= ~numerics.is_subnormal(a, "f32")
        err = np.where(judged, np.abs(g - r), 0.0)
        ulps = np.where(judged, err / numerics.ulp_of(ref, "f32"), 0.0)
        allowed = numerics.allowed_error(p, op, "f32", r, args)
        used = np.where(judged & (err > 0), err / np.where(allowed > 0, allowed, np.nan), 0.0)
        used = np.where(np.isnan(used), np.inf, used)  # an error where the promise is exact
    worst = int(np.argmax(ulps)) if len(ulps) else 0
    bad = np.nonzero(~ok)[0]
    first = ""
    if len(bad):
        i = int(bad[0])
        first = f"{op}{tuple(float(a[i]) for a in args)} = {float(got[i])!r}, correctly rounded {float(ref[i])!r}"
    return Sweep(op, backend, len(got), float(ulps.max(initial=0.0)), float(used.max(initial=0.0)),
                 tuple(float(a[worst]) for a in args), len(bad), first)


def run_sweeps(target: str, n: int = 200_000, seed: int = 1, device: str = "") -> Dict[str, Sweep]:
    """Build ``kernels()`` for ``target`` and sweep every op on its runtime (``device``: a module kind
    or device name for ``module.on``; default the target's module kind)."""
    from polykern.target import Target

    t = Target.parse(target)
    backend = capabilities.of(t.kind).numerics
    out = {}
    for op, k in kernels().items():
        args = inputs(op, n, seed)
        mod = pk.build([k], [target]).on(device or t.module_kind)
        y = np.zeros_like(args[0])
        size = len(y)
        mod[k.name](size, *args, y, grid=max(1, (size + 255) // 256), block=256)
        out[op] = sweep(op, backend, y, args)
    return out
