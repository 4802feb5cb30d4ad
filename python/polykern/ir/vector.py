"""Wide (vector) memory access: ``pk.vload``/``pk.vstore`` as groups of scalar IR statements.

``a, b, c, d = pk.vload(x, k, 4)`` reads ``x[4k] .. x[4k+3]``; ``pk.vstore(y, k, (a, b, c, d))`` writes
``y[4k] .. y[4k+3]`` (docs/language.md "Wide access"). The frontend translates either into ``n``
ordinary statements, lane ``j`` being

- load:  ``Assign(dest_j, Load(buf, k*n + j))`` with ``dest_j`` a fresh local of the element type;
- store: ``Store(buf, k*n + j, value_j)`` with ``value_j`` a ``Var`` or ``Const`` of the element type;

where ``k`` is a ``Const`` or a ``Var`` of a fresh temporary (assigned once, before the group, and by
nothing inside it). Each statement carries ``stmt.vec = VecLane(...)`` -- an attribute outside the
dataclass fields, which :func:`polykern.passes.clone.clone_function` copies and every other pass and
backend may ignore: the scalar statements alone have the full meaning. A backend that has vector
memory operations fuses a group that :func:`match_group` still finds intact (consecutive, same buffer,
the exact index form above) into one vector access; any pass that rewrites a statement of the group
(e.g. the bounds checks) breaks the match, and the backend emits the scalar statements.

Alignment: the group's first element is at a multiple of ``n`` elements from the buffer's start, so a
vector access is aligned when the buffer is aligned to ``n * element bytes`` (at most 16: wider groups,
f64/i64 x 4, are never fused). FunctionInfo attribute
``vector_align`` (``"x=16,y=8"``: buffer parameter -> bytes) lists what the kernel needs; every runtime
refuses a misaligned buffer at launch (:mod:`polykern.runtime.aligned_launch`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Union

from . import nodes as ir
from .types import BufferType, ScalarType

#: Lane counts of pk.vload/pk.vstore.
VECTOR_WIDTHS = (2, 4)
#: The widest access a backend fuses (16 bytes: PTX v4.b32, SSE/NEON registers); wider groups stay scalar.
MAX_VECTOR_BYTES = 16
#: FunctionInfo attribute: buffer parameters and the alignment (bytes) their vector accesses need.
ALIGN_ATTR = "vector_align"


@dataclass(frozen=True)
class VecLane:
    group: int                # unique per vload/vstore in the function
    n: int                    # lanes of the group
    lane: int                 # this statement's lane, 0..n-1
    index: Union[str, int]    # the vector index k: a temporary's name, or a constant
    index_type: ScalarType


@dataclass
class VecGroup:
    kind: str                 # "load" | "store"
    base: ir.Var
    n: int
    index: ir.Expr            # k (a fresh Var or Const expression)
    dests: List[str]          # load: the locals receiving the lanes
    values: List[ir.Expr]     # store: the lanes' values
    stmts: List[ir.Stmt]


def lane_of(s: ir.Stmt) -> Optional[VecLane]:
    return getattr(s, "vec", None)


def index_expr(lane: VecLane) -> ir.Expr:
    if isinstance(lane.index, str):
        return ir.Var(lane.index, lane.index_type)
    return ir.Const(lane.index, lane.index_type)


def element_index(lane: VecLane) -> ir.Expr:
    """``k*n + lane``: the scalar index of one lane."""
    t = lane.index_type
    return ir.BinOp("add", ir.BinOp("mul", index_expr(lane), ir.Const(lane.n, t)), ir.Const(lane.lane, t))


def _is_index(e: ir.Expr, lane: VecLane) -> bool:
    if not (isinstance(e, ir.BinOp) and e.op == "add" and isinstance(e.b, ir.Const) and e.b.value == lane.lane):
        return False
    m = e.a
    if not (isinstance(m, ir.BinOp) and m.op == "mul" and isinstance(m.b, ir.Const) and m.b.value == lane.n):
        return False
    k = m.a
    if k.type != lane.index_type or e.type != lane.index_type:
        return False
    if isinstance(lane.index, str):
        return isinstance(k, ir.Var) and k.name == lane.index
    return isinstance(k, ir.Const) and k.value == lane.index


def lane_access(s: ir.Stmt) -> Optional[VecLane]:
    """The lane of a group that ``s`` still is (an ``Assign`` of a ``Load`` or a ``Store`` at exactly
    ``k*n + lane``, or for a constant ``k`` at that index folded, wrapped to the type), else None; the
    group around it need not be intact (checked mode guards each lane)."""
    lane = lane_of(s)
    access = s.value if isinstance(s, ir.Assign) else s
    if lane is None or not isinstance(access, (ir.Load, ir.Store)):
        return None
    if _is_index(access.index, lane):
        return lane
    i, t = access.index, lane.index_type
    if isinstance(lane.index, int) and isinstance(i, ir.Const) and i.type == t:
        lo, span = t.min_value(), t.max_value() - t.min_value() + 1
        if i.value == (lane.index * lane.n + lane.lane - lo) % span + lo:
            return lane
    return None


def match_group(stmts: List[ir.Stmt], i: int) -> Optional[VecGroup]:
    """The intact vector group starting at ``stmts[i]`` (lane 0), or None."""
    first = lane_of(stmts[i])
    if first is None or first.lane != 0 or i + first.n > len(stmts):
        return None
    part = stmts[i:i + first.n]
    kind = "load" if isinstance(part[0], ir.Assign) else "store"
    base = None
    dests: List[str] = []
    values: List[ir.Expr] = []
    for j, s in enumerate(part):
        lane = lane_of(s)
        if lane is None or lane.group != first.group or lane.lane != j or lane != VecLane(
                first.group, first.n, j, first.index, first.index_type):
            return None
        if kind == "load":
            if not (isinstance(s, ir.Assign) and isinstance(s.value, ir.Load)):
                return None
            access, dests = s.value, dests + [s.name]
            if isinstance(lane.index, str) and s.name == lane.index:
                return None
        else:
            if not (isinstance(s, ir.Store) and isinstance(s.value, (ir.Var, ir.Const))):
                return None
            access, values = s, values + [s.value]
        if not isinstance(access.base.type, BufferType) or (base is not None and access.base.name != base.name):
            return None
        if access.base.type.elem != (s.value.type if kind == "store" else access.type):
            return None
        base = access.base
        if not _is_index(access.index, lane):
            return None
    return VecGroup(kind, base, first.n, index_expr(first), dests, values, part)


def group_alignment(n: int, elem: ScalarType) -> int:
    """The alignment in bytes a group of ``n`` lanes of ``elem`` needs: its size, at most
    :data:`MAX_VECTOR_BYTES` (no backend fuses a wider group)."""
    return min(n * elem.nbytes, MAX_VECTOR_BYTES)


def format_alignment(req: Dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(req.items()))


def parse_alignment(text: str) -> Dict[str, int]:
    """Inverse of :func:`format_alignment`; ValueError on anything else."""
    out: Dict[str, int] = {}
    if not text:
        return out
    for part in text.split(","):
        name, _, value = part.rpartition("=")
        if not name or not value.isdigit() or value != str(int(value)):
            raise ValueError(part)
        v = int(value)
        if v < 1 or v > 1 << 12 or v & (v - 1):
            raise ValueError(part)
        out[name] = v
    return out


def iter_groups(stmts: List[ir.Stmt]):
    """``(group or None, statements)`` covering one block in order: an intact group with its ``n``
    statements, or a single statement. The loop a backend writes to fuse groups; where it cannot fuse
    a group, it emits the statements one by one."""
    i = 0
    while i < len(stmts):
        g = match_group(stmts, i)
        step = g.n if g is not None else 1
        yield g, stmts[i:i + step]
        i += step


def vector_buffers(fn: ir.Function) -> Dict[str, int]:
    """Buffer parameter -> width, for every buffer that ``fn`` reads and writes only through intact
    groups of that one width (no scalar access, no atomic): a backend may declare such a buffer as an
    array of vectors (WGSL ``array<vec4<f32>>``) and index it by the groups' vector index."""
    widths: Dict[str, set] = {}
    grouped: set = set()

    def visit(stmts: List[ir.Stmt]) -> None:
        for g, part in iter_groups(stmts):
            if g is not None:
                widths.setdefault(g.base.name, set()).add(g.n)
                grouped.update(id(s) for s in part)
            for s in part:
                if isinstance(s, ir.If):
                    visit(s.then)
                    visit(s.orelse)
                elif isinstance(s, (ir.For, ir.While)):
                    visit(s.body)

    visit(fn.body)
    scalar: set = set()
    for s in ir.walk_stmts(fn.body):
        in_group = id(s) in grouped
        if isinstance(s, ir.Store) and not in_group:
            scalar.add(s.base.name)
        for top in ir.stmt_exprs(s):
            for e in ir.walk_expr(top):
                if isinstance(e, (ir.Load, ir.Atomic)) and not (in_group and e is getattr(s, "value", None)
                                                                and isinstance(e, ir.Load)):
                    scalar.add(e.base.name)
    return {b: next(iter(w)) for b, w in sorted(widths.items()) if len(w) == 1 and b not in scalar}
