"""The named-barrier ring kernel ``relay`` and its expected result, shared by tests/test_hopper_named_barrier.py
(interpreter, CUDA C, PTX) and backends/cuda/tests (test_hopper_nvptx.py, test_hopper_runtime.py: the GPU)."""
import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32


@pk.kernel
def relay(n_iter: i32, A: Buffer[f32, "readonly"], C: Buffer[f32]):
    """Warpgroup 0 fills the tile n_iter times, warpgroup 1 sums it reversed; barrier 1 says "full" (the
    producer arrives, the consumer waits), barrier 2 "empty" (the other way round); warpgroup 2 takes part in
    neither and leaves. Each block works on its own 128 elements of A and C."""
    pk.warpgroups(3)
    tile = pk.shared(f32, 128)
    wg = pk.warpgroup_id()
    t = pk.local_id(0) % 128
    base = pk.group_id(0) * 128
    acc = 0.0
    for it in range(n_iter):
        if wg == 0:
            if it > 0:
                pk.named_barrier(2, 256)
            tile[t] = A[base + t] + pk.f32(it)
            pk.named_arrive(1, 256)
        if wg == 1:
            pk.named_barrier(1, 256)
            acc += tile[127 - t]
            if it + 1 < n_iter:
                pk.named_arrive(2, 256)
    if wg == 1:
        C[base + t] = acc


def relay_expected(a: np.ndarray, n_iter: int) -> np.ndarray:
    """What ``relay`` computes, block by block (every step exact on these small integers)."""
    blocks = a.reshape(-1, 128)[:, ::-1].astype(np.float64)
    return (blocks * n_iter + n_iter * (n_iter - 1) / 2).astype(np.float32).reshape(-1)
