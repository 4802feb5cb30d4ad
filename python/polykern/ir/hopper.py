"""Hopper's matrix path as language features (docs/language.md "Hopper: warpgroup MMA, tensor copies,
transaction barriers"): the objects a kernel declares (``HopperFacts``), the operations on them
(``ir.HopperOp`` with an ``op`` of ``OPS``), the rules every operation obeys, and their exact meaning
(the reference the IR interpreter computes and the CUDA codegen must reproduce).

The objects:

- a *warpgroup* is 128 consecutive work-items in the linear local order (``local_id(0)`` fastest);
  a kernel using warpgroup operations declares how many it runs (``pk.warpgroups(n)``: blocks of
  exactly ``128 n`` work-items, checked at launch);
- a *barrier set* (``pk.mbarriers(n)``) is ``n`` transaction barriers in shared memory; barrier ``i``
  has an arrival count (set by ``mbarrier_init``), pending arrivals, a pending transaction byte count
  and a phase bit. ``mbarrier_arrive`` removes one pending arrival, ``mbarrier_arrive_tx(b)`` does
  that and adds ``b`` expected bytes; a tensor copy completing on it removes its bytes. When no
  arrival and no byte is pending, the phase completes: the phase bit flips and the arrivals are
  re-armed. ``mbarrier_wait(i, p)`` waits until the phase of parity ``p`` has completed, that is
  until the barrier's current phase bit differs from ``p`` (so a wait for parity 1 on a fresh
  barrier returns at once: that phase counts as complete);
- a *tensor map* (``pk.tensor_map(buf, (rows, cols), (box_rows, box_cols), swizzle)``) views a
  ``Buffer`` as a row-major ``rows x cols`` matrix (``rows``/``cols``: scalar parameters or
  constants, read at launch); a tensor copy moves one ``box_rows x box_cols`` box of it;
- a *warpgroup accumulator* (``pk.wg_acc(f32, 64, n)``) is a 64 x n matrix held by one warpgroup.

Shared tiles: a shared array that a tensor copy writes or ``wgmma`` reads is *swizzled*: on the GPU
its rows of 128 bytes are stored with the 16-byte chunks of row ``r`` permuted (chunk ``c`` at
``c ^ (r % 8)``), the layout both the copy engine and the tensor cores use, so such an array is used
only by those operations (plain indexing is refused) and is aligned to 1024 bytes. Every offset below
is a *logical* element index (row-major, as if unswizzled): the swizzle never shows in the language.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from . import nodes as ir
from .types import ScalarType

#: Work-items per warpgroup (four 32-wide warps on NVIDIA; the same number everywhere).
WARPGROUP = 128
#: Rows of a warpgroup accumulator and of wgmma's A operand (m64).
WG_M = 64
#: The K of one wgmma for 16-bit inputs.
WG_K = 16
#: The swizzle span (bytes of one tile row) the language offers: the 128-byte swizzle.
SWIZZLE_BYTES = 128
#: Swizzle names in ``pk.tensor_map``.
SWIZZLES = {"128B": 128}
#: Element types of wgmma inputs and the accumulators they multiply into.
WG_INPUTS = {"f16": ("f32",), "bf16": ("f32",)}
#: Types a tensor map may view (the 16-bit types wgmma reads; 32-bit ones for plain tiles).
TMAP_TYPES = ("f16", "bf16", "f32", "i32", "u32")
#: Largest box dimension of a tensor copy (cuTensorMapEncodeTiled's limit).
BOX_MAX = 256
#: Registers per thread ``setmaxnreg`` may ask for: 24..256 in steps of 8.
NREG_RANGE = (24, 256)
#: Dynamic shared memory alignment a swizzled tile needs.
SWIZZLE_ALIGN = 1024

#: op -> (names it takes, expression operands it takes), documentation order.
OPS = {
    "mbar_init": (("bars",), ("index", "count")),
    "mbar_arrive": (("bars",), ("index",)),
    "mbar_arrive_tx": (("bars",), ("index", "bytes")),
    "mbar_wait": (("bars",), ("index", "parity")),
    "tma_load": (("dst", "tmap", "bars"), ("dst_off", "row", "col", "index")),
    "wg_fill": (("acc",), ("value",)),
    "wgmma": (("acc", "a", "b"), ("a_off", "b_off")),
    "wgmma_commit": ((), ()),
    "wgmma_wait": ((), ("pending",)),
    "wg_store": (("buf", "acc"), ("off", "ld")),
    "setmaxnreg_inc": ((), ("count",)),
    "setmaxnreg_dec": ((), ("count",)),
}
#: op -> the builtin a kernel writes it with (``pk.<builtin>``), where the two differ.
BUILTIN_OF = {"mbar_init": "mbarrier_init", "mbar_arrive": "mbarrier_arrive", "mbar_arrive_tx": "mbarrier_arrive_tx",
              "mbar_wait": "mbarrier_wait", "setmaxnreg_inc": "setmaxnreg", "setmaxnreg_dec": "setmaxnreg"}


def builtin(op: str) -> str:
    """``pk.<name>`` of ``op``, for messages."""
    return f"pk.{BUILTIN_OF.get(op, op)}"


#: Operations every work-item of a warpgroup performs together (with the same operands).
WARPGROUP_OPS = ("wg_fill", "wgmma", "wgmma_commit", "wgmma_wait", "wg_store", "setmaxnreg_inc",
                 "setmaxnreg_dec")
#: FunctionInfo attributes that carry the facts a runtime needs to launch.
ATTR_WARPGROUPS = "warpgroups"
ATTR_TENSOR_MAPS = "tensor_maps"
#: Set ("1024") when a swizzled tile is the pk.shared_dynamic array: the CUDA runtime adds that many bytes of
#: dynamic shared memory so the kernel can start the tile at a 1024-byte boundary.
ATTR_DYNAMIC_ALIGN = "shared_dynamic_align"


@dataclass(frozen=True)
class TensorMap:
    """``pk.tensor_map(buffer, (rows, cols), (box_rows, box_cols), swizzle)``."""

    buffer: str                           # the Buffer parameter it views
    elem: ScalarType
    shape: Tuple[Union[str, int], Union[str, int]]  # rows, cols: a scalar parameter's name or a constant
    box: Tuple[int, int]                  # box_rows, box_cols
    swizzle: int                          # bytes (SWIZZLES), 0 for none

    @property
    def box_bytes(self) -> int:
        return self.box[0] * self.box[1] * self.elem.nbytes

    def to_json(self) -> dict:
        return {"buffer": self.buffer, "elem": self.elem.name, "shape": list(self.shape), "box": list(self.box),
                "swizzle": self.swizzle}


@dataclass(frozen=True)
class WgAccType:
    """A warpgroup accumulator: ``64 x n`` of ``elem``."""

    elem: ScalarType
    n: int

    def __str__(self) -> str:
        return f"wg_acc[{self.elem}, 64x{self.n}]"


@dataclass(frozen=True)
class MBarrierSetType:
    """``pk.mbarriers(n)``: n transaction barriers in shared memory."""

    count: int

    def __str__(self) -> str:
        return f"mbarriers[{self.count}]"


@dataclass
class HopperFacts:
    warpgroups: int = 0
    mbarriers: Dict[str, int] = field(default_factory=dict)
    tensor_maps: Dict[str, TensorMap] = field(default_factory=dict)
    accs: Dict[str, WgAccType] = field(default_factory=dict)
    #: shared arrays holding swizzled tiles -> swizzle bytes
    swizzled: Dict[str, int] = field(default_factory=dict)


def facts(fn: ir.Function) -> HopperFacts:
    """``fn``'s Hopper facts, created on first use."""
    if fn.hopper is None:
        fn.hopper = HopperFacts()
    return fn.hopper


def check_acc(elem: ScalarType, n: int) -> Optional[str]:
    """Why ``pk.wg_acc(elem, 64, n)`` is not an accumulator of the language, or None."""
    if elem.name != "f32":
        return f"a warpgroup accumulator holds f32, not {elem}"
    if not (8 <= n <= 256 and n % 8 == 0):
        return f"N = {n}: wgmma's N is a multiple of 8 from 8 to 256"
    return None


def check_operand_offset(off: int, what: str) -> Optional[str]:
    """Why a wgmma operand at logical element ``off`` of a 128B-swizzled 16-bit tile cannot be read, or
    None: the operand's rows are 64 elements (128 bytes) long, its first row must start an 8-row swizzle
    atom (``off // 64`` a multiple of 8) and its K slice must start at element 0, 16, 32 or 48 of the row."""
    if off < 0 or (off // 64) % 8 != 0 or off % 16 != 0:
        return (f"the {what} operand starts at element {off}: a wgmma operand starts at row r, column c of "
                "its tile (64 elements a row) with r a multiple of 8 and c one of 0, 16, 32, 48")
    return None


def check_tma_dst(off: int, swizzle: int, elem: ScalarType) -> Optional[str]:
    """Why a tensor copy into logical element ``off`` of a shared array cannot be done, or None."""
    align = SWIZZLE_ALIGN if swizzle else 128
    if off < 0 or (off * elem.nbytes) % align:
        return (f"a tensor copy lands at element {off} ({off * elem.nbytes} bytes): it must start at a "
                f"multiple of {align} bytes of the shared array")
    return None


def check_swizzled_use(fn: ir.Function) -> Optional[Tuple[str, object]]:
    """(message, node) for the first plain use of a swizzled array (indexing, vector access, copies,
    fragments), or None: such an array holds tiles in the hardware's layout, read and written only by
    tensor copies and wgmma."""
    hf = fn.hopper
    if hf is None or not hf.swizzled:
        return None

    def bad(name, node):
        return (f"'{name}' holds swizzled tiles (a tensor copy writes it or wgmma reads it), so it is used only by "
                "pk.tma_load and pk.wgmma: index another array", node)

    for s in ir.walk_stmts(fn.body):
        if isinstance(s, ir.HopperOp) and s.op == "tma_load" and s.names[0] in hf.swizzled \
                and not hf.tensor_maps[s.names[1]].swizzle:
            return (f"'{s.names[0]}' holds swizzled tiles (a tensor copy writes it or wgmma reads it), but tensor map "
                    f"'{s.names[1]}' copies without swizzle into it: the tiles would not be in the layout wgmma "
                    "reads; use a \"128B\" map (or another array)", s)
        if isinstance(s, ir.Store) and s.base.name in hf.swizzled:
            return bad(s.base.name, s)
        if isinstance(s, ir.CopyAsync) and s.dst.name in hf.swizzled:
            return bad(s.dst.name, s)
        if isinstance(s, ir.MatrixOp) and s.base is not None and s.base.name in hf.swizzled:
            return bad(s.base.name, s)
        for e in ir.stmt_exprs(s):
            for x in ir.walk_expr(e):
                if isinstance(x, (ir.Load, ir.Atomic)) and x.base.name in hf.swizzled:
                    return bad(x.base.name, x if x.loc is not None else s)
    return None


#: Registry key prefix: ``registry.register(SUPPORT_KEY + kind, support)`` declares that target kind ``kind``
#: compiles Hopper operations; ``support(target)`` gives '' when ``target`` can, else why not.
SUPPORT_KEY = "hopper.support."


def check_target(fn: ir.Function, kind: str, target, support=None, checked: bool = False) -> None:
    """Refuse ``fn`` for ``target`` if it uses Hopper operations the target cannot compile (every target
    kind without a registered ``support``), or in checked mode, which does not cover them yet."""
    if not ir.uses_hopper(fn):
        return
    from ..errors import KernelTypeError

    first = next((s for s in ir.walk_stmts(fn.body) if isinstance(s, ir.HopperOp)), None)
    loc = getattr(first, "loc", None) or fn.loc
    what = f"kernel '{fn.name}' uses Hopper operations ({builtin(first.op) if first else 'pk.tensor_map'} ...)"
    if checked:
        raise KernelTypeError(f"{what}: checked mode (bounds_check) does not cover them yet; build without "
                              "bounds_check, and test such kernels with the IR interpreter "
                              "(polykern.testing.interp), which checks every access", loc)
    if support is None:
        raise KernelTypeError(f"{what}, which target '{target}' ({kind}) has no code for: they compile for "
                              "'cuda -arch=sm_90a' (H100, H200); on any host the IR interpreter "
                              "(polykern.testing.interp) runs them exactly", loc)
    why = support(target)
    if why:
        raise KernelTypeError(f"{what}: {why}", loc)


def reference_wgmma(acc: np.ndarray, a_tile: np.ndarray, b_tile: np.ndarray) -> np.ndarray:
    """``acc + A @ B^T`` for a 64 x 16 ``a_tile`` and an n x 16 ``b_tile`` (both K-major, as the language
    reads them), as the language defines it: the reference multiply-add of matrix fragments
    (``ir.matrix.reference_mma``: exact products, added to the accumulator in k order, each add rounded
    to f32). Tensor cores may sum otherwise, within ``numerics.mma_error_bound``."""
    from .matrix import reference_mma
    from .types import f32

    return reference_mma(a_tile, b_tile.T, acc, f32)


def info_attrs(fn: ir.Function) -> Dict[str, str]:
    """The FunctionInfo attributes a runtime needs: the block's warpgroups and the tensor maps to
    encode at launch (JSON, in declaration order: hidden parameters in that order follow the others)."""
    hf = fn.hopper
    if hf is None:
        return {}
    out = {}
    if hf.warpgroups:
        out[ATTR_WARPGROUPS] = str(hf.warpgroups)
    if any(fn.arrays[n].dynamic for n in hf.swizzled if n in fn.arrays):
        out[ATTR_DYNAMIC_ALIGN] = str(SWIZZLE_ALIGN)
    if hf.tensor_maps:
        out[ATTR_TENSOR_MAPS] = json.dumps([dict(name=k, **v.to_json()) for k, v in hf.tensor_maps.items()],
                                           sort_keys=True, separators=(",", ":"))
    return out


def tensor_maps_of(attrs) -> List[dict]:
    """The tensor maps FunctionInfo ``attrs`` declare, validated (a hostile artifact gets a ValueError
    naming what is wrong, never a crash)."""
    text = attrs.get(ATTR_TENSOR_MAPS, "")
    if not text:
        return []
    if len(text) > 65536:
        raise ValueError("tensor_maps attribute longer than 64 KiB")
    maps = json.loads(text)
    if not isinstance(maps, list) or len(maps) > 32:
        raise ValueError("tensor_maps is not a list of at most 32 maps")
    for m in maps:
        ok = (isinstance(m, dict) and set(m) == {"name", "buffer", "elem", "shape", "box", "swizzle"}
              and isinstance(m["name"], str) and isinstance(m["buffer"], str) and m["elem"] in TMAP_TYPES
              and isinstance(m["shape"], list) and len(m["shape"]) == 2
              and all(isinstance(d, str) or (type(d) is int and 0 < d < 2 ** 32) for d in m["shape"])
              and isinstance(m["box"], list) and len(m["box"]) == 2
              and all(type(d) is int and 0 < d <= BOX_MAX for d in m["box"])
              and m["swizzle"] in (0, *SWIZZLES.values()))
        if not ok:
            raise ValueError(f"malformed tensor map {m!r:.200}")
    return maps


def warpgroups_of(attrs) -> int:
    """The warpgroups FunctionInfo ``attrs`` declare (0: none declared)."""
    text = attrs.get(ATTR_WARPGROUPS, "")
    if not text:
        return 0
    if not text.isdigit() or not 0 < int(text) <= 8:
        raise ValueError(f"warpgroups attribute {text!r:.40} is not 1..8")
    return int(text)
