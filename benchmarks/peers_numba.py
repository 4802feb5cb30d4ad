"""The benchmark kernels in Numba, as a CPU user would write them: ``@njit(parallel=True)`` with
``prange`` over the outer loop (matmul in i-k-j order so the inner loop is contiguous). Numba
compiles for the host CPU (like polykern's ``-mcpu=native``).

``compiled(name, inputs)`` compiles a fresh dispatcher (the compile-time figure);
``write_cache_module(dir)`` writes the same functions as a module with ``cache=True`` (Numba's
on-disk artifact: the size and load-time figures)."""
from __future__ import annotations

import os
import time

import numpy as np

SOURCE = '''
import numpy as np
from numba import prange


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


def copy(src, dst):
    for i in prange(src.shape[0]):
        dst[i] = src[i]


def softmax(x, out):
    for i in prange(x.shape[0]):
        m = x[i, 0]
        for j in range(1, x.shape[1]):
            m = max(m, x[i, j])
        s = np.float32(0.0)
        for j in range(x.shape[1]):
            e = np.exp(x[i, j] - m)
            out[i, j] = e
            s += e
        inv = np.float32(1.0) / s
        for j in range(x.shape[1]):
            out[i, j] *= inv
'''

NAMES = ("saxpy", "reduction", "matmul", "stencil")

ARGS = {
    "saxpy": lambda d: (d["a"], d["x"], d["y"]),
    "reduction": lambda d: (d["x"],),
    "matmul": lambda d: (d["a"], d["b"], d["c"]),
    "stencil": lambda d: (d["src"], d["dst"]),
    "copy": lambda d: (d["src"], d["dst"]),
    "softmax": lambda d: (d["x"], d["out"]),
}


def small_inputs(name: str) -> dict:
    """Inputs of the right types for compiling ``name`` (the values do not matter)."""
    v = np.zeros(4, np.float32)
    m = np.zeros((4, 4), np.float32)
    return {"a": np.float32(1) if name == "saxpy" else m, "x": v, "y": v.copy(), "b": m, "c": m.copy(),
            "src": m if name == "stencil" else v, "dst": m.copy() if name == "stencil" else v.copy()}


def _functions():
    ns: dict = {}
    exec(compile(SOURCE, "<peers_numba>", "exec"), ns)  # noqa: S102 - our own constant source
    return ns


def compiled(name: str, inputs, parallel: bool = True):
    """(dispatcher, compile seconds): a fresh dispatcher compiled for the inputs' types."""
    import numba

    disp = numba.njit(parallel=parallel, cache=False)(_functions()[name])
    sig = tuple(numba.typeof(a) for a in ARGS[name](inputs))
    t0 = time.perf_counter()
    disp.compile(sig)
    return disp, time.perf_counter() - t0


def write_cache_module(directory: str) -> str:
    """Write ``nbk.py``: the kernels with ``@njit(parallel=True, cache=True)``."""
    lines = [SOURCE, "from numba import njit"]
    for n in NAMES:
        lines.append(f"{n} = njit(parallel=True, cache=True)({n})")
    path = os.path.join(directory, "nbk.py")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def cache_bytes(directory: str, name: str) -> int:
    """Bytes of Numba's cache files (index + data) for function ``name`` of ``nbk.py``."""
    cache = os.path.join(directory, "__pycache__")
    total = 0
    for f in os.listdir(cache) if os.path.isdir(cache) else ():
        if f.startswith(f"nbk.{name}-") and f.endswith((".nbi", ".nbc")):
            total += os.path.getsize(os.path.join(cache, f))
    return total


def version():
    import numba

    return numba.__version__
