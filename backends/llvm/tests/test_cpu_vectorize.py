"""The CPU backend's vector code: the lanes of ``pk.vload`` groups packed (SLP), loops holding an ordered
float sum vectorized with the sum kept in order, and ``exp``/``exp2`` inline (codegen/cpu/vector_exp.py).
Each vectorized kernel is checked against the same kernel built scalar (``-opt=0``: no LLVM pass runs)
and the IR interpreter: bit for bit where the operations are the same, within the language's promise
(python/polykern/numerics.py) for ``exp`` against the correctly rounded result."""
from __future__ import annotations

import platform
import sys
from pathlib import Path

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, i32
from polykern.numerics import agrees, promise

X86 = platform.machine() in ("x86_64", "AMD64")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from tuned_kernels import sum_chunks  # noqa: E402  (a contiguous run of float4 groups per work-item)

LANE_SUMS = sum_chunks.specialize(BLOCK=8)


@pk.kernel
def row_exp_sums(nrows: i32, ncols: i32, x: Buffer[f32, "readonly"], out: Buffer[f32], sums: Buffer[f32]):
    """Per row: out = exp2(x) and its sum in column order (softmax's middle loop)."""
    r = pk.global_id(0)
    if r < nrows:
        s = 0.0
        for j in range(ncols):
            e = pk.exp2(x[r * ncols + j] * 0.5) + pk.exp(x[r * ncols + j] * 0.25)
            out[r * ncols + j] = e
            s += e
        sums[r] = s


@pk.kernel
def exps(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32], z: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = pk.exp(x[i])
        z[i] = pk.exp2(x[i])


@pk.kernel
def exps16(n: i32, x: Buffer[f16, "readonly"], y: Buffer[f16], z: Buffer[f16]):
    i = pk.global_id(0)
    if i < n:
        y[i] = pk.exp(x[i])
        z[i] = pk.exp2(x[i])


def _kernel(k, target, **kw):
    return pk.build([k], targets=[target], **kw)[k.name]


def _loop_of(asm: str, marker: str) -> bool:
    return any(marker in line for line in asm.splitlines())


@pytest.mark.skipif(not X86, reason="reads x86-64 assembly (packed SSE adds)")
def test_the_lanes_of_a_vload_group_are_packed():
    asm = pk.build([LANE_SUMS], targets=["llvm"], bounds_check=False).inspect_source("asm")
    assert _loop_of(asm, "addps"), "the four lane accumulators stayed scalar (addss chains)"


def test_lane_sums_vectorized_scalar_and_interpreted_agree():
    x = np.random.default_rng(3).standard_normal(4 * 1003 + 2).astype(np.float32)
    grid = 2
    got = {}
    for target in ("llvm", "llvm -opt=0", "interpret"):
        part = np.zeros(grid, np.float32)
        _kernel(LANE_SUMS, target, bounds_check=False)(x.size, x, part, grid=grid, block=8)
        got[target] = part
    # the same adds in the same order: the packed lanes give the scalar lanes' sums exactly
    assert got["llvm"].tobytes() == got["llvm -opt=0"].tobytes()
    # the interpreter's subgroup sum may associate differently (numerics: subgroup_add)
    np.testing.assert_allclose(got["llvm"], got["interpret"], rtol=1e-5)


def test_a_loop_with_an_ordered_sum_and_exp_is_vectorized():
    ll = pk.build([row_exp_sums], targets=["llvm"], bounds_check=False).inspect_source("ll")
    assert "@llvm.vector.reduce.fadd" in ll, "the row loop with s += e stayed scalar"
    assert "@llvm.exp" not in ll and "@exp" not in ll, "exp is still a libm call per element"


def test_row_sums_vectorized_scalar_and_interpreted_agree():
    rows, cols = 37, 203
    x = np.random.default_rng(4).uniform(-30, 30, rows * cols).astype(np.float32)
    got = {}
    for target in ("llvm", "llvm -opt=0", "interpret"):
        out, sums = np.zeros(rows * cols, np.float32), np.zeros(rows, np.float32)
        _kernel(row_exp_sums, target, bounds_check=False)(rows, cols, x, out, sums, grid=3, block=16)
        got[target] = (out, sums)
    # the same operations in the same order: the vector loop is the scalar loop's result exactly
    assert got["llvm"][0].tobytes() == got["llvm -opt=0"][0].tobytes()
    assert got["llvm"][1].tobytes() == got["llvm -opt=0"][1].tobytes()
    # against the interpreter (NumPy's exp): each element within twice the exp promise
    ref = got["interpret"][0].astype(np.float64)
    assert np.all(np.abs(got["llvm"][0] - ref) <= 6 * np.spacing(np.abs(got["interpret"][0])))


def _f32_sample() -> np.ndarray:
    """Every 241st f32 bit pattern (17.8 million values, all exponents) plus the edges of exp's range."""
    x = np.arange(0, 1 << 32, 241, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = [np.inf, -np.inf, np.nan, 0.0, -0.0, 88.72283, 88.72284, -87.33655, -103.27893, -103.97208,
             -104.0, 127.99999, 128.0, -126.0, -149.0, -149.5, -150.0, 1e-45, -1e-45, 1e-30]
    return np.concatenate([x, np.float32(edges)])


@pytest.mark.parametrize("op", ["exp", "exp2"])
def test_inline_exp_keeps_the_promise(op):
    x = _f32_sample()
    y, z = np.empty_like(x), np.empty_like(x)
    _kernel(exps, "llvm")(x.size, x, y, z, grid=-(-x.size // 256), block=256)
    got = y if op == "exp" else z
    with np.errstate(all="ignore"):
        ref = getattr(np, op)(x.astype(np.float64)).astype(np.float32)  # correctly rounded (NumPy's f64 exp is)
    ok = agrees(promise(op, "f32", "llvm"), op, "f32", got, ref, (x,))
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, f"{op}: {bad.size} results outside the promise, e.g. x={x[bad[:5]]} got={got[bad[:5]]}"


@pytest.mark.parametrize("op", ["exp", "exp2"])
def test_inline_exp_in_f16_keeps_the_promise(op):
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    y, z = np.empty_like(x), np.empty_like(x)
    _kernel(exps16, "llvm")(x.size, x, y, z, grid=256, block=256)
    got = y if op == "exp" else z
    with np.errstate(all="ignore"):
        ref = getattr(np, op)(x.astype(np.float64)).astype(np.float16)
    ok = agrees(promise(op, "f16", "llvm"), op, "f16", got, ref, (x,))
    assert not np.any(~ok), f"{op} f16: {np.count_nonzero(~ok)} results outside the promise"


def test_exp_is_the_same_scalar_and_vectorized():
    x = _f32_sample()[::97].copy()
    out = {}
    for target in ("llvm", "llvm -opt=0"):
        y, z = np.empty_like(x), np.empty_like(x)
        _kernel(exps, target)(x.size, x, y, z, grid=-(-x.size // 64), block=64)
        out[target] = (y, z)
    for a, b in zip(out["llvm"], out["llvm -opt=0"]):
        assert a.tobytes() == b.tobytes()
