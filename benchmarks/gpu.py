"""GPU benchmarks (run on a host with an NVIDIA GPU; needs the polykern checkout, its CUDA runtime,
CuPy, and optionally Triton + torch):

    python benchmarks/gpu.py --out benchmarks/out-gpu [--quick] [--arch 90]

For saxpy, reduction, matmul and stencil (the kernels of examples/, same launch shapes as on the
CPU) it times, on the same device in the same run:

- polykern ``cuda -arch=sm_XX`` (CUDA C, NVRTC/nvcc) and ``nvptx -arch=sm_XX`` (LLVM NVPTX);
- the same kernel written in CUDA C, compiled by nvcc through ``cupy.RawKernel(backend="nvcc")``
  (NVRTC if nvcc is missing; the label says which);
- CuPy built-ins as a user writes them (``y += a * x``, ``x.sum()``, ``a @ b`` = cuBLAS, slicing);
- Triton (benchmarks/peers_triton.py), launched on torch views of the CuPy arrays;

- polykern's *generated CUDA C* compiled by the same nvcc as the hand-written reference and
  launched the same way (``polykern-cuda C (nvcc)``), and a variant with ``__restrict__`` added to
  its readonly buffers (``... +restrict``): these separate the code we generate from our launch path;

plus memory-bound kernels as a fraction of device copy bandwidth (``cupy.copyto``; every
memory-bound array is 256 MiB, far beyond the 50-60 MB L2, also with --quick), launch overhead per
call against CuPy's (a one-block kernel, back-to-back launches, host wall clock around the batch),
and compile times of the polykern GPU targets next to Triton's. Kernel times are GPU time: CUDA
events recorded on the legacy default stream (where CuPy, Triton/torch and polykern all launch)
around a batch of back-to-back launches, medians of round-robin repeats. The issue-8 targets are
checked at the end (``targets`` in gpu.json): launch overhead <= 2x CuPy's, elementwise >= 85% of
copy bandwidth, polykern's CUDA within 10% of nvcc's hand-written CUDA C. Every section runs in
its own try/except: a failure is printed and recorded, and the rest still runs. Writes
OUT/gpu.json and OUT/gpu.png.

polykern kernels are called as ``mod["k"](*args, grid=..., block=...)`` with CuPy arrays (the
CUDA runtime takes them through ``__cuda_array_interface__``); launches are asynchronous.
"""
import argparse
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(HERE)
# A bare checkout works: the core, the backends (found as top-level polykern_* packages) and the examples.
for _p in [HERE, os.path.join(_ROOT, "examples"), os.path.join(_ROOT, "python")] + sorted(
        os.path.join(_ROOT, "backends", d) for d in os.listdir(os.path.join(_ROOT, "backends"))
        if os.path.isdir(os.path.join(_ROOT, "backends", d, f"polykern_{d}"))):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from common import figure_bytes, output_folder, write_output  # noqa: E402

CUDA_C = r"""
#define TILE 16
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void saxpy4(int n, float a, const float* __restrict__ x, float* y) {
    int s = gridDim.x * blockDim.x, i = blockIdx.x * blockDim.x + threadIdx.x;
    float xv[4], yv[4];
#pragma unroll
    for (int k = 0; k < 4; k++) { int j = i + k * s; xv[k] = j < n ? x[j] : 0.0f; }
#pragma unroll
    for (int k = 0; k < 4; k++) { int j = i + k * s; yv[k] = j < n ? y[j] : 0.0f; }
#pragma unroll
    for (int k = 0; k < 4; k++) { int j = i + k * s; if (j < n) y[j] = a * xv[k] + yv[k]; }
}
extern "C" __global__ void block_sum(int n, const float* __restrict__ x, float* out) {
    __shared__ float s[256];
    int lid = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
    s[lid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step /= 2) {
        if (lid < step) s[lid] += s[lid + step];
        __syncthreads();
    }
    if (lid == 0) atomicAdd(out, s[0]);
}
extern "C" __global__ void matmul(int m, int n, int k, const float* __restrict__ a, const float* __restrict__ b,
                                  float* c) {
    __shared__ float ta[TILE * TILE], tb[TILE * TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx, row = blockIdx.y * TILE + ty;
    float acc = 0.0f;
    for (int t = 0; t < k; t += TILE) {
        ta[ty * TILE + tx] = (row < m && t + tx < k) ? a[row * k + t + tx] : 0.0f;
        tb[ty * TILE + tx] = (t + ty < k && col < n) ? b[(t + ty) * n + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < TILE; j++) acc += ta[ty * TILE + j] * tb[j * TILE + tx];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}
extern "C" __global__ void jacobi(int h, int w, const float* __restrict__ src, float* dst) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { dst[i] = src[i]; return; }
    dst[i] = 0.2f * (src[i] + src[i - 1] + src[i + 1] + src[i - w] + src[i + w]);
}
"""

RESULTS: dict = {"sections": {}, "errors": {}}


def saxpy4_kernel():  # (no ``from __future__ import annotations`` in this file: polykern evaluates
    #                       a kernel's annotations in its module's globals, and these names are local)
    """saxpy with 4 elements per work-item (grid-stride, all loads before the stores): the same
    arithmetic as examples/saxpy.py with 4x the bytes in flight per thread. One element per thread
    cannot keep enough memory requests in flight on an H100/H200 to reach copy bandwidth, whoever
    compiles it (nvcc's hand-written saxpy measures the same as ours)."""
    import polykern as pk
    from polykern import Buffer, f32, i32

    @pk.kernel
    def saxpy4(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
        s = pk.num_groups(0) * pk.local_size(0)
        i0 = pk.global_id(0)
        i1 = i0 + s
        i2 = i1 + s
        i3 = i2 + s
        x0 = x[i0] if i0 < n else 0.0
        x1 = x[i1] if i1 < n else 0.0
        x2 = x[i2] if i2 < n else 0.0
        x3 = x[i3] if i3 < n else 0.0
        y0 = y[i0] if i0 < n else 0.0
        y1 = y[i1] if i1 < n else 0.0
        y2 = y[i2] if i2 < n else 0.0
        y3 = y[i3] if i3 < n else 0.0
        if i0 < n:
            y[i0] = a * x0 + y0
        if i1 < n:
            y[i1] = a * x1 + y1
        if i2 < n:
            y[i2] = a * x2 + y2
        if i3 < n:
            y[i3] = a * x3 + y3
    return saxpy4


def log(msg: str) -> None:
    print(msg, flush=True)


def section(name):
    """Run a section; on failure print and record the error and go on."""
    def deco(fn):
        def run(*a, **kw):
            t0 = time.perf_counter()
            try:
                RESULTS["sections"][name] = fn(*a, **kw)
                log(f"[{name}] done in {time.perf_counter() - t0:.1f} s")
            except Exception as e:  # noqa: BLE001 - keep the other sections
                RESULTS["errors"][name] = f"{type(e).__name__}: {e}"
                log(f"[{name}] FAILED: {type(e).__name__}: {e}")
                traceback.print_exc()
        return run
    return deco


# ------------------------------------------------------------------ timing

def _syncer():
    import cupy as cp

    def sync():  # polykern runs in the device's primary context, the one CuPy uses
        cp.cuda.runtime.deviceSynchronize()
    return sync


def timeit(fns: dict, repeat: int, inner: int = 0, target_s: float = 0.05, clock: str = "events") -> dict:
    """Seconds per call of each ``fns[name]()``, measured round-robin ``repeat`` times over batches
    of back-to-back calls; medians. ``clock="events"``: GPU time between CUDA events recorded on the
    legacy default stream before and after the batch (device work, plus any idle gaps a slow launch
    leaves). ``clock="wall"``: host wall clock from a synchronized start to the synchronized end of
    the batch (launch overhead)."""
    import cupy as cp

    sync = _syncer()
    null = cp.cuda.Stream.null
    start, end = cp.cuda.Event(), cp.cuda.Event()
    batch = {}
    for name, f in fns.items():
        f()
        sync()
        t0 = time.perf_counter()
        f()
        sync()
        dt = time.perf_counter() - t0
        batch[name] = inner or max(1, min(1000, int(target_s / max(dt, 1e-6))))
    out = {k: [] for k in fns}
    for _ in range(repeat):
        for name, f in fns.items():
            n = batch[name]
            sync()
            if clock == "events":
                start.record(null)
                for _ in range(n):
                    f()
                end.record(null)
                end.synchronize()
                out[name].append(cp.cuda.get_elapsed_time(start, end) / 1e3 / n)
            else:
                t0 = time.perf_counter()
                for _ in range(n):
                    f()
                sync()
                out[name].append((time.perf_counter() - t0) / n)
    return {k: sorted(v)[len(v) // 2] for k, v in out.items()}


# ------------------------------------------------------------------ contenders

def polykern_modules(arch: int) -> dict:
    import polykern as pk
    from matmul import matmul
    from reduction import block_sum
    from saxpy import saxpy
    from stencil2d import jacobi

    mods = {}
    for label, target in (("polykern-cuda", f"cuda -arch=sm_{arch}"), ("polykern-nvptx", f"nvptx -arch=sm_{arch}")):
        try:
            t0 = time.perf_counter()
            mods[label] = pk.build([saxpy, saxpy4_kernel(), block_sum, matmul, jacobi], targets=[target])
            log(f"built {label} ({target}) in {time.perf_counter() - t0:.2f} s")
        except Exception as e:  # noqa: BLE001
            RESULTS["errors"][f"build {label}"] = f"{type(e).__name__}: {e}"
            log(f"build {label} FAILED: {e}")
    return mods


def rawkernels(arch: int):
    import cupy as cp
    import shutil

    backend = "nvcc" if shutil.which("nvcc") else "nvrtc"
    opts = (f"-arch=sm_{arch}",) if backend == "nvcc" else (f"--gpu-architecture=sm_{arch}",)
    mod = cp.RawModule(code=CUDA_C, backend=backend, options=opts)
    names = {"saxpy": "saxpy", "saxpy4": "saxpy4", "reduction": "block_sum", "matmul": "matmul", "stencil": "jacobi"}
    return f"cuda-c ({backend})", {k: mod.get_function(v) for k, v in names.items()}


def restrict_readonly(source: str) -> str:
    """polykern's CUDA C with ``__restrict__`` on the readonly (``const T*``) buffer parameters."""
    import re

    return re.sub(r"(const [\w ]+?\*) (\w+)(?=[,)])", lambda m: f"{m.group(1)} __restrict__ {m.group(2)}", source)


def generated_c_kernels(arch: int, pk_mods: dict) -> dict:
    """label -> {kernel: cupy RawKernel} of polykern's generated CUDA C compiled by nvcc (as is, and
    with __restrict__ on readonly buffers): the code polykern emits, without polykern's launch path."""
    import cupy as cp
    import shutil

    m = pk_mods.get("polykern-cuda")
    if m is None:
        return {}
    mod = m.on("cuda")
    src = mod.inspect_source("cuda")
    backend = "nvcc" if shutil.which("nvcc") else "nvrtc"
    opts = (f"-arch=sm_{arch}",) if backend == "nvcc" else (f"--gpu-architecture=sm_{arch}",)
    entries = {"saxpy": "saxpy", "saxpy4": "saxpy4", "reduction": "block_sum", "matmul": "matmul",
               "stencil": "jacobi"}
    out = {}
    for label, code in ((f"polykern-cuda C ({backend})", src),
                        (f"polykern-cuda C +restrict ({backend})", restrict_readonly(src))):
        rm = cp.RawModule(code=code, backend=backend, options=opts)
        out[label] = {k: rm.get_function(mod.functions[v].attrs.get("entry", v)) for k, v in entries.items()}
    return out


def triton_kernels():
    import torch  # noqa: F401 - Triton launches on torch tensors

    import peers_triton

    return peers_triton.kernels()


def _torch(a):
    import torch

    return torch.from_dlpack(a)


# ------------------------------------------------------------------ sections

def make_inputs(quick: bool):
    import cupy as cp

    rng = cp.random.default_rng(0)
    n = 1 << 26  # 256 MiB of f32 per array, also with --quick: bandwidth needs data far beyond L2
    s = 2048 if quick else 4096
    h = w = 8192
    saxpy = {"n": n, "a": 2.5, "x": rng.standard_normal(n, dtype=cp.float32),
             "y": rng.standard_normal(n, dtype=cp.float32)}
    return {
        "saxpy": saxpy,
        "saxpy4": dict(saxpy),  # the same arrays, 4 elements per work-item
        "reduction": {"n": n, "x": rng.random(n, dtype=cp.float32), "out": cp.zeros(1, cp.float32)},
        "matmul": {"m": s, "n": s, "k": s, "a": rng.standard_normal((s, s), dtype=cp.float32),
                   "b": rng.standard_normal((s, s), dtype=cp.float32), "c": cp.zeros((s, s), cp.float32)},
        "stencil": {"h": h, "w": w, "src": rng.random((h, w), dtype=cp.float32), "dst": cp.zeros((h, w), cp.float32)},
    }


def launchers(name: str, d: dict, pk_mods: dict, raw, tri, gen=None) -> dict:
    """name -> {contender: callable()} for one kernel."""
    import cupy as cp
    import numpy as np

    out = {}
    # every RawKernel flavour of the same CUDA C kernel (hand-written; polykern's generated), launched alike
    raws = ([raw] if raw else []) + list((gen or {}).items())
    if name == "saxpy":
        n, a, x, y = d["n"], d["a"], d["x"], d["y"]
        g = (n + 255) // 256
        for label, m in pk_mods.items():
            k = m["saxpy"]
            out[label] = lambda k=k: k(n, a, x, y, grid=g, block=256)
        for label, fs in raws:
            out[label] = lambda f=fs["saxpy"]: f((g,), (256,), (np.int32(n), np.float32(a), x, y))
        out["cupy"] = lambda: y.__iadd__(cp.float32(a) * x)
        if tri:
            tx, ty = _torch(x), _torch(y)
            out["triton"] = lambda: tri["saxpy"][(g,)](tx, ty, a, n, BLOCK=256)
    elif name == "saxpy4":
        n, a, x, y = d["n"], d["a"], d["x"], d["y"]
        g = (n // 4 + 255) // 256
        for label, m in pk_mods.items():
            k = m["saxpy4"]
            out[label] = lambda k=k: k(n, a, x, y, grid=g, block=256)
        for label, fs in raws:
            out[label] = lambda f=fs["saxpy4"]: f((g,), (256,), (np.int32(n), np.float32(a), x, y))
    elif name == "reduction":
        n, x, o = d["n"], d["x"], d["out"]
        g = (n + 255) // 256
        for label, m in pk_mods.items():
            k = m["block_sum"]
            out[label] = lambda k=k: (o.fill(0), k(n, x, o, grid=g, block=256))
        for label, fs in raws:
            out[label] = lambda f=fs["reduction"]: (o.fill(0), f((g,), (256,), (np.int32(n), x, o)))
        out["cupy"] = lambda: x.sum()
        if tri:
            tx, to = _torch(x), _torch(o)
            out["triton"] = lambda: (o.fill(0), tri["reduction"][(g,)](tx, to, n, BLOCK=256))
    elif name == "matmul":
        m_, n_, k_, a, b, c = d["m"], d["n"], d["k"], d["a"], d["b"], d["c"]
        grid = ((n_ + 15) // 16, (m_ + 15) // 16)
        for label, m in pk_mods.items():
            k = m["matmul"]
            out[label] = lambda k=k: k(m_, n_, k_, a, b, c, grid=grid, block=(16, 16))
        for label, fs in raws:
            out[label] = lambda f=fs["matmul"]: f(grid, (16, 16), (np.int32(m_), np.int32(n_), np.int32(k_), a, b, c))
        out["cupy (cuBLAS)"] = lambda: cp.matmul(a, b, out=c)
        if tri:
            import peers_triton

            ta, tb, tc = _torch(a), _torch(b), _torch(c)
            t = peers_triton.TILE
            out["triton"] = lambda: tri["matmul"][((n_ + t - 1) // t, (m_ + t - 1) // t)](
                ta, tb, tc, m_, n_, k_, BM=t, BN=t, BK=t)
    elif name == "stencil":
        h, w, src, dst = d["h"], d["w"], d["src"], d["dst"]
        grid = ((w + 15) // 16, (h + 15) // 16)
        for label, m in pk_mods.items():
            k = m["jacobi"]
            out[label] = lambda k=k: k(h, w, src, dst, grid=grid, block=(16, 16))
        for label, fs in raws:
            out[label] = lambda f=fs["stencil"]: f(grid, (16, 16), (np.int32(h), np.int32(w), src, dst))

        def cupy_stencil():
            a, o = src, dst
            o[0], o[-1], o[:, 0], o[:, -1] = a[0], a[-1], a[:, 0], a[:, -1]
            o[1:-1, 1:-1] = cp.float32(0.2) * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
        out["cupy"] = cupy_stencil
        if tri:
            ts, td = _torch(src), _torch(dst)
            out["triton"] = lambda: tri["stencil"][((w + 255) // 256, h)](ts, td, h, w, BLOCK=256)
    return out


def check(name: str, d: dict, fns: dict) -> dict:
    """Run each contender once on the inputs and compare with CuPy; returns {contender: error or 'ok'}."""
    import cupy as cp

    status = {}
    for label, f in fns.items():
        try:
            if name in ("saxpy", "saxpy4"):
                y0 = d["y"].copy()
                f()
                cp.cuda.runtime.deviceSynchronize()
                _syncer()()
                ok = cp.allclose(d["y"], cp.float32(d["a"]) * d["x"] + y0, rtol=1e-5, atol=1e-5)
                d["y"][...] = y0
            elif name == "reduction":
                f()
                _syncer()()
                got = float(d["out"][0]) if not label.startswith("cupy") else float(f())
                ok = abs(got - float(d["x"].astype(cp.float64).sum())) <= 1e-3 * float(d["x"].size)
            elif name == "matmul":
                d["c"].fill(0)
                f()
                _syncer()()
                ok = cp.allclose(d["c"], d["a"] @ d["b"], rtol=1e-2, atol=1e-2)
            else:
                d["dst"].fill(0)
                f()
                _syncer()()
                a = d["src"]
                want = a.copy()
                want[1:-1, 1:-1] = cp.float32(0.2) * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1]
                                                       + a[2:, 1:-1])
                ok = cp.allclose(d["dst"], want, rtol=1e-5, atol=1e-6)
            status[label] = "ok" if bool(ok) else "WRONG RESULT"
        except Exception as e:  # noqa: BLE001
            status[label] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    return status


def _runnable(fns: dict) -> dict:
    """The contenders whose first call succeeds (failures are printed and recorded)."""
    ok = {}
    for label, f in fns.items():
        try:
            f()
            _syncer()()
            ok[label] = f
        except Exception as e:  # noqa: BLE001
            RESULTS["errors"][f"launch {label}"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
            log(f"{label} cannot launch: {str(e).splitlines()[0][:200]}")
    return ok


NBYTES = {"saxpy": lambda d: 3 * d["x"].nbytes, "saxpy4": lambda d: 3 * d["x"].nbytes,
          "reduction": lambda d: d["x"].nbytes, "stencil": lambda d: 2 * d["src"].nbytes, "matmul": lambda d: 3 * d["a"].nbytes}
FLOPS = {"matmul": lambda d: 2.0 * d["m"] * d["n"] * d["k"]}


@section("kernels")
def kernels_section(quick: bool, repeat: int, arch: int):
    import cupy as cp

    pk_mods = polykern_modules(arch)
    raw = tri = None
    try:
        raw = rawkernels(arch)
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["cuda-c reference"] = f"{type(e).__name__}: {e}"
        log(f"CUDA C reference unavailable: {e}")
    try:
        tri = triton_kernels()
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["triton"] = f"{type(e).__name__}: {e}"
        log(f"Triton unavailable: {e}")
    gen = {}
    try:
        gen = generated_c_kernels(arch, pk_mods)
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["generated CUDA C via nvcc"] = f"{type(e).__name__}: {e}"
        log(f"polykern's CUDA C through nvcc unavailable: {e}")
    inputs = make_inputs(quick)
    big = max(v["x"].nbytes if "x" in v else 0 for v in inputs.values())
    src = cp.ones(big // 4, cp.float32)
    dst = cp.empty_like(src)
    log(f"memory-bound arrays: {big / 2 ** 20:.0f} MiB each; copy reference: {big / 2 ** 20:.0f} MiB")
    rows = []
    for name, d in inputs.items():
        try:
            fns = launchers(name, d, pk_mods, raw, tri, gen)
            status = check(name, d, fns)
            good = {k: f for k, f in fns.items() if status[k] == "ok"}
            good["copy"] = lambda: cp.copyto(dst, src)
            t = timeit(good, repeat)
            copy_bw = 2 * src.nbytes / t.pop("copy")
            row = {"kernel": name, "seconds": t, "status": status, "copy_bandwidth_GBps": copy_bw / 1e9}
            ref = "cupy (cuBLAS)" if name == "matmul" else "cupy"
            if ref in t:
                row["speedup_vs_cupy"] = {k: t[ref] / v for k, v in t.items()}
            cref = raw[0] if raw else None
            if cref in t:
                row["speedup_vs_cuda_c"] = {k: t[cref] / v for k, v in t.items()}
            if name in FLOPS:
                row["tflops"] = {k: FLOPS[name](d) / v / 1e12 for k, v in t.items()}
            else:
                row["fraction_of_copy_bandwidth"] = {k: NBYTES[name](d) / v / copy_bw for k, v in t.items()}
            rows.append(row)
            log(f"{name:10} " + "  ".join(f"{k} {v * 1e3:.3f}ms" for k, v in t.items())
                + "".join(f"\n    {k}: {v}" for k, v in status.items() if v != "ok"))
        except Exception as e:  # noqa: BLE001
            RESULTS["errors"][f"kernel {name}"] = f"{type(e).__name__}: {e}"
            log(f"{name} FAILED: {e}")
            traceback.print_exc()
    return {"rows": rows, "sizes": {k: {kk: vv for kk, vv in v.items() if isinstance(vv, (int, float))}
                                    for k, v in inputs.items()}}


@section("launch_overhead")
def launch_section(repeat: int, arch: int):
    """Per-call time of a one-block (256 elements) saxpy launched back to back, synchronized at
    the end of each batch: the host-side cost of a launch."""
    import cupy as cp
    import numpy as np

    n = 256
    x = cp.ones(n, cp.float32)
    y = cp.ones(n, cp.float32)
    fns = {}
    for label, m in polykern_modules(arch).items():
        k = m["saxpy"]
        fns[label] = lambda k=k: k(n, 2.0, x, y, grid=1, block=256)
        if label == "polykern-cuda":
            from polykern_cuda import runtime as rt

            dx, dy = rt.to_device(np.ones(n, np.float32)), rt.to_device(np.ones(n, np.float32))
            fns["polykern-cuda (DeviceArray)"] = lambda k=k: k(n, 2.0, dx, dy, grid=1, block=256)
            direct = k.resolve()[1]  # the CUDAKernel itself, without the root module's Launcher
            fns["polykern-cuda (kernel handle)"] = lambda k=direct: k(n, 2.0, x, y, grid=1, block=256)
    try:
        label, raw = rawkernels(arch)
        fns[label] = lambda f=raw["saxpy"]: f((1,), (256,), (np.int32(n), np.float32(2.0), x, y))
    except Exception as e:  # noqa: BLE001
        log(f"CUDA C reference unavailable: {e}")
    fns["cupy elementwise (y += x)"] = lambda: y.__iadd__(x)
    try:
        tri = triton_kernels()
        tx, ty = _torch(x), _torch(y)
        fns["triton"] = lambda: tri["saxpy"][(1,)](tx, ty, 2.0, n, BLOCK=256)
    except Exception as e:  # noqa: BLE001
        log(f"Triton unavailable: {e}")
    t = timeit(_runnable(fns), repeat, inner=2000, clock="wall")
    log("launch overhead per call: " + "  ".join(f"{k} {v * 1e6:.2f}us" for k, v in t.items()))
    ref = next((k for k in t if k.startswith("cuda-c")), "cupy elementwise (y += x)")
    cupy_ref = "cupy elementwise (y += x)"
    return {"seconds": t, "reference": ref, "ratio_vs_reference": {k: v / t[ref] for k, v in t.items()},
            "ratio_vs_cupy": {k: v / t[cupy_ref] for k, v in t.items()} if cupy_ref in t else {}}


def targets() -> dict:
    """The issue-8 targets, checked on this run's figures."""
    out = {}
    lo = RESULTS["sections"].get("launch_overhead", {})
    for label in ("polykern-cuda", "polykern-nvptx", "polykern-cuda (DeviceArray)"):
        r = lo.get("ratio_vs_cupy", {}).get(label)
        if r is not None:
            out[f"launch overhead {label} <= 2x CuPy"] = {"value": r, "met": r <= 2.0}
    rows = {r["kernel"]: r for r in RESULTS["sections"].get("kernels", {}).get("rows", [])}
    for kname in ("saxpy", "saxpy4"):
        frac = rows.get(kname, {}).get("fraction_of_copy_bandwidth", {})
        for label in ("polykern-cuda", "polykern-nvptx"):
            if label in frac:
                out[f"{kname} {label} >= 0.85 of copy bandwidth"] = {"value": frac[label],
                                                                      "met": frac[label] >= 0.85}
    for name, r in rows.items():
        sp = r.get("speedup_vs_cuda_c", {})
        for label in ("polykern-cuda", "polykern-nvptx"):
            if label in sp:  # time / nvcc time <= 1.10
                ratio = 1.0 / sp[label]
                out[f"{name} {label} within 10% of nvcc CUDA C"] = {"value": ratio, "met": ratio <= 1.10}
    for k, v in out.items():
        log(f"target {k}: {v['value']:.3f} {'MET' if v['met'] else 'MISSED'}")
    return out


@section("compile")
def compile_section(arch: int):
    """Warm compile times (in-process medians) of the polykern GPU targets, and Triton's (uncached)."""
    import subprocess

    import polykern as pk
    from kernels import PROBLEMS

    rows = []
    for p in PROBLEMS:
        for target in (f"cuda -arch=sm_{arch}", f"nvptx -arch=sm_{arch}"):
            try:
                pk.build([p.kernel], targets=[target])
                ts = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    mod = pk.build([p.kernel], targets=[target])
                    ts.append(time.perf_counter() - t0)
                data = mod.export()
                row = {"kernel": p.name, "tool": "polykern", "target": target, "warm_s": sorted(ts)[2],
                       "bytes": len(data)}
                try:  # load = read the artifact + realize the kernel (driver JIT/module load)
                    t0 = time.perf_counter()
                    pk.load(data)[p.kernel.name].resolve()
                    row["load_s"] = time.perf_counter() - t0
                except Exception as e:  # noqa: BLE001
                    row["load_error"] = str(e).splitlines()[0][:300]
                rows.append(row)
            except Exception as e:  # noqa: BLE001
                rows.append({"kernel": p.name, "tool": "polykern", "target": target, "error": str(e)[:300]})
        try:
            r = subprocess.run([sys.executable, os.path.join(HERE, "cold.py"), "triton-warm", p.name, "5"],
                               capture_output=True, text=True, timeout=600)
            w = json.loads(r.stdout.strip().splitlines()[-1])
            rows.append({"kernel": p.name, "tool": "triton", "target": f"sm_{arch}", "warm_s": w["warm_s"],
                         "bytes": w["bytes"], "cold_s": w["compile_s"]})
        except Exception as e:  # noqa: BLE001
            rows.append({"kernel": p.name, "tool": "triton", "error": str(e)[:300]})
    for r in rows:
        log(f"compile {r['kernel']:9} {r['tool']:8} {r.get('target', ''):18} "
            + (r.get("error") or f"warm {r['warm_s'] * 1e3:.1f} ms, {r['bytes']} B"
                                  + (f", load {r['load_s'] * 1e3:.2f} ms" if "load_s" in r else "")))
    return {"rows": rows}


def device_info() -> dict:
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    info = {"device": name, "cc": f"{props['major']}{props['minor']}", "cupy": cp.__version__,
            "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(), "driver": cp.cuda.runtime.driverGetVersion()}
    for mod in ("polykern", "triton", "torch", "pycuda"):
        try:
            m = __import__(mod)
            info[mod] = getattr(m, "__version__", None) or getattr(m, "VERSION_TEXT", "?")
        except Exception as e:  # noqa: BLE001
            info[mod] = f"unavailable ({type(e).__name__})"
    info["date"] = time.strftime("%Y-%m-%d %H:%M")
    return info


def plot(out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = RESULTS["sections"].get("kernels", {}).get("rows", [])
    lo = RESULTS["sections"].get("launch_overhead")
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    labels = sorted({k for r in rows for k in r["seconds"]})
    for ax, key, ylabel in ((axes[0], "speedup_vs_cuda_c", "CUDA C (nvcc) time / time"),
                            (axes[1], "fraction_of_copy_bandwidth", "bytes/s / cupy.copyto bytes/s")):
        sel = [r for r in rows if key in r]
        width = 0.8 / max(1, len(labels))
        for j, lab in enumerate(labels):
            xs = [i + (j - (len(labels) - 1) / 2) * width for i in range(len(sel))]
            ax.bar(xs, [r[key].get(lab, 0) for r in sel], width, label=lab)
        ax.set_xticks(range(len(sel)))
        ax.set_xticklabels([r["kernel"] for r in sel])
        ax.set_ylabel(ylabel)
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.legend(fontsize=7)
    axes[0].set_title("kernel time vs the same kernel in CUDA C", fontsize=9)
    axes[1].set_title("memory-bound kernels: fraction of device copy bandwidth", fontsize=9)
    if lo:
        ks = list(lo["ratio_vs_reference"])
        axes[2].bar(range(len(ks)), [lo["ratio_vs_reference"][k] for k in ks])
        axes[2].set_xticks(range(len(ks)))
        axes[2].set_xticklabels(ks, rotation=20, fontsize=7)
        axes[2].set_ylabel(f"time per launch / {lo['reference']}")
        axes[2].axhline(1.0, color="k", lw=0.8, ls="--")
        axes[2].set_title("launch overhead", fontsize=9)
    fig.tight_layout()
    write_output(os.path.join(out, "gpu.png"), figure_bytes(fig, dpi=120))
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description="polykern GPU benchmarks (see the module docstring)")
    ap.add_argument("--out", default=os.path.join(HERE, "out-gpu"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--sections", default="kernels,launch,compile")
    args = ap.parse_args(argv)
    output_folder(args.out)
    try:
        RESULTS["device"] = device_info()
        log(f"device: {RESULTS['device']}")
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["device"] = f"{type(e).__name__}: {e}"
        log(f"no CUDA device through CuPy: {e}")
    sections = set(args.sections.split(","))
    if "kernels" in sections:
        kernels_section(args.quick, 3 if args.quick else args.repeat, args.arch)
    if "launch" in sections:
        launch_section(3 if args.quick else args.repeat, args.arch)
    if "compile" in sections:
        compile_section(args.arch)
    try:
        RESULTS["targets"] = targets()
    except Exception as e:  # noqa: BLE001
        RESULTS["errors"]["targets"] = f"{type(e).__name__}: {e}"
    write_output(os.path.join(args.out, "gpu.json"), json.dumps(RESULTS, indent=1, default=str))
    try:
        plot(args.out)
    except Exception as e:  # noqa: BLE001
        log(f"plot failed: {e}")
    log(f"wrote {args.out}/gpu.json" + (f"; errors: {list(RESULTS['errors'])}" if RESULTS["errors"] else ""))
    return 1 if RESULTS["errors"] and not RESULTS["sections"] else 0


if __name__ == "__main__":
    sys.exit(main())
