"""The four benchmark kernels (the ones in examples/, which users copy) with their problem sizes,
inputs, NumPy references and the bytes each one must move (for bandwidth fractions)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List

import numpy as np

from common import ROOT  # noqa: F401  (puts examples/ on sys.path)
from matmul import TILE, matmul
from reduction import BLOCK as RBLOCK
from reduction import block_sum
from saxpy import saxpy
from stencil2d import jacobi

BLOCK = 256


@dataclass
class Problem:
    name: str
    kernel: object  # the @pk.kernel
    memory_bound: bool
    make: Callable[[np.random.Generator, bool], Dict[str, object]]  # (rng, quick) -> inputs
    launch: Callable[[object, Dict[str, object]], None]  # (polykern kernel handle, inputs)
    numpy: Callable[[Dict[str, object]], object]
    check: Callable[[Dict[str, object]], None]  # after a polykern launch on fresh inputs
    nbytes: Callable[[Dict[str, object]], int]  # bytes a perfect implementation moves


def _saxpy_make(rng, quick):
    n = (1 << 20) if quick else (1 << 24)
    return {"n": n, "a": np.float32(2.5), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32)}


def _saxpy_launch(k, d):
    n = d["n"]
    k(n, d["a"], d["x"], d["y"], grid=(n + BLOCK - 1) // BLOCK, block=BLOCK)


def _saxpy_np(d):
    y = d["y"]  # in place, no temporaries allocated per call: two passes over memory
    np.multiply(d["x"], d["a"], out=d.setdefault("_t", np.empty_like(y)))
    np.add(d["_t"], y, out=y)


def _saxpy_check(d):
    y0 = d["y"].copy()
    _saxpy_launch(d["_k"], d)
    np.testing.assert_allclose(d["y"], d["a"] * d["x"] + y0, rtol=1e-5, atol=1e-5)


def _red_make(rng, quick):
    n = (1 << 20) if quick else (1 << 24)
    return {"n": n, "x": rng.random(n, dtype=np.float32), "out": np.zeros(1, np.float32)}


def _red_launch(k, d):
    n = d["n"]
    d["out"][0] = 0
    k(n, d["x"], d["out"], grid=(n + RBLOCK - 1) // RBLOCK, block=RBLOCK)


def _red_check(d):
    _red_launch(d["_k"], d)
    np.testing.assert_allclose(d["out"][0], d["x"].astype(np.float64).sum(), rtol=1e-3)


def _mm_make(rng, quick):
    s = 256 if quick else 512
    return {"m": s, "n": s, "k": s, "a": rng.standard_normal((s, s), dtype=np.float32),
            "b": rng.standard_normal((s, s), dtype=np.float32), "c": np.zeros((s, s), np.float32)}


def _mm_launch(k, d):
    m, n = d["m"], d["n"]
    k(m, n, d["k"], d["a"], d["b"], d["c"], grid=((n + TILE - 1) // TILE, (m + TILE - 1) // TILE),
      block=(TILE, TILE))


def _mm_check(d):
    _mm_launch(d["_k"], d)
    np.testing.assert_allclose(d["c"], d["a"] @ d["b"], rtol=1e-3, atol=1e-3)


def _st_make(rng, quick):
    h, w = (512, 512) if quick else (4096, 4096)
    return {"h": h, "w": w, "src": rng.random((h, w), dtype=np.float32), "dst": np.zeros((h, w), np.float32)}


def _st_launch(k, d):
    h, w = d["h"], d["w"]
    k(h, w, d["src"], d["dst"], grid=((w + 15) // 16, (h + 15) // 16), block=(16, 16))


def _st_np(d):
    a, out = d["src"], d["dst"]
    out[0], out[-1], out[:, 0], out[:, -1] = a[0], a[-1], a[:, 0], a[:, -1]
    c = out[1:-1, 1:-1]
    np.add(a[1:-1, 1:-1], a[1:-1, :-2], out=c)
    c += a[1:-1, 2:]
    c += a[:-2, 1:-1]
    c += a[2:, 1:-1]
    c *= np.float32(0.2)


def _st_check(d):
    from stencil2d import reference

    _st_launch(d["_k"], d)
    np.testing.assert_allclose(d["dst"], reference(d["src"]), rtol=1e-5, atol=1e-6)


PROBLEMS: List[Problem] = [
    Problem("saxpy", saxpy, True, _saxpy_make, _saxpy_launch, _saxpy_np, _saxpy_check,
            lambda d: 3 * d["x"].nbytes),
    Problem("reduction", block_sum, True, _red_make, _red_launch, lambda d: d["x"].sum(), _red_check,
            lambda d: d["x"].nbytes),
    Problem("matmul", matmul, False, _mm_make, _mm_launch, lambda d: np.matmul(d["a"], d["b"], out=d["c"]),
            _mm_check, lambda d: d["a"].nbytes + d["b"].nbytes + d["c"].nbytes),
    Problem("stencil", jacobi, True, _st_make, _st_launch, _st_np, _st_check,
            lambda d: 2 * d["src"].nbytes),
]

BY_NAME = {p.name: p for p in PROBLEMS}
