"""Barrier fission: the plan that lets one CPU thread run a whole workgroup.

A kernel with ``barrier()`` cannot run its work-items one after another to the end:
every work-item must reach a barrier before any passes it. The standard technique
(used by CPU OpenCL/CUDA implementations; written here from the IR's structure) splits
the kernel at its barriers into *regions* of barrier-free statements and runs each
region as a loop over the work-items; a barrier is simply the point between two such
loops. Control flow that contains a barrier (an ``if``/``while``/``for`` whose body
has one) runs once per group, and the regions inside it are again work-item loops.

This module only *plans*; :mod:`polykern.codegen.cpu.workgroup` emits the loops.

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

Uniform values (the step of a tree reduction, the tile index of a tiled matmul): a local whose
every assignment is a top-level statement of a region in uniform control flow, with a right-hand
side computed only from parameters, constants, ``group_id``/``local_size``/``num_groups`` and
other uniform locals, holds the same value in every work-item of the group. It is one scalar per
group, its assignments run once per group (:class:`Uniform`, hoisted to the start or end of their
region when no work-item statement there reads the variable, else splitting the region), and a
barrier construct whose condition/bounds are uniform and that has no ``break``/``continue`` of its
own (``GIf.uniform``/``GLoop.uniform``) is plain control flow, evaluated once per group with no
work-item state. A kernel without ``return`` and without divergent barrier constructs needs no
state words at all (``FissionPlan.needs_state``).

Storage: a scalar variable must be kept per work-item (an array indexed by the work-item)
when its value can be needed by another region, or by the same region in a later
iteration of an enclosing barrier loop. Everything else stays a plain scalar that LLVM
promotes to registers. Private arrays are per work-item unless one region outside any
barrier loop uses them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Union

from ..ir import nodes as N
from ..ir.types import ArrayType, ScalarType

__all__ = ["Region", "GIf", "GLoop", "Uniform", "FissionPlan", "plan_fission", "contains_barrier",
           "uniform_expr", "RowGuards", "plan_row_guards", "rematerializable", "assign_counts",
           "STATE_RUNNING", "STATE_RETURNED"]

STATE_RUNNING = 0
STATE_RETURNED = 1


@dataclass(eq=False)
class Region:
    stmts: List[N.Stmt]
    in_loop: bool


@dataclass(eq=False)
class Uniform:
    """Assignments to uniform locals, run once per group (outside the work-item loops)."""

    stmts: List[N.Assign]


@dataclass(eq=False)
class GIf:
    cond: N.Expr
    then: list
    orelse: list
    id: int
    uniform: bool = False  # the condition is the same in every work-item: a plain branch

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
    has_break: bool = True  # whether a 'break' in the body targets this loop
    uniform: bool = False  # uniform condition/bounds, no own break/continue: a plain loop

    @property
    def left(self) -> int:  # broke out of / finished the loop
        return 2 + 3 * self.id

    @property
    def cont(self) -> int:  # 'continue' pending until the latch
        return 3 + 3 * self.id


Node = Union[Region, GIf, GLoop, Uniform]


@dataclass
class FissionPlan:
    nodes: List[Node]
    per_item_vars: Set[str]
    per_item_arrays: Set[str]
    hidden_locals: Dict[str, ScalarType] = field(default_factory=dict)
    constructs: int = 0
    uniform_vars: Set[str] = field(default_factory=set)
    needs_state: bool = True  # some work-item may skip a region (return, divergent construct)
    remat: Dict[str, N.Expr] = field(default_factory=dict)  # recomputed in every work-item loop
    counts: Dict[str, int] = field(default_factory=dict)  # assignments per local

    def item_bytes(self, fn: N.Function) -> int:
        """Bytes of per-work-item storage one work-item needs (state word included)."""
        total = 4 if self.needs_state else 0
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
                                 has_continue=_has_own(s.body, N.Continue), has_break=_has_own(s.body, N.Break)))
            elif isinstance(s, N.For):
                stop = f"{s.var}.stop.{cid}"
                self.hidden[stop] = self.fn.locals[s.var]
                out.append(GLoop("for", None, self.build(s.body, True), cid, s, stop,
                                 has_continue=_has_own(s.body, N.Continue), has_break=_has_own(s.body, N.Break)))
            else:  # pragma: no cover - only compound statements contain barriers
                raise TypeError(f"unexpected barrier-containing statement {type(s).__name__}")
        if run:
            out.append(Region(run, in_loop))
        return out


def _has_own(stmts: List[N.Stmt], kind) -> bool:
    """Whether ``stmts`` (a loop body) holds a ``continue``/``break`` (``kind``) of that loop (not of
    a nested loop)."""
    for s in stmts:
        if isinstance(s, kind):
            return True
        if isinstance(s, N.If) and (_has_own(s.then, kind) or _has_own(s.orelse, kind)):
            return True
    return False


def plan_fission(fn: N.Function, pinned: Set[str] = frozenset()) -> FissionPlan:
    """The plan for ``fn``; the ``pinned`` locals are kept per work-item whatever their use (the
    operands of subgroup collectives, which other work-items read: codegen/cpu/subgroups.py)."""
    b = _Builder(fn)
    nodes = b.build(fn.body, False)
    uniform = _uniform_locals(fn, nodes) - set(pinned)
    nodes = _hoist_uniform(nodes, uniform, {p.name for p in fn.params if not p.is_buffer}, True)
    per_vars, per_arrays = _classify(fn, nodes)
    counts = assign_counts(fn)
    remat = {k: v for k, v in rematerializable(fn, counts).items() if k not in pinned}
    per_vars -= uniform | set(remat)
    per_vars |= set(pinned)
    for node in _walk(nodes):
        if isinstance(node, GLoop) and node.kind == "for" and not node.uniform:
            per_vars.update((node.stmt.var, node.stop_var))
    needs_state = (any(isinstance(s, N.Return) for s in N.walk_stmts(fn.body))
                   or any(isinstance(n, (GIf, GLoop)) and not n.uniform for n in _walk(nodes)))
    return FissionPlan(nodes, per_vars, per_arrays, b.hidden, b.count, uniform, needs_state, remat, counts)


# ---------------------------------------------------------------- uniform values


_UNIFORM_REGS = ("group_id", "local_size", "num_groups")


def uniform_expr(e: N.Expr, uniform: Set[str], params: Set[str]) -> bool:
    """Whether ``e`` has the same value in every work-item of a group, given the uniform locals."""
    for x in N.walk_expr(e):
        if isinstance(x, (N.Load, N.Atomic)):
            return False
        if isinstance(x, N.SpecialReg) and x.kind not in _UNIFORM_REGS:
            return False
        if isinstance(x, N.Subgroup) and x.op != "size":
            return False
        if isinstance(x, N.Var) and x.name not in uniform and x.name not in params:
            return False
    return True


def _construct_uniform(n: Node, ok: bool, uniform: Set[str], params: Set[str]) -> bool:
    if not ok:
        return False
    if isinstance(n, GIf):
        return uniform_expr(n.cond, uniform, params)
    if n.has_break or n.has_continue:
        return False
    if n.kind == "while":
        return uniform_expr(n.cond, uniform, params)
    return (n.stmt.var in uniform and uniform_expr(n.stmt.start, uniform, params)
            and uniform_expr(n.stmt.stop, uniform, params))


def _uniform_locals(fn: N.Function, nodes: List[Node]) -> Set[str]:
    """The largest set of locals that are provably uniform (a fixpoint from "all locals")."""
    params = {p.name for p in fn.params if not p.is_buffer}
    uniform = set(fn.locals)

    def visit(ns: List[Node], ok: bool, bad: Set[str]) -> None:
        for n in ns:
            if isinstance(n, Region):
                for s in n.stmts:
                    if (ok and isinstance(s, N.Assign) and s.name in uniform
                            and uniform_expr(s.value, uniform, params)):
                        continue
                    for x in N.walk_stmts([s]):
                        if isinstance(x, N.Assign):
                            bad.add(x.name)
                        elif isinstance(x, N.For):
                            bad.add(x.var)
            elif isinstance(n, GIf):
                u = _construct_uniform(n, ok, uniform, params)
                visit(n.then, u, bad)
                visit(n.orelse, u, bad)
            else:
                u = _construct_uniform(n, ok, uniform, params)
                if n.kind == "for" and not u:
                    bad.add(n.stmt.var)
                visit(n.body, u, bad)

    while True:
        bad: Set[str] = set()
        visit(nodes, True, bad)
        if not bad & uniform:
            return uniform
        uniform -= bad


def _hoist_uniform(nodes: List[Node], uniform: Set[str], params: Set[str], ok: bool) -> List[Node]:
    """Mark uniform constructs and move assignments to uniform locals out of the work-item
    regions (see the module docstring). ``ok``: the enclosing control flow is uniform."""
    out: List[Node] = []
    for n in nodes:
        if isinstance(n, Region):
            out.extend(_split_region(n, uniform) if ok else [n])
            continue
        n.uniform = _construct_uniform(n, ok, uniform, params)
        if isinstance(n, GIf):
            n.then = _hoist_uniform(n.then, uniform, params, n.uniform)
            n.orelse = _hoist_uniform(n.orelse, uniform, params, n.uniform)
        else:
            n.body = _hoist_uniform(n.body, uniform, params, n.uniform)
        out.append(n)
    return out


def _split_region(r: Region, uniform: Set[str]) -> List[Node]:
    """Split a region's top-level assignments to uniform locals off into :class:`Uniform` nodes:
    before the work-item statements when none of those (so far) reads the variable, else after
    them; a work-item statement that reads a variable assigned after it starts a new region."""
    out: List[Node] = []
    pre: List[N.Assign] = []
    items: List[N.Stmt] = []
    post: List[N.Assign] = []

    def flush() -> None:
        if pre:
            out.append(Uniform(list(pre)))
        if items:
            out.append(Region(list(items), r.in_loop))
        if post:
            out.append(Uniform(list(post)))
        pre.clear(), items.clear(), post.clear()

    read_by_items: Set[str] = set()
    for s in r.stmts:
        if isinstance(s, N.Assign) and s.name in uniform:
            if not post and s.name not in read_by_items:
                pre.append(s)
            else:
                post.append(s)
            continue
        names: Set[str] = set()
        _stmt_names([s], names, set())
        if post and names & {a.name for a in post}:
            flush()
            read_by_items = set()
        items.append(s)
        read_by_items |= names
    flush()
    return out


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
            if isinstance(n, Uniform):
                continue  # uniform locals only: one scalar per group
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


# ---------------------------------------------------------------- guard range splitting
#
# Most kernels guard their work with bounds checks (``if i < n: ...``, ``if x >= w or y >= h:
# return``, ``if lid < step: ...`` in a tree reduction). Predicated stores keep LLVM from
# vectorizing a work-item loop, and a tree reduction visits every work-item at every step. So the
# emitter splits each row of work-items into intervals on which every guard has one known value,
# and runs, on each interval, either a copy of the body with the guards replaced by their
# *preferred* branch (straight-line, vectorizable; the then-branch, or the fall-through when the
# then-branch ends in ``return``) or, where some guard disagrees, the general body.
#
# A guard qualifies when it is built from comparisons whose operands are *row-uniform* (parameters,
# constants, uniform locals, group ids, sizes, local/global ids of dimensions 1 and 2) or
# *monotone*: non-decreasing in ``local_id(0)`` (``local_id(0)``/``global_id(0)``, widening or
# float casts of them, ``m + u``, ``m - u`` and ``u + m``; integer sums are checked at run time not
# to wrap at the ends of the row, which makes them wrap nowhere in it). Such a comparison changes
# its value at most once along the row (``==``/``!=``: at most twice), so the places where it does
# are found by binary search, and between consecutive places every guard is constant. Everything
# evaluated for this is free of memory accesses, so evaluating it at any work-item is harmless.


@dataclass
class RowGuards:
    aliases: Dict[str, N.Expr]  # local -> defining expression, inlined when evaluating guards
    guards: List[tuple]  # (condition, preferred value)
    steps: List[N.Expr]  # monotone predicates: the row splits where one changes value
    wraps: List[N.BinOp]  # integer sums that must not wrap at either end of the row
    fast_body: List[N.Stmt]  # the statements with every guard replaced by its preferred branch
    row_dependent: bool  # the steps read local/global ids of dimensions 1 or 2
    skip: bool = False  # where the first guard is not preferred, the work-item has nothing to do


_ROW_UNIFORM_DIMS = (1, 2)


def _pure(e: N.Expr) -> bool:
    return not any(isinstance(x, (N.Load, N.Atomic)) or (isinstance(x, N.Subgroup) and x.collective)
                   for x in N.walk_expr(e))


def _ends_with_return(stmts: List[N.Stmt]) -> bool:
    return bool(stmts) and isinstance(stmts[-1], N.Return)


def assign_counts(fn: N.Function) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for s in N.walk_stmts(fn.body):
        name = s.name if isinstance(s, N.Assign) else s.var if isinstance(s, N.For) else None
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    return counts


def rematerializable(fn: N.Function, counts: Dict[str, int]) -> Dict[str, N.Expr]:
    """Locals assigned once, by a top-level statement of the kernel, from parameters, constants,
    special registers and other such locals: any work-item loop can recompute them instead of
    keeping them per work-item (``lid = local_id(0)``, ``i = global_id(0)``...). Definition order."""
    params = {p.name for p in fn.params if not p.is_buffer}
    out: Dict[str, N.Expr] = {}
    for s in fn.body:
        if not (isinstance(s, N.Assign) and counts.get(s.name) == 1 and _pure(s.value)):
            continue
        if all(not isinstance(x, N.Var) or x.name in params or x.name in out for x in N.walk_expr(s.value)):
            out[s.name] = s.value
    return out


class _RowClassifier:
    def __init__(self, fn: N.Function, aliases: Dict[str, N.Expr], uniform: Set[str]):
        self.params = {p.name for p in fn.params if not p.is_buffer}
        self.uniform = uniform
        self.alias = aliases
        self.wraps: List[N.BinOp] = []

    def kind(self, e: N.Expr):
        """"u" (row-uniform), "m" (monotone non-decreasing in local_id(0)) or None."""
        if isinstance(e, N.Const):
            return "u"
        if isinstance(e, N.Var):
            if e.name in self.params or e.name in self.uniform:
                return "u"
            if e.name in self.alias:
                return self.kind(self.alias[e.name])
            return None
        if isinstance(e, N.SpecialReg):
            if e.kind in _UNIFORM_REGS:
                return "u"
            if e.dim in _ROW_UNIFORM_DIMS:
                return "u"
            return "m"
        if isinstance(e, N.Cast):
            k = self.kind(e.a)
            if k == "m" and not (e.to.is_float or (e.to.is_int and e.to.bits >= 32)):
                return None  # narrowing would wrap
            return k
        if isinstance(e, N.BinOp) and e.op in ("add", "sub") and not e.type.is_bool:
            ka, kb = self.kind(e.a), self.kind(e.b)
            if ka == kb == "u":
                return "u"
            if not ((ka == "m" and kb == "u") or (e.op == "add" and ka == "u" and kb == "m")):
                return None
            if e.type.is_int:
                if e.type.bits > 32:
                    return None
                self.wraps.append(e)
            return "m"
        if isinstance(e, (N.BinOp, N.UnaryOp, N.Select, N.Call)) and _pure(e):
            return "u" if all(self.kind(c) == "u" for c in e.children()) else None
        return None

    def steps(self, cond: N.Expr, out: List[N.Expr]) -> bool:
        """Collect the monotone predicates of a guard; False if it does not qualify."""
        if isinstance(cond, N.BinOp) and cond.op in N.BINOPS_LOGIC:
            return self.steps(cond.a, out) and self.steps(cond.b, out)
        if isinstance(cond, N.UnaryOp) and cond.op == "not":
            return self.steps(cond.a, out)
        if isinstance(cond, N.BinOp) and cond.op in N.BINOPS_CMP:
            ka, kb = self.kind(cond.a), self.kind(cond.b)
            if ka == kb == "u":
                return True
            if "m" not in (ka, kb) or None in (ka, kb):
                return False
            if cond.op in ("eq", "ne"):
                x, u = (cond.a, cond.b) if ka == "m" else (cond.b, cond.a)
                out.extend((N.BinOp("ge", x, u), N.BinOp("gt", x, u)))
            else:
                out.append(cond)
            return True
        return self.kind(cond) == "u"


def plan_row_guards(fn: N.Function, stmts: List[N.Stmt], uniform: Set[str] = frozenset(),
                    remat: Optional[Dict[str, N.Expr]] = None, counts: Optional[Dict[str, int]] = None,
                    keep: Set[str] = frozenset(), can_return: bool = True) -> Optional[RowGuards]:
    """The range-splitting plan of a work-item body (a region), or None if it has no guard.
    ``keep``: locals whose value outlives the region (per-work-item storage); ``can_return``:
    whether ``return`` only ends the work-item (no state to record)."""
    counts = assign_counts(fn) if counts is None else counts
    aliases = dict(remat or {})
    rc = _RowClassifier(fn, aliases, set(uniform))
    guards: List[tuple] = []
    steps: List[N.Expr] = []
    fast: List[N.Stmt] = []
    for k, s in enumerate(stmts):
        if isinstance(s, N.Assign) and counts.get(s.name) == 1 and _pure(s.value):
            aliases.setdefault(s.name, s.value)
            fast.append(s)
            continue
        if isinstance(s, N.If) and _pure(s.cond):
            found: List[N.Expr] = []
            nwraps = len(rc.wraps)
            if rc.steps(s.cond, found):
                prefer = not _ends_with_return(s.then)
                guards.append((s.cond, prefer))
                steps.extend(found)
                fast.extend(s.then if prefer else s.orelse)
                continue
            del rc.wraps[nwraps:]
        fast.extend(stmts[k:])
        break
    if not guards:
        return None
    return RowGuards(aliases, guards, steps, list(rc.wraps), fast, any(_reads_row(e, aliases) for e in steps),
                     _skippable(stmts, guards[0][0], keep, can_return))


def _skippable(stmts: List[N.Stmt], first_guard: N.Expr, keep: Set[str], can_return: bool) -> bool:
    """Whether a work-item for which the first guard is not preferred does nothing observable:
    only pure assignments to region-local variables precede that guard, and the guard is either
    ``if c: return`` (when returning records nothing) or ``if c: ...`` with nothing after it."""
    for k, s in enumerate(stmts):
        if isinstance(s, N.If) and s.cond is first_guard:
            if len(s.then) == 1 and isinstance(s.then[0], N.Return):
                return can_return and not s.orelse
            return not s.orelse and k == len(stmts) - 1
        if not (isinstance(s, N.Assign) and s.name not in keep):
            return False
    return False


def _reads_row(e: N.Expr, aliases: Dict[str, N.Expr]) -> bool:
    for x in N.walk_expr(e):
        if isinstance(x, N.SpecialReg) and x.dim in _ROW_UNIFORM_DIMS and x.kind in ("local_id", "global_id"):
            return True
        if isinstance(x, N.Var) and x.name in aliases and _reads_row(aliases[x.name], aliases):
            return True
    return False

