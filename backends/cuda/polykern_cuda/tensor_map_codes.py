"""How a Hopper tensor map (polykern.ir.hopper) is encoded for the CUDA driver: the cuda.h values both CUDA
runtimes pass to ``cuTensorMapEncodeTiled`` — the Python one (runtime/tensor_maps.py) and libpolykern
(native/src/cuda_exec.c, through native/src/kbin_tables.h, generated from this module by
tools/gen_native_tables.py). Plain data: importing it needs no driver.
"""
from __future__ import annotations

from polykern.ir.hopper import TMAP_PARAM_ALIGN, TMAP_PARAM_BYTES

__all__ = ["MAP_BYTES", "MAP_ALIGN", "DTYPE", "SWIZZLE", "L2_256B", "ROW_ALIGN", "ADDR_ALIGN", "DIM_LIMIT"]

#: A CUtensorMap: 128 bytes, 64-byte aligned (a hidden ``const __grid_constant__`` kernel parameter).
MAP_BYTES, MAP_ALIGN = TMAP_PARAM_BYTES, TMAP_PARAM_ALIGN
#: CUtensorMapDataType of each element type a map may view (polykern.ir.hopper.TMAP_TYPES).
DTYPE = {"u32": 2, "i32": 3, "f16": 6, "f32": 7, "bf16": 9}
#: CUtensorMapSwizzle of each swizzle span in bytes (0: none, 128: CU_TENSOR_MAP_SWIZZLE_128B).
SWIZZLE = {0: 0, 128: 3}
#: CU_TENSOR_MAP_L2_PROMOTION_L2_256B.
L2_256B = 3
#: The copy engine's demands on the viewed matrix: rows of a multiple of ROW_ALIGN bytes, a buffer address
#: aligned to ADDR_ALIGN bytes, both dimensions positive and below DIM_LIMIT (checked at launch).
ROW_ALIGN = 16
ADDR_ALIGN = 16
DIM_LIMIT = 2 ** 32
