"""THE launch rules every runtime enforces — one definition for the Python runtimes and libpolykern.

The Python runtimes import these limits and messages (:mod:`polykern.runtime.launch`,
:mod:`polykern.runtime.shared_launch`, the backends' runtimes); ``native/src/kbin_tables.h`` is generated
from this module by ``tools/gen_native_tables.py`` (with the grammar of the ``dynamic_shared``
attribute from :mod:`polykern.ir.dynamic_shared` and the CUDA driver facts from
``polykern_cuda.driver_limits`` / ``tensor_map_codes``), and ``tests/test_native.py`` fails while
the header is stale. Where a rule is logic rather than data, ``tests/test_launch_rules_native.py``
runs the same cases through both implementations and compares verdicts and messages.

Messages follow :mod:`polykern.kbin.messages`' convention, widened for launches: ``%s`` (a string,
quoted by the caller where it comes from an artifact), ``%u`` (unsigned; ``%llu`` in C), ``%d``
(signed; ``%lld`` in C) and ``%x`` (hexadecimal; ``%llx`` in C).
"""
from __future__ import annotations

from typing import Dict, Tuple

__all__ = ["MAX_DIM", "MAX_GLOBAL_SIZE", "PORTABLE_MAX_GRID", "CPU_STACK_MARGIN", "MESSAGES", "message",
           "grid_limit_name"]

#: Grid and block dimensions are 1 .. MAX_DIM: the CPU ABI passes them as int32.
MAX_DIM = 2 ** 31 - 1
#: The language's limit: ``global_id(d)`` is an i32, so a launch has at most 2**31 work-items per
#: dimension (ids 0 .. 2**31 - 1), on every backend.
MAX_GLOBAL_SIZE = 2 ** 31
#: CUDA's grid limits (x, y, z): the CPU, WebGPU and OpenCL runtimes (and libpolykern's CPU runtime)
#: enforce them too, so a launch that runs on one backend is valid on every other (Vulkan and CUDA
#: check their devices' own, usually these).
PORTABLE_MAX_GRID: Tuple[int, int, int] = (2 ** 31 - 1, 65535, 65535)
#: Bytes of CPU worker stack a launch keeps free beyond its shared and per-work-item storage.
CPU_STACK_MARGIN = 1 << 20


def grid_limit_name(runtime: str) -> str:
    """How :data:`MESSAGES` ``GRID_LIMIT`` names the limits of a runtime that keeps CUDA's grid limits."""
    return f"the {runtime} runtime (it keeps CUDA's grid limits)"


MESSAGES: Dict[str, str] = {
    # launch shape (launch.check_global_size, check_grid_limits / native/src/program.c)
    "GLOBAL_SIZE": "kernel '%s': grid[%u] * block[%u] = %u * %u = %u work-items in dimension %s, but "
                   "global_id(%u) is an i32: at most %u (2**31) work-items per dimension",
    "GRID_LIMIT": "kernel '%s': grid (%u, %u, %u) has %u workgroups in dimension %s; %s allows at most "
                  "(%u, %u, %u) (x, y, z)",
    # the pk.shared_dynamic array (shared_launch.dynamic_shared_of / program.c dynamic_shared_bytes)
    "DYNAMIC_SHARED_ATTR": "kernel '%s': attribute dynamic_shared = %s does not name an i32 size argument "
                           "and an element size (%s)",
    # Hopper kernels (polykern_cuda/runtime/tensor_maps.py / native/src/tensor_maps.c)
    "WARPGROUPS_BLOCK": "kernel '%s' runs blocks of exactly %u warpgroups (%u work-items; pk.warpgroups), "
                        "got block (%u, %u, %u)",
    "TMAP_WHERE": "kernel '%s', tensor map %s over %s",
    "TMAP_SHAPE": "%s: shape (%d, %d) must be positive and below 2**32",
    "TMAP_FIT": "%s: shape (%d, %d) needs %u elements, the buffer has %u",
    "TMAP_ROW": "%s: a row of %d %s elements is %u bytes; the tensor copy engine needs rows of a multiple "
                "of %u bytes",
    "TMAP_ADDR": "%s: the buffer's address 0x%x is not %u-byte aligned (an offset view?)",
}


def message(key: str, *args: object) -> str:
    """``MESSAGES[key]`` filled in with ``args`` (the same text C's printf gives)."""
    return MESSAGES[key].replace("%u", "%d") % args
