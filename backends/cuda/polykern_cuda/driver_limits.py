"""The CUDA driver's launch facts both CUDA runtimes act on — the Python one (runtime/kernel.py,
runtime/tensor_maps.py) and libpolykern (native/src/cuda_exec.c, through native/src/kbin_tables.h,
generated from this module by tools/gen_native_tables.py). Plain data: importing it needs no driver.
"""
from __future__ import annotations

__all__ = ["DEFAULT_SHARED", "FUNC_ATTR_MAX_DYNAMIC_SHARED", "dynamic_allowance", "needs_opt_in"]

#: Static plus dynamic shared memory a block may use without opting in: past it, a launch must first
#: raise the function's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (32 KiB static + 20 KB dynamic
#: fails to launch without it).
DEFAULT_SHARED = 48 * 1024
#: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (cuFuncSetAttribute).
FUNC_ATTR_MAX_DYNAMIC_SHARED = 8


def dynamic_allowance(static_bytes: int) -> int:
    """Dynamic shared bytes a function of ``static_bytes`` static ones may launch with before opting in."""
    return max(0, DEFAULT_SHARED - static_bytes)


def needs_opt_in(static_bytes: int, dynamic_bytes: int) -> bool:
    """Whether a launch of ``dynamic_bytes`` must opt in first (libpolykern: pk_cuda_needs_opt_in)."""
    return dynamic_bytes > dynamic_allowance(static_bytes)
