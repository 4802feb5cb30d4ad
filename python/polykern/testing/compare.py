"""Comparing a backend's buffers with the oracle's (``polykern.testing.interp``).

Exact elements must match (NaN matches NaN; -0.0 equals +0.0: no operation the generator emits
promises the sign of a zero on every backend). Elements computed by one inexact operation from exact operands are allowed
that operation's error on that backend, ``polykern.numerics.promise(op, dtype, backend)`` (its fast-math
promise for a ``fast_<op>``, and for every op of ``numerics.FAST_MATH_OPS`` when the build had
``fast_math=True``); elements
that mix several inexact operations are not compared (the generator avoids them), and are counted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import numpy as np

from .. import numerics
from ..ir.bfloat16 import bits_to_f32, is_bf16_dtype
from .interp import Result


@dataclass
class Mismatch:
    buffer: str
    index: int
    expected: object
    got: object
    allowed: str  # "exact" or the budget that was applied

    def __str__(self) -> str:
        return f"{self.buffer}[{self.index}]: oracle {self.expected!r}, got {self.got!r} ({self.allowed})"


@dataclass
class Comparison:
    mismatches: List[Mismatch] = field(default_factory=list)
    unchecked: int = 0
    extra: int = 0  # mismatches beyond the listed ones

    @property
    def ok(self) -> bool:
        return not self.mismatches


def _same(a, b, is_float: bool) -> bool:
    if is_float and a != a:
        return b != b
    return a == b


def _within(direct, operands, ref, got, backend: str, fast_math: bool = False) -> Tuple[bool, str]:
    """Does ``got`` meet the promise of one inexact operation ``direct`` = (op, dtype) on ``backend``
    (built with ``fast_math``)?"""
    op, dtype = direct
    p = numerics.promise(op, dtype, backend, fast_math)
    text = f"{op}({dtype}) on {backend}{' with fast math' if fast_math else ''}: {p}"
    op = numerics.fast_op(op)  # fast_exp's bound reads its argument as exp's does
    ok = bool(numerics.agrees(p, op, dtype, got, ref, operands))
    if not ok and op == "fma" and p.unfused_ok:  # the product may be rounded before the add
        a, b, c = operands
        t = {"f16": np.float16, "f64": np.float64}.get(dtype, np.float32)  # bf16: its f32 operation
        with np.errstate(all="ignore"):
            unfused = float(t(float(t(a * b)) + c))
        ok = bool(numerics.agrees(p, "add", dtype, got, unfused, ()))
    return ok, text


def may_differ_anywhere(oracle: Result, backend: str, device: str = "") -> bool:
    """A subnormal appeared in a type whose arithmetic this backend may flush, an a*b+c this backend
    may contract or an add/sub chain this backend may reassociate or a float
    operation that saw or made a NaN/inf where this backend on ``device`` (a device description) does
    not promise IEEE specials reached control flow or an index, or an operation whose result no backend
    promises (Result.unspecified) did: any value may differ (the oracle models none of these)."""
    if oracle.contracted_anywhere and numerics.contraction_allowed(backend):
        return True
    if oracle.chained_anywhere and numerics.reassociation_allowed(backend):
        return True
    if oracle.special_anywhere and not numerics.specials_promised(backend, device):
        return True
    if oracle.unspecified_anywhere:
        return True
    return any(numerics.promise("add", dt, backend).may_flush_subnormals for dt in oracle.subnormal)


def loose_elements(oracle: Result, backend: str, device: str = "") -> Dict[str, np.ndarray]:
    """Per buffer: the elements whose value this backend on ``device`` may compute differently, as
    a float operation that fed it saw or made a NaN/inf where specials are not promised, an add/sub
    chain fed it where reassociation is allowed, an a*b+c fed it where contraction is allowed, or an
    operation no backend promises fed it (the other
    elements stay exact or within a promise)."""
    out: Dict[str, np.ndarray] = {}
    masks = [oracle.unspecified]  # no backend promises these (pk.min/pk.max of +0 and -0)
    if not numerics.specials_promised(backend, device):
        masks.append(oracle.special)
    if numerics.reassociation_allowed(backend):
        masks.append(oracle.chained)
    if numerics.contraction_allowed(backend):
        masks.append(oracle.contracted)
    for m in masks:
        for name, loose in m.items():
            out[name] = out[name] | loose if name in out else loose
    return out


def compare(oracle: Result, got: Dict[str, np.ndarray], backend: str, names=None,
            limit: int = 20, device: str = "", fast_math: bool = False) -> Comparison:
    """Compare ``got`` (buffer name -> array after the launch on ``backend``, on the device described
    by ``device``, of a build with ``fast_math``) with the oracle's."""
    out = Comparison()
    if may_differ_anywhere(oracle, backend, device):
        out.unchecked = sum(len(v) for v in oracle.buffers.values())
        return out
    loose_by_name = loose_elements(oracle, backend, device)
    for name in (names if names is not None else sorted(oracle.buffers)):
        ref = oracle.buffers[name]
        arr = np.asarray(got[name]).reshape(-1)
        if is_bf16_dtype(ref.dtype):  # compared as the f32 values (every NaN meets every NaN)
            ref, arr = bits_to_f32(ref), bits_to_f32(arr)
        taint = oracle.taint.get(name)
        is_float = ref.dtype.kind == "f"
        loose = loose_by_name.get(name)
        if loose is not None and not loose.any():
            loose = None
        if loose is not None:
            out.unchecked += int(loose.sum())  # not compared
        if taint is None and not is_float:
            if arr.shape != ref.shape:
                bad = range(len(ref))
            else:
                bad = np.nonzero((arr != ref) & (~loose if loose is not None else True))[0]
            for i in bad[:limit]:
                out.mismatches.append(Mismatch(name, int(i), ref[i].item(), arr[i].item() if i < len(arr) else None,
                                               "exact"))
            out.extra += max(0, len(bad) - limit)
            continue
        for i in range(len(ref)):
            if loose is not None and loose[i]:
                continue
            r, g = ref[i].item(), arr[i].item()
            t = taint[i] if taint is not None else None
            if t is None:
                ok, allowed = _same(r, g, is_float), "exact"
            else:
                direct, tags, operands = t
                if direct is None:
                    if all(numerics.promise(op, dt, backend, fast_math).ulp == 0 and not numerics.promise(
                           op, dt, backend, fast_math).may_reassociate for op, dt in tags):
                        ok, allowed = _same(r, g, is_float), "exact"
                    else:
                        out.unchecked += 1
                        continue
                else:
                    ok, allowed = _within(direct, operands, r, g, backend, fast_math) if is_float else (r == g, "exact")
            if not ok:
                if len(out.mismatches) < limit:
                    out.mismatches.append(Mismatch(name, i, r, g, allowed))
                else:
                    out.extra += 1
    return out
