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
- a *warpgroup accumulator* (``pk.wg_acc(f32, 64, n)``) is a 64 x n matrix held by one warpgroup;
- a *named barrier* ``id`` (1..15; 0 is ``pk.barrier()``'s) synchronizes a subset of the block's
  warpgroups. A warpgroup (all 128 work-items, the same operands) arriving with ``named_barrier(id,
  count)`` waits, one arriving with ``named_arrive(id, count)`` does not; when ``count`` work-items
  (a multiple of 128 within the block) have arrived the round completes and the waiters go on. What
  every arriver wrote or read before it is ordered before what the waiters do after it (as
  ``pk.barrier()`` orders it for the whole block); an arriver that does not wait learns nothing.

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
#: A tensor map as a hidden kernel parameter on NVIDIA (a CUtensorMap): its bytes and alignment.
TMAP_PARAM_BYTES, TMAP_PARAM_ALIGN = 128, 64
#: The copy engine's demands on a tensor map's matrix: rows of a multiple of TMAP_ROW_ALIGN bytes, a buffer
#: address aligned to TMAP_ADDR_ALIGN bytes, both dimensions positive and below TMAP_DIM_LIMIT (checked at
#: launch: polykern/runtime/hopper_launch.py, and libpolykern from the same numbers).
TMAP_ROW_ALIGN, TMAP_ADDR_ALIGN, TMAP_DIM_LIMIT = 16, 16, 2 ** 32

#: op -> (names it takes, expression operands it takes), documentation order.
OPS = {
    "mbar_init": (("bars",), ("index", "count")),
    "mbar_arrive": (("bars",), ("index",)),
    "mbar_arrive_tx": (("bars",), ("index", "bytes")),
    "mbar_wait": (("bars",), ("index", "parity")),
    "tma_load": (("dst", "tmap", "bars"), ("dst_off", "row", "col", "index")),
    "wg_fill": (("acc",), ("value",)),
    "wgmma": (("acc", "a", "b"), ("a_off", "b_off")),
    "wgmma_kn": (("acc", "a", "b"), ("a_off", "b_off", "panel")),
    "wgmma_commit": ((), ()),
    "wgmma_wait": ((), ("pending",)),
    "wg_store": (("buf", "acc"), ("off", "ld")),
    "setmaxnreg_inc": ((), ("count",)),
    "setmaxnreg_dec": ((), ("count",)),
    "wg_row_max": (("vec", "acc"), ()),
    "wg_row_sum": (("vec", "acc"), ()),
    "wg_set": (("reg",), ("index", "value")),
    "named_barrier": ((), ("id", "count")),
    "named_arrive": ((), ("id", "count")),
}
#: op -> the builtin a kernel writes it with (``pk.<builtin>``), where the two differ.
BUILTIN_OF = {"mbar_init": "mbarrier_init", "mbar_arrive": "mbarrier_arrive", "mbar_arrive_tx": "mbarrier_arrive_tx",
              "mbar_wait": "mbarrier_wait", "setmaxnreg_inc": "setmaxnreg", "setmaxnreg_dec": "setmaxnreg"}


def builtin(op: str) -> str:
    """``pk.<name>`` of ``op``, for messages."""
    return f"pk.{BUILTIN_OF.get(op, op)}"


#: Operations every work-item of a warpgroup performs together (with the same operands).
WARPGROUP_OPS = ("wg_fill", "wgmma", "wgmma_kn", "wgmma_commit", "wgmma_wait", "wg_store", "setmaxnreg_inc",
                 "setmaxnreg_dec", "wg_row_max", "wg_row_sum", "named_barrier", "named_arrive")
#: The named barrier operations (the arriving warpgroup waits for the round to complete, or only signals).
NAMED_OPS = ("named_barrier", "named_arrive")
#: Named barrier ids a kernel may use (0 is the block barrier ``pk.barrier()`` compiles to; the hardware has 16).
NAMED_IDS = range(1, 16)
#: The wgmma operations (A from shared memory or from an accumulator's registers; B K-major or K x N).
WGMMA_OPS = ("wgmma", "wgmma_kn")
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
class WgVecType:
    """``pk.wg_vec(f32)``: one value per row of a warpgroup accumulator (64), each held by the work-items
    that hold the row's elements."""

    elem: ScalarType

    def __str__(self) -> str:
        return f"wg_vec[{self.elem}, 64]"


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
    vecs: Dict[str, WgVecType] = field(default_factory=dict)
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


def check_kn_operand(off: int, panel: int, n: int) -> Optional[str]:
    """Why ``pk.wgmma_kn``'s B operand (a K x N tile, rows of 64 N-elements, N in panels of 64 columns
    ``panel`` elements apart) at logical element ``off`` cannot be read, or None: ``off`` starts an 8-row
    swizzle atom at column 0 of a panel, and the panels of an N above 64 start atoms too."""
    if off < 0 or off % 512:
        return (f"the B operand of pk.wgmma_kn starts at element {off}: it starts at row k of its K x 64 panel "
                "with k a multiple of 8 (an element offset that is a multiple of 512)")
    if n > 64 and (panel <= 0 or panel % 512):
        return (f"pk.wgmma_kn with N = {n} reads {(n + 63) // 64} panels of 64 columns: the panel stride is a "
                f"positive multiple of 512 elements, got {panel}")
    return None


def check_a_registers(k0: int, src_n: int) -> Optional[str]:
    """Why columns ``k0 .. k0 + 15`` of a 64 x ``src_n`` accumulator cannot be wgmma's A operand, or None."""
    if k0 < 0 or k0 % WG_K or k0 + WG_K > src_n:
        return (f"wgmma's A operand from an accumulator is 16 of its columns starting at a multiple of 16 below "
                f"{src_n}, got column {k0}")
    return None


def element_row_col(t: int, e: int) -> Tuple[int, int]:
    """The (row, column) of register ``e`` of work-item ``t`` (0..127 in its warpgroup) of a warpgroup
    accumulator: wgmma's register layout (warp w = t // 32 holds rows 16w .. 16w + 15; lane l holds rows
    l // 4 and l // 4 + 8 of those at columns 8c + 2 (l % 4) + {0, 1}, as registers 4c .. 4c + 3)."""
    w, lane = t // 32, t % 32
    return 16 * w + lane // 4 + 8 * ((e >> 1) & 1), 8 * (e >> 2) + 2 * (lane % 4) + (e & 1)


def slot_row(t: int, slot: int) -> int:
    """The row of register ``slot`` (0 or 1) of work-item ``t``'s part of a row vector: the rows it holds
    of every accumulator (register ``e`` of an accumulator is in the row of slot ``(e >> 1) & 1``)."""
    return element_row_col(t, 2 * slot)[0]


#: Registers a work-item holds of a row vector.
VEC_SLOTS = 2


def row_partials(row: np.ndarray) -> List[np.ndarray]:
    """The columns of one accumulator row each of its four holders (lane % 4 = q) holds, in register order."""
    n = row.shape[0]
    return [np.array([row[8 * c + 2 * q + d] for c in range(n // 8) for d in (0, 1)], row.dtype) for q in range(4)]


def reference_row_sum(row: np.ndarray) -> np.float32:
    """``pk.wg_row_sum``'s exact value for one row of f32 values: each holder q sums its columns in register
    order (starting from the first, each add rounded to f32), then ``(s0 + s1) + (s2 + s3)``."""
    sums = []
    for part in row_partials(np.asarray(row, np.float32)):
        acc = part[0]
        for v in part[1:]:
            acc = np.float32(acc + v)
        sums.append(acc)
    return np.float32(np.float32(sums[0] + sums[1]) + np.float32(sums[2] + sums[3]))


def reference_row_max(row: np.ndarray) -> np.float32:
    """``pk.wg_row_max``'s value for one row: the largest element; a NaN is skipped where another element
    is a number (fmaxf), the row is NaN only when all are."""
    r = np.asarray(row, np.float32)
    return np.float32(np.nanmax(r)) if not np.isnan(r).all() else np.float32(np.nan)


def check_named_id(bar_id: int) -> Optional[str]:
    """Why ``bar_id`` is not a named barrier of the language, or None."""
    if bar_id not in NAMED_IDS:
        return (f"named barrier {bar_id}: the ids are {NAMED_IDS.start} to {NAMED_IDS.stop - 1} (0 is the block "
                "barrier pk.barrier() uses)")
    return None


def check_named_count(count: int, warpgroups: int) -> Optional[str]:
    """Why ``count`` work-items cannot complete a named barrier in blocks of ``warpgroups`` warpgroups, or None:
    whole warpgroups arrive, so it is a multiple of 128, from one warpgroup to the whole block."""
    if count % WARPGROUP or not WARPGROUP <= count <= WARPGROUP * warpgroups:
        return (f"a named barrier's count is the work-items that arrive, whole warpgroups: a multiple of "
                f"{WARPGROUP} from {WARPGROUP} to the block's {WARPGROUP * warpgroups}, got {count}")
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


def check_target(fn: ir.Function, kind: str, target, support=None, checked: bool = False) -> None:
    """Refuse ``fn`` for ``target`` if it uses Hopper operations the target cannot compile (every target
    kind that declares no ``support``: ``Capabilities.hopper``, polykern/capabilities.py, which gives
    '' when ``target`` can, else why not), or in checked mode, which does not cover them yet."""
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
                              "'cuda -arch=sm_90a' or 'nvptx -arch=sm_90a' (H100, H200); on any host the IR "
                              "interpreter (polykern.testing.interp) runs them exactly", loc)
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


#: At most this many tensor maps per kernel, and warpgroups per block.
TMAP_MAX = 32
WARPGROUPS_MAX = 8
_TMAP_KEYS = ("box", "buffer", "elem", "name", "shape", "swizzle")


def _unique_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a tensor map has a key twice")
    return dict(pairs)


def _count(d, limit: int) -> bool:
    return type(d) is int and 0 < d <= limit


def tensor_maps_of(attrs) -> List[dict]:
    """The tensor maps FunctionInfo ``attrs`` declare, validated (a hostile artifact gets a ValueError
    naming what is wrong, never a crash): a JSON list of at most TMAP_MAX objects with exactly the keys
    name, buffer, elem, shape, box and swizzle, each once; names unique; elem one of TMAP_TYPES; shape
    two (parameter name or integer in [1, 2**32)); box two integers in [1, BOX_MAX]; swizzle 0 or 128.
    ``function_schema`` checks it when an artifact is read; native/src/tensor_maps.c reads the same."""
    text = attrs.get(ATTR_TENSOR_MAPS)
    if text is None:
        return []
    if len(text) > 65536:
        raise ValueError("tensor_maps attribute longer than 64 KiB")
    try:
        maps = json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:  # nested lists past Python's recursion limit: malformed, not a crash
        raise ValueError("tensor_maps is nested too deeply") from None
    if not isinstance(maps, list) or len(maps) > TMAP_MAX:
        raise ValueError(f"tensor_maps is not a list of at most {TMAP_MAX} maps")
    for m in maps:
        ok = (isinstance(m, dict) and sorted(m) == list(_TMAP_KEYS)
              and isinstance(m["name"], str) and isinstance(m["buffer"], str)
              and isinstance(m["elem"], str) and m["elem"] in TMAP_TYPES
              and isinstance(m["shape"], list) and len(m["shape"]) == 2
              and all(isinstance(d, str) or _count(d, 2 ** 32 - 1) for d in m["shape"])
              and isinstance(m["box"], list) and len(m["box"]) == 2 and all(_count(d, BOX_MAX) for d in m["box"])
              and type(m["swizzle"]) is int and m["swizzle"] in (0, *SWIZZLES.values()))
        if not ok:
            raise ValueError(f"malformed tensor map {m!r:.200}")
    if len({m["name"] for m in maps}) != len(maps):
        raise ValueError("two tensor maps have the same name")
    return maps


def warpgroups_of(attrs) -> int:
    """The warpgroups FunctionInfo ``attrs`` declare (0: none declared): a decimal 1..WARPGROUPS_MAX."""
    text = attrs.get(ATTR_WARPGROUPS)
    if text is None:
        return 0
    if text not in [str(n) for n in range(1, WARPGROUPS_MAX + 1)]:
        raise ValueError(f"warpgroups attribute {text!r:.40} is not 1..{WARPGROUPS_MAX}")
    return int(text)
