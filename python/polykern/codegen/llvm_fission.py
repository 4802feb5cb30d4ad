"""Barrier fission: the plan that lets one CPU thread run a whole workgroup.

A kernel with ``barrier()`` cannot run its work-items one after another to the end:
every work-item must reach a barrier before any passes it. The standard technique
(used by CPU OpenCL/CUDA implementations; written here from the IR's structure) splits
the kernel at its barriers into *regions* of barrier-free statements and runs each
region as a loop over the work-items; a barrier is simply the point between two such
loops. Control flow that contains a barrier (an ``if``/``while``/``for`` whose body
has one) runs once per group, and the regions inside it are again work-item loops.

This module only *plans*; :mod:`polykern.codegen.llvm_workgroup` emits the loops.

Plan nodes (group-level, executed once per workgroup):

- :class:`Region`   barrier-free statements, run once per running work-item;
- :class:`GIf`      ``if`` with a barrier inside: the condition is evaluated per work-item;
                    the then-branch runs with the work-items whose condition was true (the
                    others are *parked*), then the else-branch with the others;
- :class:`GLoop`    ``while``/``for`` with a barrier inside: each iteration evaluates the
                    condition per work-item; work-items whose condition is false leave the
                    loop (they wait at its end); the loop ends when none is left.

Every work-item has a state word: 0 running, 1 returned, or a construct-specific code
(left loop *k* by ``break``/condition, ``continue`` pending in loop *k*, parked by if *k*).
Regions skip work-items whose state is not 0; each construct resets its own codes.

For kernels that follow the rule every portable SIMT kernel must follow — a barrier is
reached by all work-items of the group or by none (uniform control flow, as in CUDA) —
this is exactly barrier semantics. For divergent code it is still well defined here
(a barrier waits for the work-items still running), but GPUs do not promise that.

Storage: a scalar variable must be kept per work-item (an array indexed by the work-item)
when its value can be needed by another region, or by the same region in a later
iteration of an enclosing barrier loop. Everything else stays a plain scalar that LLVM
promotes to registers. Private arrays are per work-item unless one region outside any
barrier loop uses them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Set, Union

from ..ir import nodes as N
from ..ir.types import ArrayType, ScalarType

__all__ = ["Region", "GIf", "GLoop", "FissionPlan", "plan_fission", "contains_barrier",
           "STATE_RUNNING", "STATE_RETURNED"]

STATE_RUNNING = 0
STATE_RETURNED = 1


@dataclass(eq=False)
class Region:
    stmts: List[N.Stmt]
    in_loop: bool


@dataclass(eq=False)
class GIf:
    cond: N.Expr
    then: list
    orelse: list
    id: int

    @property
    def park_else(self) -> int:  # condition false: waiting out the then-branch
        return 2 + 3 * self.id

    @property
    def park_then(self) -> int:  # finished the then-branch: waiting out the else-branch
        return 3 + 3 * self.id


@dataclass(eq=False)
class GLoop:
    kind: str  # "while" | "for"
    cond: N.Expr  # while: the condition; for: unused (None)
    body: list
    id: int
    stmt: Union[N.While, N.For] = None
    stop_var: str = ""  # for: hidden per-work-item copy of the (once evaluated) stop value
    has_continue: bool = True  # whether a 'continue' in the body targets this loop

    @property
    def left(self) -> int:  # broke out of / finished the loop
        return 2 + 3 * self.id

    @property
    def cont(self) -> int:  # 'continue' pending until the latch
        return 3 + 3 * self.id


Node = Union[Region, GIf, GLoop]


@dataclass
class FissionPlan:
    nodes: List[Node]
    per_item_vars: Set[str]
    per_item_arrays: Set[str]
    hidden_locals: Dict[str, ScalarType] = field(default_factory=dict)
    constructs: int = 0

    def item_bytes(self, fn: N.Function) -> int:
        """Bytes of per-work-item storage one work-item needs (state word included)."""
        total = 4
        types = dict(fn.locals)
        types.update(self.hidden_locals)
        for name in self.per_item_vars:
            total += types[name].nbytes
        for name in self.per_item_arrays:
            at = fn.arrays[name]
            total += at.elem.nbytes * at.size
        return total


def contains_barrier(s: N.Stmt) -> bool:
    return any(isinstance(x, N.Barrier) for x in N.walk_stmts([s]))


# ---------------------------------------------------------------- plan construction


class _Builder:
    def __init__(self, fn: N.Function):
        self.fn = fn
        self.count = 0
        self.hidden: Dict[str, ScalarType] = {}

    def build(self, stmts: List[N.Stmt], in_loop: bool) -> List[Node]:
        out: List[Node] = []
        run: List[N.Stmt] = []
        for s in stmts:
            if not contains_barrier(s):
                run.append(s)
                continue
            if run:
                out.append(Region(run, in_loop))
                run = []
            if isinstance(s, N.Barrier):
                continue  # the boundary between two regions is the barrier
            cid = self.count
            self.count += 1
            if isinstance(s, N.If):
                out.append(GIf(s.cond, self.build(s.then, in_loop), self.build(s.orelse, in_loop), cid))
            elif isinstance(s, N.While):
                out.append(GLoop("while", s.cond, self.build(s.body, True), cid, s,
                                 has_continue=_has_own_continue(s.body)))
            elif isinstance(s, N.For):
                stop = f"{s.var}.stop.{cid}"
                self.hidden[stop] = self.fn.locals[s.var]
                out.append(GLoop("for", None, self.build(s.body, True), cid, s, stop,
                                 has_continue=_has_own_continue(s.body)))
            else:  # pragma: no cover - only compound statements contain barriers
                raise TypeError(f"unexpected barrier-containing statement {type(s).__name__}")
        if run:
            out.append(Region(run, in_loop))
        return out


def _has_own_continue(stmts: List[N.Stmt]) -> bool:
    """Whether ``stmts`` (a loop body) holds a ``continue`` of that loop (not of a nested loop)."""
    for s in stmts:
        if isinstance(s, N.Continue):
            return True
        if isinstance(s, N.If) and (_has_own_continue(s.then) or _has_own_continue(s.orelse)):
            return True
    return False


def plan_fission(fn: N.Function) -> FissionPlan:
    b = _Builder(fn)
    nodes = b.build(fn.body, False)
    per_vars, per_arrays = _classify(fn, nodes)
    for node in _walk(nodes):
        if isinstance(node, GLoop) and node.kind == "for":
            per_vars.update((node.stmt.var, node.stop_var))
    return FissionPlan(nodes, per_vars, per_arrays, b.hidden, b.count)


def _walk(nodes: List[Node]):
    for n in nodes:
        yield n
        if isinstance(n, GIf):
            yield from _walk(n.then)
            yield from _walk(n.orelse)
        elif isinstance(n, GLoop):
            yield from _walk(n.body)


# ---------------------------------------------------------------- storage classification


def _expr_names(e: N.Expr, scalars: Set[str], arrays: Set[str]):
    for x in N.walk_expr(e):
        if isinstance(x, N.Var):
            (arrays if isinstance(x.type, ArrayType) else scalars).add(x.name)
        elif isinstance(x, (N.Load, N.Atomic)) and isinstance(x.base.type, ArrayType):
            arrays.add(x.base.name)


def _stmt_names(stmts: List[N.Stmt], scalars: Set[str], arrays: Set[str]) -> None:
    for s in N.walk_stmts(stmts):
        if isinstance(s, N.Assign):
            scalars.add(s.name)
        elif isinstance(s, N.For):
            scalars.add(s.var)
        elif isinstance(s, N.Store) and isinstance(s.base.type, ArrayType):
            arrays.add(s.base.name)
        for e in N.stmt_exprs(s):
            _expr_names(e, scalars, arrays)


def _reads(e: N.Expr) -> Set[str]:
    out: Set[str] = set()
    _expr_names(e, out, set())
    return out


def _exposed(stmts: List[N.Stmt], defined: Set[str], ue: Set[str]) -> Set[str]:
    """Add to ``ue`` the variables ``stmts`` may read before assigning them; return the set of
    variables definitely assigned afterwards."""
    defined = set(defined)
    for s in stmts:
        if isinstance(s, N.Assign):
            ue |= _reads(s.value) - defined
            defined.add(s.name)
        elif isinstance(s, N.If):
            ue |= _reads(s.cond) - defined
            d1 = _exposed(s.then, defined, ue)
            d2 = _exposed(s.orelse, defined, ue)
            defined = d1 & d2
        elif isinstance(s, N.For):
            ue |= (_reads(s.start) | _reads(s.stop)) - defined
            _exposed(s.body, defined | {s.var}, ue)
            defined.add(s.var)
        elif isinstance(s, N.While):
            ue |= _reads(s.cond) - defined
            _exposed(s.body, defined, ue)
        else:
            for e in N.stmt_exprs(s):
                ue |= _reads(e) - defined
    return defined


def _classify(fn: N.Function, nodes: List[Node]):
    units = []  # (scalar names, array names, in_loop, upward-exposed scalars)

    def visit(ns: List[Node], in_loop: bool):
        for n in ns:
            if isinstance(n, Region):
                sc, ar, ue = set(), set(), set()
                _stmt_names(n.stmts, sc, ar)
                _exposed(n.stmts, set(), ue)
                units.append((sc, ar, n.in_loop, ue))
            elif isinstance(n, GIf):
                sc, ar = set(), set()
                _expr_names(n.cond, sc, ar)
                units.append((sc, ar, in_loop, set(sc)))
                visit(n.then, in_loop)
                visit(n.orelse, in_loop)
            else:
                sc, ar = set(), set()
                if n.kind == "while":
                    _expr_names(n.cond, sc, ar)
                else:
                    _expr_names(n.stmt.start, sc, ar)
                    _expr_names(n.stmt.stop, sc, ar)
                units.append((sc, ar, True, set(sc)))
                visit(n.body, True)

    visit(nodes, False)
    locals_ = set(fn.locals)
    per_vars: Set[str] = set()
    seen: Dict[str, int] = {}
    for sc, _, in_loop, ue in units:
        for v in sc & locals_:
            seen[v] = seen.get(v, 0) + 1
            if in_loop and v in ue:
                per_vars.add(v)
    per_vars |= {v for v, c in seen.items() if c > 1}
    private = set(fn.local_arrays)
    per_arrays: Set[str] = set()
    aseen: Dict[str, int] = {}
    for _, ar, in_loop, _ in units:
        for a in ar & private:
            aseen[a] = aseen.get(a, 0) + 1
            if in_loop:
                per_arrays.add(a)
    per_arrays |= {a for a, c in aseen.items() if c > 1}
    return per_vars, per_arrays
