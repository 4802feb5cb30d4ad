"""Whether a Vulkan device's GLSL.std.450 ``Fma`` is fused, measured once per device.

Vulkan promises ``Fma`` only the precision of ``a * b + c`` (two roundings), so an f32 ``pk.fma`` is
computed in f64 (lower_arith.py ``fused_multiply_add``). On a device whose ``Fma`` is one fused
instruction (NVIDIA's FFMA) that costs three conversions, a DMUL and a DADD per fma: the shader holds both
paths and specialization constant 4 picks one at pipeline creation. This module sets it: a kernel computes
``Fma`` on inputs where one rounding and two give different f32 results (products with bits below f32's
precision, cancelled by the addend) and the device is "fused" only if every result is the once-rounded
one. Anything that fails while measuring counts as "not fused" (the f64 path is correct everywhere).
"""
from __future__ import annotations

import threading

import numpy as np

import polykern as pk
from polykern import Buffer, f32

__all__ = ["fused", "PROBE_INPUTS"]

# (a, b, c) in f32 with a * b exact in f64 and fma(a, b, c) != round(round(a * b) + c)
PROBE_INPUTS = [
    (1 + 2.0 ** -12, 1 + 2.0 ** -12, -(1 + 2.0 ** -11)),      # fused 2^-24, twice rounded 0
    (1 + 2.0 ** -23, 1 - 2.0 ** -23, -1.0),                    # fused -2^-46, twice rounded 0
    (3 * (1 + 2.0 ** -22), 1 + 2.0 ** -21, -3 * (1 + 2.0 ** -21 + 2.0 ** -22)),
    (-(1 + 2.0 ** -13), 1 + 2.0 ** -13, 1 + 2.0 ** -12),      # fused -2^-26, twice rounded 0
]

_lock = threading.RLock()
_ATTR = "fma_fused_measured"
_MEASURING = "measuring"


@pk.kernel
def fma_probe(x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    y[i] = pk.fma(x[3 * i], x[3 * i + 1], x[3 * i + 2])


def _expected(x: np.ndarray) -> np.ndarray:
    a, b, c = (x[:, i].astype(np.float64) for i in range(3))
    return (a * b + c).astype(np.float32)  # a * b is exact in f64 and each sum here is exact too


def _measure() -> bool:
    """Run the probe through the ordinary path (build, launch); its pipeline asks :func:`fused`, which
    answers True while measuring, so the probe's own ``Fma`` is the device's GLSL Fma."""
    built = pk.build([fma_probe], targets=["vulkan"])
    x = np.array(PROBE_INPUTS, np.float32)
    y = np.zeros(len(x), np.float32)
    built["fma_probe"](x.ravel(), y, grid=len(x), block=1)
    return bool(np.array_equal(y, _expected(x)))


def fused(dev) -> bool:
    """True where ``dev``'s GLSL Fma rounded once on every probe input (cached on the device)."""
    with _lock:
        known = getattr(dev, _ATTR, None)
        if known == _MEASURING:  # the probe's own pipeline (this thread holds the lock)
            return True
        if known is None:
            setattr(dev, _ATTR, _MEASURING)
            try:
                known = _measure()
            except Exception:  # noqa: BLE001 - measuring must never break a launch: the f64 path is correct
                known = False
            setattr(dev, _ATTR, known)
        return known
