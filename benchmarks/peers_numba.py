"""The benchmark kernels in Numba, as a CPU user would write them: ``@njit(parallel=True)`` with
``prange`` over the outer loop (matmul in i-k-j order so the inner loop is contiguous).
Each ``make(problem)`` returns ``(call(inputs), compile(signature inputs) -> seconds)`` or raises
ImportError when Numba is not installed."""
from __future__ import annotations

import time

import numpy as np


def _defs():
    import numba
    from numba import njit, prange

    def saxpy(a, x, y):
        for i in prange(x.shape[0]):
            y[i] = a * x[i] + y[i]

    def reduction(x):
        acc = np.float32(0.0)
        for i in prange(x.shape[0]):
            acc += x[i]
        return acc

    def matmul(a, b, c):
        m, kk = a.shape
        n = b.shape[1]
        for i in prange(m):
            for j in range(n):
                c[i, j] = 0.0
            for k in range(kk):
                aik = a[i, k]
                for j in range(n):
                    c[i, j] += aik * b[k, j]

    def stencil(src, dst):
        h, w = src.shape
        for y in prange(h):
            for x in range(w):
                if x == 0 or y == 0 or x == w - 1 or y == h - 1:
                    dst[y, x] = src[y, x]
                else:
                    dst[y, x] = np.float32(0.2) * (src[y, x] + src[y, x - 1] + src[y, x + 1] + src[y - 1, x]
                                                   + src[y + 1, x])

    return numba, njit, {"saxpy": saxpy, "reduction": reduction, "matmul": matmul, "stencil": stencil}


ARGS = {
    "saxpy": lambda d: (d["a"], d["x"], d["y"]),
    "reduction": lambda d: (d["x"],),
    "matmul": lambda d: (d["a"], d["b"], d["c"]),
    "stencil": lambda d: (d["src"], d["dst"]),
}


def compiled(name: str, inputs, parallel: bool = True):
    """(dispatcher, compile seconds): a fresh dispatcher compiled for the inputs' types."""
    numba, njit, funcs = _defs()
    disp = njit(parallel=parallel, cache=False, fastmath=False)(funcs[name])
    args = ARGS[name](inputs)
    sig = tuple(numba.typeof(a) for a in args)
    t0 = time.perf_counter()
    disp.compile(sig)
    return disp, time.perf_counter() - t0


def version():
    import numba

    return numba.__version__
