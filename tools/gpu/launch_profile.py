"""Where the host time of one polykern CUDA launch goes (run ON the GPU machine; needs CuPy).

    python3 tools/gpu/launch_profile.py      # PYTHONPATH as tools/gpu/run_gpu_suite.sh sets it

Times (microseconds per call, host wall clock, median of 5 batches of back-to-back calls, the device
synchronized around each batch) a one-block saxpy launched through every layer — the root module's
Launcher, the CUDAKernel handle, with CuPy arrays, DeviceArrays, NumPy arrays — next to the pieces
of the fast path alone (CuPy's ``__cuda_array_interface__``, the one-call pointer check, the
current-context check, the struct pack, pycuda's ``_launch_kernel`` with a prepacked buffer) and
the peers (CuPy RawKernel, CuPy elementwise). Then the top of a cProfile of the CUDAKernel call.
"""
from __future__ import annotations

import cProfile
import io
import os
import pstats
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "examples"), os.path.join(ROOT, "python"), os.path.join(ROOT, "backends", "cuda")]


def per_call(f, n=5000, batches=5):
    import cupy as cp

    f()
    cp.cuda.runtime.deviceSynchronize()
    out = []
    for _ in range(batches):
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        cp.cuda.runtime.deviceSynchronize()
        out.append((time.perf_counter() - t0) / n)
    return sorted(out)[len(out) // 2] * 1e6


def main():
    import cupy as cp
    import numpy as np

    import polykern as pk
    from polykern.runtime.launch import fast_dims
    from polykern_cuda import runtime as rt
    from polykern_cuda.runtime import libcuda
    from saxpy import saxpy

    dev = rt.get_device()
    arch = dev.arch
    print(f"device: {dev.describe()}")
    m = pk.build([saxpy], targets=[f"cuda -arch={arch}"])
    launcher = m["saxpy"]
    k = launcher.resolve()[1]
    n = 256
    x, y = cp.ones(n, cp.float32), cp.ones(n, cp.float32)
    dx, dy = rt.to_device(np.ones(n, np.float32)), rt.to_device(np.ones(n, np.float32))
    hx, hy = np.ones(n, np.float32), np.ones(n, np.float32)
    ptr = x.data.ptr
    params = k._struct.pack(n, 2.0, ptr, y.data.ptr)
    fn = k.loaded.functions[k.entry]
    streams: list = []

    def checks_only():  # the fast path's checks and packing, without the launch
        g, b = fast_dims(1), fast_dims(256)
        assert (g, b) in k._dims_ok
        vals = [k._convs[0](n), k._convs[1](2.0), k._convs[2](x, streams), k._convs[3](y, streams)]
        return k._struct.pack(*vals)

    def scope_pair():
        with dev.scope():
            pass

    src = r'''extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* y) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }'''
    raw = cp.RawModule(code=src, options=(f"--gpu-architecture={arch}",)).get_function("saxpy")
    launcher(n, 2.0, x, y, grid=1, block=256)  # arms the fast path (dims checked once)
    cur = libcuda.current_context()
    print(f"primary context current on this thread (CuPy made it so): {cur == dev.context_handle}")
    rows = [
        ("Launcher (root module) call, CuPy arrays", lambda: launcher(n, 2.0, x, y, grid=1, block=256)),
        ("CUDAKernel call, CuPy arrays", lambda: k(n, 2.0, x, y, grid=1, block=256)),
        ("CUDAKernel call, DeviceArrays", lambda: k(n, 2.0, dx, dy, grid=1, block=256)),
        ("CUDAKernel call, NumPy arrays (synchronous, copies)", lambda: k(n, 2.0, hx, hy, grid=1, block=256)),
        ("  fast-path checks + pack only (no launch)", checks_only),
        ("  cupy __cuda_array_interface__", lambda: x.__cuda_array_interface__),
        ("  libcuda.pointer_context (cuPointerGetAttribute)", lambda: libcuda.pointer_context(ptr)),
        ("  libcuda.current_context (cuCtxGetCurrent)", libcuda.current_context),
        ("  fast_dims x2", lambda: (fast_dims(1), fast_dims(256))),
        ("  struct pack", lambda: k._struct.pack(n, 2.0, ptr, ptr)),
        ("  dev.count (locked counter)", lambda: dev.count("profile")),
        ("  pycuda _launch_kernel, prepacked", lambda: fn._launch_kernel((1, 1, 1), (256, 1, 1), params, 0, None)),
        ("  dev.scope() push/pop", scope_pair),
        ("cupy RawKernel (NVRTC) call", lambda: raw((1,), (256,), (np.int32(n), np.float32(2.0), x, y))),
        ("cupy elementwise y += x", lambda: y.__iadd__(x)),
    ]
    print(f"{'what':58} us/call")
    for label, f in rows:
        try:
            us = per_call(f, n=500 if "NumPy" in label else 5000)
            print(f"{label:58} {us:8.2f}")
        except Exception as e:  # noqa: BLE001
            print(f"{label:58} FAILED {type(e).__name__}: {e}")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20000):
        k(n, 2.0, x, y, grid=1, block=256)
    pr.disable()
    cp.cuda.runtime.deviceSynchronize()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(18)
    print(buf.getvalue())
    print("stats:", rt.stats())


if __name__ == "__main__":
    main()
