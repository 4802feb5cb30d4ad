"""Kernels with a pk.shared_dynamic array, shared by tests/test_dynamic_shared.py and tests/test_native.py
(which launches them through libpolykern; its annotations are postponed, so it cannot define kernels)."""
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


@pk.kernel
def rev_tile_static(n: i32, x: Buffer[f32], y: Buffer[f32]):
    """rev_tile with a 32 KiB static shared array besides the dynamic one: past 48 KiB together, CUDA
    needs the dynamic bytes opted into even when they alone are under 48 KiB."""
    tile = pk.shared_dynamic(f32)
    pad = pk.shared(f32, 8192)
    l = pk.local_id(0)
    b = pk.local_size(0)
    g = pk.group_id(0) * b + l
    pad[l] = f32(l)
    if g < n:
        tile[l] = x[g]
    pk.barrier()
    if g < n:
        y[g] = tile[b - 1 - l] + pad[b - 1 - l] - f32(b - 1 - l)
