"""The issue-15 benchmark problems: sizes, host inputs, NumPy references, and how the polykern
kernels of tuned_kernels.py run them on any runtime.

A problem's polykern run works on "device arrays" of whatever runtime it targets (CuPy arrays for
CUDA, ``DeviceArray`` for Vulkan, NumPy for the CPU) through a :class:`Place`; every contender of a
problem (polykern or peer) is a callable returning its outputs, which :func:`check` compares with
the reference before anything is timed (a wrong result is reported, never timed).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

import tuned_kernels as tk

RED_BLOCK = 256          # work-items per group of the whole-array reductions
RED_GROUPS_PER_UNIT = 8  # groups per compute unit (SM) of a reduction's first pass
RED_UNROLL = 2           # float4 loads in flight per work-item in sum_pass
# The sum's first pass in several shapes, all timed (the best is polykern's figure, as pk.autotune would
# choose): variant -> (work-items per group, float4 loads in flight, groups per compute unit).
SUM_VARIANTS = {"": (RED_BLOCK, RED_UNROLL, RED_GROUPS_PER_UNIT), "4 in flight": (256, 4, 8),
                "4 in flight, 512 x 4 per SM": (512, 4, 4)}
FINISH_BLOCK = 1024      # the one group of a reduction's second pass
ROW_BLOCK = 512          # work-items per row of softmax / layer norm (Triton's softmax: 16 warps; 2 float4 each)
# Softmax / layer norm in other group sizes too, all timed (the best counts): variant -> work-items per row.
ROW_VARIANTS = {"": ROW_BLOCK, "256 per row": 256, "1024 per row": 1024}
SAXPY_BLOCK = 256
# saxpy_wide's grid in several sizes, all timed (the best counts): variant -> (float4 per work-item, groups
# per compute unit at most or 0: no cap). The kernel's grid-stride loop covers any grid.
SAXPY_VARIANTS = {"": (1, 0), "2 float4 per work-item": (2, 0), "16 groups per SM": (1, 16)}
STENCIL_BLOCK = (64, 4)
MM_TILE = (128, 128, 8)  # BM, BN, BK of the default matmul: 256 work-items, 8 x 8 results each
# The double-buffered matmul's shapes pk.autotune chooses among (the matmul's variant "autotuned"): BM x BN
# results per work-group, depth BK, TM x 8 per work-item; (BM/TM) * (BN/8) work-items, 2 * BK * (BM + BN)
# floats of shared memory.
MM_CONFIGS = [{"BM": bm, "BN": bn, "BK": bk, "TM": tm, "block": (bm // tm) * (bn // 8),
               "shared_size": 2 * bk * (bm + bn)}
              for bm, bn, bk, tm in [(128, 128, 8, 8), (128, 128, 16, 8), (128, 64, 16, 8), (64, 128, 16, 8),
                                     (128, 128, 8, 16), (128, 128, 16, 16), (256, 128, 8, 16), (128, 256, 8, 16)]]
LN_EPS = 1e-5

# Full sizes (the issue's): 64M f32 for the reductions and saxpy, 8192^2 stencil, 4096^2 rows, 4096^3 matmul.
FULL = {"sum": 1 << 26, "max": 1 << 26, "meanvar": 1 << 26, "saxpy": 1 << 26, "stencil": (8192, 8192),
        "softmax": (4096, 4096), "layernorm": (4096, 4096), "matmul": (4096, 4096, 4096)}
# Tiny sizes for the dry run and the tests: odd lengths (tails), more groups than compute units.
TINY = {"sum": 100_003, "max": 100_003, "meanvar": 100_003, "saxpy": 10_007, "stencil": (37, 68),
        "softmax": (5, 1000), "layernorm": (6, 516), "matmul": (256, 128, 64)}


class Place:
    """Where a run's arrays live (``put`` a host array there, ``empty`` a zeroed f32 vector). This one:
    NumPy (the CPU); benchmarks/gpu_peers.py adds CuPy (CUDA) and Vulkan ``DeviceArray``."""

    name = "host"

    def put(self, host: np.ndarray):
        return np.ascontiguousarray(host).ravel().copy()

    def empty(self, n: int):
        return np.zeros(n, np.float32)


def row_vpt(ncols: int, block: int = ROW_BLOCK) -> int:
    """float4 per work-item that a group of ``block`` needs for one row (the VPT constexpr)."""
    return max(1, -(-ncols // (4 * block)))


@dataclass
class Problem:
    name: str
    make: Callable[[np.random.Generator, object], Dict[str, np.ndarray]]
    reference: Callable[[Dict[str, np.ndarray]], List[np.ndarray]]
    tol: Callable[[Dict[str, np.ndarray]], tuple]            # (rtol, atol) per problem
    kernels: Callable[[object], list]                        # size -> specialized polykern kernels
    run: Callable[[object, Place, Dict[str, object], dict], Callable[[], list]]  # env["size"]: the size
    nbytes: Callable[[object], int]                          # bytes an ideal kernel moves
    flops: Optional[Callable[[object], float]] = None
    resets: tuple = ()                                       # inputs a run overwrites (restored before checks)
    variants: tuple = ("",)                                  # env["variant"] of run: "" is the default shape
    notes: List[str] = field(default_factory=list)


def _vector(rng, size):
    """Multiples of 1/8 in [-2, 2] with mean 0: every partial sum of up to 2^26 of them stays far below
    2^21, where f32 holds multiples of 1/8 exactly, so a sum is exact in any order and is checked exactly
    (one element lost or counted twice shows)."""
    return {"x": (rng.integers(-16, 17, size) / 8).astype(np.float32)}


def _red_grid(n: int, units: int, block: int = RED_BLOCK, per_unit: int = RED_GROUPS_PER_UNIT) -> int:
    return max(1, min(-(-(n // 4) // block), units * per_unit))


def _sum_pass(variant: str):
    block, unroll, _ = SUM_VARIANTS[variant]
    return tk.sum_pass.specialize(BLOCK=block, U=unroll)


def _red_kernels(size):
    return [_sum_pass(v) for v in SUM_VARIANTS] + [
        tk.max_pass.specialize(BLOCK=RED_BLOCK), tk.sqdev_pass.specialize(BLOCK=RED_BLOCK),
        tk.sum_finish.specialize(BLOCK=FINISH_BLOCK), tk.max_finish.specialize(BLOCK=FINISH_BLOCK),
        tk.shifted_sums_pass.specialize(BLOCK=RED_BLOCK), tk.meanvar_finish.specialize(BLOCK=FINISH_BLOCK)]


def _red_run(which: str):
    def run(mod, place: Place, d: dict, env: dict):
        n = env["size"]
        variant = env.get("variant", "")
        shape = variant if variant in SUM_VARIANTS else ""  # meanvar's variants are its algorithms
        sb, _, per_unit = SUM_VARIANTS[shape]
        g = _red_grid(n, env["units"])
        gs = _red_grid(n, env["units"], sb, per_unit)  # the sum's first pass (its variant's shape)
        x, part = d["x"], place.empty(max(g, gs))
        out = place.empty(2)
        p1, fin = mod[_sum_pass(shape).name], mod[tk.sum_finish.specialize(BLOCK=FINISH_BLOCK).name]
        sq = mod[tk.sqdev_pass.specialize(BLOCK=RED_BLOCK).name]
        mx = mod[tk.max_pass.specialize(BLOCK=RED_BLOCK).name]
        mfin = mod[tk.max_finish.specialize(BLOCK=FINISH_BLOCK).name]
        rb, fb = RED_BLOCK, FINISH_BLOCK

        if which == "sum":
            def go():
                p1(n, x, x, part, grid=gs, block=sb)
                fin(gs, part, out, 0, 1.0, grid=1, block=fb)
                return [out]
        elif which == "max":
            def go():
                mx(n, x, x, part, grid=g, block=rb)
                mfin(g, part, out, grid=1, block=fb)
                return [out]
        elif variant == "two passes":
            inv = float(np.float32(1.0) / np.float32(n))

            def go():
                p1(n, x, x, part, grid=gs, block=sb)
                fin(gs, part, out, 0, inv, grid=1, block=fb)       # out[0] = mean
                sq(n, x, x, out, part, grid=g, block=rb)
                fin(g, part, out, 1, inv, grid=1, block=fb)        # out[1] = variance (ddof 0)
                return [out]
        else:  # one pass over x: shifted sums (tuned_kernels.shifted_sums_pass)
            inv = float(np.float32(1.0) / np.float32(n))
            one = mod[tk.shifted_sums_pass.specialize(BLOCK=RED_BLOCK).name]
            mvfin = mod[tk.meanvar_finish.specialize(BLOCK=FINISH_BLOCK).name]
            part2 = place.empty(2 * g)

            def go():
                one(n, x, x, part2, grid=g, block=rb)
                mvfin(g, part2, x, out, inv, grid=1, block=fb)    # out = (mean, variance)
                return [out]
        return go
    return run


def _red_ref(which):
    def ref(h):
        x = h["x"].astype(np.float64)
        if which == "sum":
            return [np.array([x.sum()])]
        if which == "max":
            return [np.array([x.max()])]
        return [np.array([x.mean(), x.var()])]
    return ref


def _first(outs: List[np.ndarray], k: int) -> List[np.ndarray]:
    """The first k values of the outputs laid end to end (polykern's result vector holds 2 slots;
    a peer may return one 0-d array per value)."""
    return [np.concatenate([np.asarray(o, dtype=np.float64).ravel() for o in outs])[:k]]


def _saxpy_make(rng, n):
    return {"x": rng.standard_normal(n, dtype=np.float32), "y": rng.standard_normal(n, dtype=np.float32),
            "a": np.float32(2.5)}


def _saxpy_run(mod, place, d, env):
    n = env["size"]
    k, tail = mod[tk.saxpy_wide.name], mod[tk.saxpy_tail.name]
    per, per_unit = SAXPY_VARIANTS[env.get("variant", "")]
    g = max(1, -(-(n // 4) // (SAXPY_BLOCK * per)))
    if per_unit:
        g = min(g, env["units"] * per_unit)
    a, x, y = float(d["a"]), d["x"], d["y"]

    def go():
        k(n, a, x, y, grid=g, block=SAXPY_BLOCK)
        if n % 4:
            tail(n, a, x, y, grid=1, block=4)
        return [y]
    return go


def _stencil_make(rng, hw):
    h, w = hw
    return {"src": rng.random((h, w), dtype=np.float32), "dst": np.zeros((h, w), np.float32)}


def stencil_reference(src: np.ndarray) -> np.ndarray:
    out = src.copy()
    out[1:-1, 1:-1] = np.float32(0.2) * (src[1:-1, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:] + src[:-2, 1:-1]
                                         + src[2:, 1:-1])
    return out


def _stencil_run(mod, place, d, env):
    h, w = env["size"]
    if w % 4:
        raise ValueError(f"jacobi_wide needs a width that is a multiple of 4, got {w}")
    k = mod[tk.jacobi_wide.name]
    bx, by = STENCIL_BLOCK
    grid = (-(-(w // 4) // bx), -(-h // by))
    src, dst = d["src"], d["dst"]

    def go():
        k(h, w, src, src, dst, grid=grid, block=(bx, by))
        return [dst]
    return go


def _rows_make(rng, rc):
    r, c = rc
    return {"x": rng.standard_normal((r, c), dtype=np.float32) * 3,
            "w": rng.standard_normal(c, dtype=np.float32), "b": rng.standard_normal(c, dtype=np.float32)}


def softmax_reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm_reference(x, w, b, eps=LN_EPS):
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    return (x - mean) * rstd * w + b, mean.ravel(), rstd.ravel()


def _softmax_kernel(rc, variant: str = ""):
    block = ROW_VARIANTS[variant]
    return tk.softmax_rows.specialize(BLOCK=block, VPT=row_vpt(rc[1], block))


def _layernorm_kernel(rc, variant: str = ""):
    block = ROW_VARIANTS[variant]
    return tk.layernorm_rows.specialize(BLOCK=block, VPT=row_vpt(rc[1], block))


def _check_cols(c: int):
    if c % 4:
        raise ValueError(f"the row kernels need a multiple of 4 columns, got {c}")


def _softmax_run(mod, place, d, env):
    r, c = env["size"]
    _check_cols(c)
    variant = env.get("variant", "")
    k, block = mod[_softmax_kernel((r, c), variant).name], ROW_VARIANTS[variant]
    x, out = d["x"], place.empty(r * c)

    def go():
        k(c, x, out, grid=r, block=block)
        return [out]
    return go


def _layernorm_run(mod, place, d, env):
    r, c = env["size"]
    _check_cols(c)
    variant = env.get("variant", "")
    k, block = mod[_layernorm_kernel((r, c), variant).name], ROW_VARIANTS[variant]
    x, w, b = d["x"], d["w"], d["b"]
    y, mean, rstd = place.empty(r * c), place.empty(r), place.empty(r)

    def go():
        k(c, LN_EPS, x, w, b, y, mean, rstd, grid=r, block=block)
        return [y, mean, rstd]
    return go


def _mm_make(rng, mnk):
    m, n, k = mnk
    return {"a": rng.standard_normal((m, k), dtype=np.float32), "b": rng.standard_normal((k, n), dtype=np.float32)}


MM_CHECK_ROWS = 64


def mm_rows(m: int) -> np.ndarray:
    """The rows of C every matmul contender is checked on (all of them for small m)."""
    return np.arange(m) if m <= 2 * MM_CHECK_ROWS else np.linspace(0, m - 1, MM_CHECK_ROWS).astype(np.int64)


def _mm_ref(h):
    rows = mm_rows(h["a"].shape[0])
    return [h["a"][rows].astype(np.float64) @ h["b"].astype(np.float64)]


def _mm_kernel(mnk, fused: bool = True):
    """The tiled matmul with ``pk.fma`` (``fused=False``: a * b + c, two roundings). Every runtime runs the fused
    one: Vulkan's f32 pk.fma is GLSL Fma where the device's rounds once (NVIDIA's; polykern_vulkan's
    runtime/fma_probe.py), f64 arithmetic elsewhere (lavapipe)."""
    bm, bn, bk = MM_TILE
    return tk.sgemm_db.specialize(BM=bm, BN=bn, BK=bk, TM=8, FUSED=int(fused))


def _mm_tuned(fused: bool, configs: list):
    import polykern as pk
    return pk.autotune(configs=configs, key=["m", "n", "k"], restore=False, verbose=True)(
        tk.sgemm_db.specialize(FUSED=int(fused)))


def _mm_run(mod, place, d, env):
    m, n, k = env["size"]
    if env.get("variant") == "autotuned":
        fits = [c for c in MM_CONFIGS if m % c["BM"] == 0 and n % c["BN"] == 0 and k % c["BK"] == 0]
        if not fits:
            raise ValueError(f"the autotuned matmul needs m, n, k multiples of a config's tiles, got {m}x{n}x{k}")
        kern = _mm_tuned(True, fits).build(targets=list(mod.targets))
        a, b, c = d["a"], d["b"], place.empty(m * n)

        def tuned():
            kern(m, n, k, a, b, c, grid=lambda cfg: (n // cfg["BN"], m // cfg["BM"]))
            return [c]
        return tuned
    bm, bn, bk = MM_TILE
    if m % bm or n % bn or k % bk:
        raise ValueError(f"sgemm_db needs m % {bm} == n % {bn} == k % {bk} == 0, got {m}x{n}x{k}")
    kern = mod[_mm_kernel((m, n, k)).name]
    a, b, c = d["a"], d["b"], place.empty(m * n)
    threads = (bm // 8) * (bn // 8)

    def go():
        kern(m, n, k, a, b, c, grid=(n // bn, m // bm), block=threads, shared_size=2 * bk * (bm + bn))
        return [c]
    return go


def _rowsel(outs, h):
    """Matmul outputs reduced to the checked rows."""
    m, n = h["a"].shape[0], h["b"].shape[1]
    return [np.asarray(outs[0]).reshape(m, n)[mm_rows(m)]]


# Tolerances (rtol, atol): sums and maxima exact (see _vector); saxpy's atol admits a peer's fused
# multiply-add (half an ulp of a*x, |a*x| < 16); softmax/layer norm admit fast exp/rsqrt; the matmul's
# atol grows with sqrt(k) like f32 accumulation error (TF32 would exceed it).
PROBLEMS: Dict[str, Problem] = {p.name: p for p in [
    Problem("sum", lambda rng, n: _vector(rng, n), _red_ref("sum"), lambda h: (0, 0),
            _red_kernels, _red_run("sum"), lambda n: 4 * n, variants=tuple(SUM_VARIANTS)),
    Problem("max", lambda rng, n: _vector(rng, n), _red_ref("max"), lambda h: (0, 0),
            _red_kernels, _red_run("max"), lambda n: 4 * n),
    Problem("meanvar", lambda rng, n: _vector(rng, n), _red_ref("meanvar"), lambda h: (1e-5, 1e-6),
            _red_kernels, _red_run("meanvar"), lambda n: 4 * n, variants=("", "two passes"),
            notes=["1 pass over x: sums of d = x - x[0] and d * d (shifted data), then mean = x[0] + s / n, "
                   "variance = q / n - (s / n)^2 (ddof 0); variant 'two passes': the mean, then the mean of "
                   "squared deviations"]),
    Problem("saxpy", _saxpy_make, lambda h: [h["a"] * h["x"] + h["y"]], lambda h: (1e-6, 1e-5),
            lambda n: [tk.saxpy_wide, tk.saxpy_tail], _saxpy_run, lambda n: 12 * n, resets=("y",), variants=tuple(SAXPY_VARIANTS)),
    Problem("stencil", _stencil_make, lambda h: [stencil_reference(h["src"])], lambda h: (1e-5, 1e-6),
            lambda hw: [tk.jacobi_wide], _stencil_run, lambda hw: 8 * hw[0] * hw[1]),
    Problem("softmax", _rows_make, lambda h: [softmax_reference(h["x"])], lambda h: (1e-4, 1e-7),
            lambda rc: [_softmax_kernel(rc, v) for v in ROW_VARIANTS], _softmax_run, lambda rc: 8 * rc[0] * rc[1],
            variants=tuple(ROW_VARIANTS)),
    Problem("layernorm", _rows_make, lambda h: list(layernorm_reference(h["x"], h["w"], h["b"])),
            lambda h: (1e-4, 1e-4), lambda rc: [_layernorm_kernel(rc, v) for v in ROW_VARIANTS], _layernorm_run,
            lambda rc: 8 * rc[0] * rc[1], variants=tuple(ROW_VARIANTS)),
    Problem("matmul", _mm_make, _mm_ref, lambda h: (1e-4, 1e-3 * np.sqrt(h["a"].shape[1])),
            lambda mnk: [_mm_kernel(mnk)], _mm_run, lambda mnk: 4 * (mnk[0] * mnk[2] + mnk[2] * mnk[1] + mnk[0] * mnk[1]),
            flops=lambda mnk: 2.0 * mnk[0] * mnk[1] * mnk[2], variants=("", "autotuned"),
            notes=["variant 'autotuned': sgemm_db (double-buffered shared tiles) under pk.autotune over "
                   "MM_CONFIGS, tuned on the benchmark's own arrays at the first call"]),
]}

# How each problem's outputs are cut down to what the reference holds.
SELECT = {"sum": lambda outs, h: _first(outs, 1), "max": lambda outs, h: _first(outs, 1),
          "meanvar": lambda outs, h: _first(outs, 2), "matmul": _rowsel}


def check(name: str, host: Dict[str, np.ndarray], outs: List[np.ndarray], want: List[np.ndarray]) -> Optional[str]:
    """None when ``outs`` (host arrays) match the reference ``want``; else what is wrong."""
    p = PROBLEMS[name]
    outs = SELECT.get(name, lambda o, h: o)(outs, host)
    rtol, atol = p.tol(host)
    if len(outs) != len(want):
        return f"{len(outs)} outputs, expected {len(want)}"
    for i, (o, w) in enumerate(zip(outs, want)):
        o = np.asarray(o, dtype=np.float64).ravel()
        w = np.asarray(w, dtype=np.float64).ravel()
        if o.shape != w.shape:
            return f"output {i}: {o.size} values, expected {w.size}"
        bad = ~np.isclose(o, w, rtol=rtol, atol=atol)
        if name in ("sum", "meanvar"):  # a sum's error grows with the magnitudes summed
            scale = np.abs(host["x"]).astype(np.float64).sum() / host["x"].size
            bad = np.abs(o - w) > rtol * np.abs(w) + atol * max(1.0, scale)
        if bad.any():
            j = int(np.argmax(bad))
            return (f"WRONG RESULT: output {i}: {int(bad.sum())} of {o.size} values differ; first at {j}: "
                    f"{o[j]!r} vs {w[j]!r} (rtol {rtol}, atol {atol})")
    return None


def all_kernels(sizes: Dict[str, object]) -> list:
    """Every specialized kernel the problems need at these sizes (each once)."""
    seen, out = set(), []
    for name, p in PROBLEMS.items():
        for k in p.kernels(sizes[name]):
            if k.name not in seen:
                seen.add(k.name)
                out.append(k)
    return out
