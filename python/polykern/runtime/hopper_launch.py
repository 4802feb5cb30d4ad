"""What a launch of a Hopper kernel checks before the driver sees it (docs/language.md "Hopper ..."): the block
of its declared warpgroups, and each tensor map's shape, rows and buffer address. The Python CUDA runtime
(backends/cuda/polykern_cuda/runtime/tensor_maps.py) calls these; libpolykern (native/src/tensor_maps.c) checks the
same in the same words (messages from polykern.runtime.launch_rules, limits from polykern.ir.hopper, both generated into
kbin_tables.h), and
tests/test_launch_rules_native.py runs the same cases through both. Plain Python: importing it needs no driver.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

from ..errors import LaunchError
from ..ir import hopper as H
from ..ir.hopper import TMAP_ADDR_ALIGN as ADDR_ALIGN
from ..ir.hopper import TMAP_DIM_LIMIT as DIM_LIMIT
from ..ir.hopper import TMAP_ROW_ALIGN as ROW_ALIGN
from ..ir.types import SCALAR_TYPES
from ..kbin.messages import quote
from .launch_rules import message

__all__ = ["check_block", "check_map"]


def check_block(kernel: str, warpgroups: int, block3: Sequence[int]) -> None:
    """A LaunchError unless ``block3`` holds exactly ``warpgroups`` warpgroups (0: none declared, any block)."""
    if warpgroups and block3[0] * block3[1] * block3[2] != H.WARPGROUP * warpgroups:
        raise LaunchError(message("WARPGROUPS_BLOCK", kernel, warpgroups, H.WARPGROUP * warpgroups, *block3))


def check_map(kernel: str, m: dict, ptr: int, shape: Tuple[int, int], size: Optional[int]) -> str:
    """What a launch checks of map ``m`` (a ``tensor_maps_of`` entry) over a buffer at ``ptr`` of ``size``
    elements (None: unknown) viewed as ``shape``: a LaunchError naming the map, else the map's description
    for later messages."""
    rows, cols = shape
    elem = SCALAR_TYPES[m["elem"]].nbytes
    where = message("TMAP_WHERE", kernel, quote(m["name"]), quote(m["buffer"]))
    if not (0 < rows < DIM_LIMIT and 0 < cols < DIM_LIMIT):
        raise LaunchError(message("TMAP_SHAPE", where, rows, cols))
    if size is not None and rows * cols > size:
        raise LaunchError(message("TMAP_FIT", where, rows, cols, rows * cols, size))
    if (cols * elem) % ROW_ALIGN:
        raise LaunchError(message("TMAP_ROW", where, cols, m["elem"], cols * elem, ROW_ALIGN))
    if ptr % ADDR_ALIGN:
        raise LaunchError(message("TMAP_ADDR", where, ptr, ADDR_ALIGN))
    return where
