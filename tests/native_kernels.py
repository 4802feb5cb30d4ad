"""Kernels that tests/test_native.py launches through libpolykern (that module postpones its annotations,
so its kernels live here)."""
import polykern as pk
from polykern import Buffer, f32, i32


@pk.kernel
def rev_tile(n: i32, x: Buffer[f32], y: Buffer[f32]):
    """Reverses each block-sized tile of x through a pk.shared_dynamic array sized by the launch."""
    tile = pk.shared_dynamic(f32)
    l = pk.local_id(0)
    b = pk.local_size(0)
    g = pk.group_id(0) * b + l
    if g < n:
        tile[l] = x[g]
    pk.barrier()
    if g < n:
        y[g] = tile[b - 1 - l]
