"""Conformance kernels, part 2: workgroup cooperation (shared memory, barriers, atomics) and the
examples users copy from (each example's own NumPy check is reused as-is)."""

import importlib.util
import os

import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32, u32

from .case import Case, launch_1d

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def _example(name):
    spec = importlib.util.spec_from_file_location(f"polykern_example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_saxpy, _reduction, _matmul = _example("saxpy"), _example("reduction"), _example("matmul")
_histogram, _prefix, _stencil = _example("histogram"), _example("prefix_sum"), _example("stencil2d")

EXAMPLE_CASES = [
    Case("example_saxpy", [_saxpy.saxpy], _saxpy.run),
    Case("example_reduction", [_reduction.block_sum], _reduction.run, frozenset(["atomic_f32"])),
    Case("example_matmul", [_matmul.matmul], _matmul.run),
    Case("example_histogram", [_histogram.histogram], _histogram.run),
    Case("example_prefix_sum", [_prefix.scan_blocks, _prefix.add_offsets], _prefix.run),
    Case("example_stencil2d", [_stencil.jacobi], _stencil.run),
]


def _run_odd_sizes(mod, rng):
    for n, block in [(1, 64), (7, 4), (1000, 33), (4099, 128), (65537, 256)]:
        _saxpy.run(mod, rng, n=n, block=block)


ODD = Case("odd_sizes_saxpy", [_saxpy.saxpy], _run_odd_sizes)


@pk.kernel
def atomics_int(n: i32, vals: Buffer[i32, "readonly"], acc: Buffer[i32], slots: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        v = vals[i]
        pk.atomic_add(acc, 0, v)
        pk.atomic_min(acc, 1, v)
        pk.atomic_max(acc, 2, v)
        old = pk.atomic_xchg(acc, 3, v)
        pk.atomic_add(acc, 4, 1 if old != v else 0)
        # every work-item claims the first free slot with compare-and-swap
        j = 0
        while j < n:
            if pk.atomic_cas(slots, j, -1, i) == -1:
                break
            j += 1


def _run_atomics_int(mod, rng):
    n = 777
    vals = rng.integers(-1000, 1000, n, dtype=np.int32)
    acc = np.array([0, 2**31 - 1, -(2**31), 0, 0], np.int32)
    slots = np.full(n, -1, np.int32)
    launch_1d(mod, "atomics_int", n, [n, vals, acc, slots], block=64)
    assert acc[0] == vals.sum(dtype=np.int64).astype(np.int32), acc
    assert acc[1] == vals.min() and acc[2] == vals.max(), acc
    assert acc[3] in set(vals.tolist())
    np.testing.assert_array_equal(np.sort(slots), np.arange(n))  # each item got exactly one slot


ATOMICS_INT = Case("atomics_int", [atomics_int], _run_atomics_int)


@pk.kernel
def atomic_float(n: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        pk.atomic_add(out, i % 4, x[i])


def _run_atomic_float(mod, rng):
    n = 4096
    x = rng.integers(-64, 64, n).astype(np.float32) * np.float32(0.25)  # exact in any summation order
    out = np.zeros(4, np.float32)
    launch_1d(mod, "atomic_float", n, [n, x, out], block=128)
    np.testing.assert_array_equal(out, x.reshape(-1, 4).sum(axis=0))


ATOMIC_F32 = Case("atomic_f32_add", [atomic_float], _run_atomic_float, frozenset(["atomic_f32"]))


@pk.kernel
def rotate_rounds(n: i32, x: Buffer[u32, "readonly"], out: Buffer[u32]):
    """Each round every work-item passes its value to its right neighbour in the workgroup."""
    s = pk.shared(u32, 128)
    lid = pk.local_id(0)
    size = pk.local_size(0)
    i = pk.global_id(0)
    v = x[i] if i < n else 0
    for r in range(5):
        s[lid] = v * 3 + u32(r)
        pk.barrier()
        v = s[(lid + size - 1) % size]
        pk.barrier()
    if i < n:
        out[i] = v


def _run_rotate(mod, rng):
    block = 128
    n = block * 9 - 5
    x = rng.integers(0, 1000, n, dtype=np.uint32)
    out = np.zeros(n, np.uint32)
    launch_1d(mod, "rotate_rounds", n, [n, x, out], block=block)
    padded = np.zeros(block * 9, np.uint32)
    padded[:n] = x
    v = padded.reshape(9, block)
    for r in range(5):
        v = np.roll(v * np.uint32(3) + np.uint32(r), 1, axis=1)
    np.testing.assert_array_equal(out, v.ravel()[:n])


ROTATE = Case("barrier_in_loop", [rotate_rounds], _run_rotate)

CASES = EXAMPLE_CASES + [ODD, ATOMICS_INT, ATOMIC_F32, ROTATE]
