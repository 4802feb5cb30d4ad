"""Static analysis for the oracle (``polykern.interpreter``): which inexact operations (math builtins,
float division: their accuracy a backend may relax within ``polykern.numerics``) may feed each variable
and array, flow-insensitively; the refusal of inexact values where their error could not be bounded;
and whether a kernel has float add/sub chains of products or sums (contraction, reassociation)."""
from __future__ import annotations

from typing import Dict, FrozenSet, Optional, Tuple

from ..ir import nodes as ir
from .values import OracleError

# Operations a backend may compute inexactly (their budgets are numerics.promise(op, dtype, backend)).
INEXACT_CALLS = frozenset(("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "fma")
                          + tuple(ir.FAST_MATH))
INEXACT_BINOPS = frozenset(("div",))

Tags = FrozenSet[Tuple[str, str]]
NONE: Tags = frozenset()
#: What a matrix multiply-add on tensor cores may sum otherwise than the reference (numerics.mma_error_bound).
MMA_TAGS: Tags = frozenset({("mma", "f32")})


def bf16_operation(e: ir.Expr) -> Optional[ir.Expr]:
    """The f32 operation of a widened bf16 one: ``e`` = ``bf16(x)`` with ``x`` an inexact f32 call or
    division, else None."""
    if not (isinstance(e, ir.Cast) and e.to.name == "bf16" and e.a.type.name == "f32"):
        return None
    a = e.a
    if (isinstance(a, ir.Call) and a.func in INEXACT_CALLS) or (isinstance(a, ir.BinOp) and a.op in INEXACT_BINOPS):
        return a
    return None


def location(node, fn: ir.Function) -> str:
    """Where ``node`` is, for a message: its source location, else the kernel."""
    loc = getattr(node, "loc", None)
    return str(loc) if loc is not None else f"kernel '{fn.name}'"


class Taint:
    """Flow-insensitive: which inexact operations may feed each variable and array."""

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.var: Dict[str, Tags] = {}
        self.arr: Dict[str, Tags] = {}
        changed = True
        while changed:
            changed = False
            for s in ir.walk_stmts(fn.body):
                if isinstance(s, ir.Assign):
                    changed |= self._join(self.var, s.name, self.tags(s.value))
                elif isinstance(s, ir.Store):
                    changed |= self._join(self.arr, s.base.name, self.tags(s.value))
                elif isinstance(s, ir.CopyAsync):  # the source's elements into the destination
                    changed |= self._join(self.arr, s.dst.name, self.arr.get(s.src.name, NONE))
                elif isinstance(s, ir.HopperOp) and s.names:  # warpgroup registers (ir.WgReg) are tracked like arrays
                    changed |= self._join(self.arr, s.names[0], self._hopper_tags(s))
                for e in ir.stmt_exprs(s):
                    for a in ir.walk_expr(e):
                        if isinstance(a, ir.Atomic):
                            vt = self.tags(a.value) | (self.tags(a.compare) if a.compare is not None else NONE)
                            changed |= self._join(self.arr, a.base.name, vt)

    @staticmethod
    def _join(table, key, tags) -> bool:
        old = table.get(key, NONE)
        new = old | tags
        if new != old:
            table[key] = new
            return True
        return False

    def tags(self, e: ir.Expr) -> Tags:
        out = set()
        for x in ir.walk_expr(e):
            if isinstance(x, ir.Call) and x.func in INEXACT_CALLS and x.type.is_float:
                out.add((x.func, x.type.name))
            elif isinstance(x, ir.BinOp) and x.op in INEXACT_BINOPS and x.type.is_float:
                out.add((x.op, x.type.name))
            elif isinstance(x, ir.Subgroup) and x.op == "add" and x.type.is_float:  # any association
                out.add(("subgroup_add", x.type.name))
            elif isinstance(x, ir.Var):
                out |= self.var.get(x.name, NONE)
            elif isinstance(x, (ir.Load, ir.Atomic)):
                out |= self.arr.get(x.base.name, NONE)
            elif isinstance(x, ir.WgReg):
                out |= self.arr.get(x.name, NONE)
        return frozenset(out)

    def _hopper_tags(self, s: ir.HopperOp) -> Tags:
        """What a Hopper operation writes into its first named object may depend on: a register store's value;
        a wgmma's accumulation (the tensor cores' order) and a register operand; a row reduction's input."""
        if s.op == "wg_set":
            return self.tags(s.args[1])
        if s.op in ("wgmma", "wgmma_kn"):
            return MMA_TAGS | self.arr.get(s.names[1], NONE) | self.arr.get(s.names[2], NONE)
        if s.op in ("wg_row_max", "wg_row_sum"):
            return self.arr.get(s.names[1], NONE)
        return NONE

    def direct(self, e: ir.Expr) -> Optional[Tuple[str, str]]:
        """(op, dtype) when ``e`` is one inexact operation applied to exact operands. A bf16 operation
        is its f32 operation rounded to bf16 (passes/widen_bf16.py): ``bf16(op(f32 operands))`` is
        ``(op, "bf16")`` (bf16's promise, derived from f32's, covers both roundings)."""
        inner = bf16_operation(e)
        if inner is not None:
            d = self.direct(inner)
            return (d[0], "bf16") if d is not None else None
        if isinstance(e, ir.Call) and e.func in INEXACT_CALLS and e.type.is_float:
            op = e.func
        elif isinstance(e, ir.BinOp) and e.op in INEXACT_BINOPS and e.type.is_float:
            op = e.op
        else:
            return None
        if any(self.tags(c) for c in e.children()):
            return None
        return (op, e.type.name)

    def check_exact(self, e: Optional[ir.Expr], what: str):
        if e is None:
            return
        tags = self.tags(e)
        if tags:
            ops = ", ".join(sorted(f"{o}({t})" for o, t in tags))
            raise OracleError(f"{location(e, self.fn)}: {what} depends on inexact operations ({ops}); "
                              "a backend's allowed error could change it, so the oracle cannot judge it")

    def check_function(self):
        """Refuse inexact values where their error could not be bounded."""
        for s in ir.walk_stmts(self.fn.body):
            if isinstance(s, (ir.If, ir.While)):
                self.check_exact(s.cond, "a condition")
            elif isinstance(s, ir.For):
                self.check_exact(s.start, "a loop bound")
                self.check_exact(s.stop, "a loop bound")
            elif isinstance(s, ir.Store):
                self.check_exact(s.index, "an index")
            elif isinstance(s, ir.CopyAsync):
                self.check_exact(s.dst_k, "an index")
                self.check_exact(s.src_k, "an index")
            for e in ir.stmt_exprs(s):
                for x in ir.walk_expr(e):
                    if isinstance(x, (ir.Load, ir.Atomic)):
                        self.check_exact(x.index, "an index")
                    if isinstance(x, ir.Select):
                        self.check_exact(x.cond, "a select() condition")
                    if isinstance(x, ir.Cast) and not x.to.is_float:
                        self.check_exact(x.a, f"a cast to {x.to}")
                    if isinstance(x, ir.BinOp) and x.op in ("land", "lor"):
                        self.check_exact(x, "a logical operator")
                    if isinstance(x, ir.Atomic):
                        self.check_exact(x.value, "an atomic operand")


def float_chain(fn: ir.Function, inner_ops) -> bool:
    """Is there a float add/sub with an operand that is a float ``inner_ops`` operation, or a variable
    ever assigned one? (("mul",): an a*b+c to contract; ("add", "sub"): a chain to reassociate.)"""
    def is_inner(e):
        return isinstance(e, ir.BinOp) and e.op in inner_ops and e.type.is_float

    names = {s.name for s in ir.walk_stmts(fn.body) if isinstance(s, ir.Assign) and is_inner(s.value)}
    for e in ir.walk_all_exprs(fn.body):
        if isinstance(e, ir.BinOp) and e.op in ("add", "sub") and e.type.is_float:
            if any(is_inner(x) or (isinstance(x, ir.Var) and x.name in names) for x in (e.a, e.b)):
                return True
    return False
