"""The IR interpreter: the oracle that the differential fuzzer compares every backend against.

It executes a kernel's IR (after the default passes, i.e. exactly what ``pk.build`` hands to the code
generators) for a grid x block with the language's meaning (see ``polykern.ir.nodes``):

- scalar arithmetic from :mod:`polykern.testing.interp_values` (integers wrap, ``//``/``%`` truncate,
  floats rounded to their type after every operation, saturating float -> int casts);
- locals and ``pk.local`` arrays start at zero, shared arrays are uninitialized (reading an element
  nobody wrote is an :class:`OracleError`);
- the work-items of one workgroup run as Python generators that stop at ``barrier()``; a barrier that
  only some work-items reach is an error;
- atomics run in one valid order (sequentially), and every data race on a buffer or shared element
  (two work-items touching it in one barrier interval, one of them writing, not both atomically) is
  an error, as are out-of-bounds accesses, integer division by zero and runaway loops: a program the
  oracle refuses has no single meaning, so it cannot be used to judge a backend.

The IR is compiled once into Python closures (``Program``); running it walks no tree.

Inexact operations (math builtins, float division, whose accuracy a backend may relax within the
budgets of ``polykern.numerics``) are tracked statically: every buffer element remembers which inexact
operations fed the value stored there (``Result.taint``), and whether the value is one such operation
applied to exact operands (then it is compared within that operation's ULP budget) or a composition
(then it is not compared). An inexact value that feeds a branch, a loop bound, an index or a cast to
an integer is refused when the program is prepared, because its effect could not be bounded.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

import numpy as np

from ..codegen.llvm_subgroups import CPU_SUBGROUP_SIZE
from ..ir import nodes as ir
from ..ir.types import ArrayType, BufferType, ScalarType
from .interp_sites import SiteFlow, is_site
from .interp_subgroups import Request, linear_id, register_value, resolve
from .interp_values import SUBNORMAL_SEEN, OracleError, binop, canon, caster, math_fn, unop, zero

# Operations a backend may compute inexactly (their budgets are numerics.promise(op, dtype, backend)).
INEXACT_CALLS = frozenset(("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "fma"))
INEXACT_BINOPS = frozenset(("div",))

_BREAK, _CONTINUE, _RETURN = 1, 2, 3
_LOOP_BUDGET = 2_000_000  # loop iterations per launch before the oracle calls the program runaway

__all__ = ["OracleError", "Program", "Result", "prepare", "interpret"]


def _where(node, fn: ir.Function) -> str:
    loc = getattr(node, "loc", None)
    return str(loc) if loc is not None else f"kernel '{fn.name}'"


# ---------------------------------------------------------------- memory


class _Mem:
    """A buffer or shared array: values, and who last wrote/read each element in which interval."""

    __slots__ = ("name", "data", "wr", "rd", "taint", "sites")

    def __init__(self, name: str, data: list):
        self.name = name
        self.data = data
        self.wr: list = [None] * len(data)  # (epoch, work-item id, or the commutative atomic op)
        self.rd: list = [None] * len(data)  # (epoch, work-item id); id -2: several readers
        self.taint: Optional[list] = None
        self.sites: Optional[list] = None  # per element: the float operations (interp_sites) that fed it


# ---------------------------------------------------------------- static taint analysis

Tags = FrozenSet[Tuple[str, str]]
_NONE: Tags = frozenset()


class _Taint:
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
                for e in ir.stmt_exprs(s):
                    for a in ir.walk_expr(e):
                        if isinstance(a, ir.Atomic):
                            vt = self.tags(a.value) | (self.tags(a.compare) if a.compare is not None else _NONE)
                            changed |= self._join(self.arr, a.base.name, vt)

    @staticmethod
    def _join(table, key, tags) -> bool:
        old = table.get(key, _NONE)
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
                out |= self.var.get(x.name, _NONE)
            elif isinstance(x, (ir.Load, ir.Atomic)):
                out |= self.arr.get(x.base.name, _NONE)
        return frozenset(out)

    def direct(self, e: ir.Expr) -> Optional[Tuple[str, str]]:
        """(op, dtype) when ``e`` is one inexact operation applied to exact operands."""
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
            raise OracleError(f"{_where(e, self.fn)}: {what} depends on inexact operations ({ops}); "
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


# ---------------------------------------------------------------- result


@dataclass
class Result:
    """Buffers after the launch (every buffer parameter, by name) and, per element, what inexact
    operations fed it: ``None`` (exact), or ``(direct, tags, operands)`` with ``direct`` the one
    inexact ``(op, dtype)`` that computed it from exact ``operands``, or None for a composition of
    several. ``contractible``: the program has a float add/sub of a product (directly or through a
    variable), which a backend in ``numerics.MAY_CONTRACT`` may fuse. ``subnormal``: the float types (f16/f32) in which some operation produced a subnormal
    (a backend that may flush subnormals can then differ anywhere). ``special``: per buffer, the
    elements whose value a float operation that saw or made a NaN/inf may have fed (a backend or device
    without ``numerics.specials_promised`` may give anything there); ``special_anywhere``: such an
    operation reached control flow or an index (then any element may differ). ``chained`` and
    ``chained_anywhere``: the same for float add/sub chains, which a backend in
    ``numerics.MAY_REASSOCIATE`` may evaluate in another association (see ``interp_sites``)."""

    buffers: Dict[str, np.ndarray]
    taint: Dict[str, list] = field(default_factory=dict)
    subnormal: FrozenSet[str] = frozenset()
    contractible: bool = False  # some float a*b+c a backend allowed to contract could compute fused
    special: Dict[str, np.ndarray] = field(default_factory=dict)
    special_anywhere: bool = False
    chained: Dict[str, np.ndarray] = field(default_factory=dict)
    chained_anywhere: bool = False


# ---------------------------------------------------------------- compiler


class Program:
    """A kernel's IR compiled to closures; ``run(args, grid, block)`` launches it."""

    def __init__(self, fn: ir.Function, subgroup_size: int = CPU_SUBGROUP_SIZE):
        self.fn = fn
        self.subgroup_size = subgroup_size  # work-items per subgroup (interp_subgroups)
        self.taint = _Taint(fn)
        self.taint.check_function()
        self.contractible = _float_chain(fn, ("mul",))
        self.flow = SiteFlow(fn)
        self.special_seen: set = set()  # sites that saw a NaN/inf in the current run
        self.special_seen_by: Dict[int, set] = {}  # the same per work-item id
        self.gen = ir.uses_barrier(fn) or any(ir.subgroup_collective(s) for s in ir.walk_stmts(fn.body))
        # slots: 0 ctx (ids), 1 work-item id, 2 [epoch], 3 [loop budget], then params, locals, arrays
        self.slot: Dict[str, int] = {}
        for p in fn.params:
            self.slot[p.name] = len(self.slot) + 4
        for name in fn.locals:
            if name not in self.slot:
                self.slot[name] = len(self.slot) + 4
        for name in fn.arrays:
            self.slot[name] = len(self.slot) + 4
        self.nslots = len(self.slot) + 4
        self.body = self._block(fn.body)

    # ------------------------------------------------------------ expressions
    def _expr(self, e: ir.Expr):
        m = getattr(self, "_e_" + type(e).__name__, None)
        if m is None:
            raise OracleError(f"{_where(e, self.fn)}: the oracle cannot run {type(e).__name__} expressions")
        return m(e)

    def _e_Const(self, e):
        v = canon(e.type, e.value)
        return lambda st: v

    def _e_Var(self, e):
        k = self._slot(e.name, e)
        return lambda st: st[k]

    def _slot(self, name, node):
        try:
            return self.slot[name]
        except KeyError:
            raise OracleError(f"{_where(node, self.fn)}: unknown variable '{name}'") from None

    def _e_BinOp(self, e):
        a, b = self._expr(e.a), self._expr(e.b)
        if e.op == "land":
            return lambda st: a(st) and b(st)
        if e.op == "lor":
            return lambda st: a(st) or b(st)
        f = binop(e.op, e.a.type, _where(e, self.fn))
        if is_site(e):
            seen, by, k = self.special_seen, self.special_seen_by, id(e)

            def watched(st):
                x, y = a(st), b(st)
                r = f(x, y)
                if (x - x) or (y - y) or (r - r):  # NaN or inf: x - x is NaN
                    seen.add(k)
                    by.setdefault(st[1], set()).add(k)
                return r

            return watched
        return lambda st: f(a(st), b(st))

    def _e_UnaryOp(self, e):
        a = self._expr(e.a)
        f = unop(e.op, e.a.type, _where(e, self.fn))
        return lambda st: f(a(st))

    def _e_Cast(self, e):
        a = self._expr(e.a)
        f = caster(e.a.type, e.to)
        if is_site(e):
            return self._watch(e, f, (a,))
        return lambda st: f(a(st))

    def _e_Select(self, e):
        c, a, b = self._expr(e.cond), self._expr(e.a), self._expr(e.b)

        def sel(st):
            x, y = a(st), b(st)  # eager: both arms evaluated
            return x if c(st) else y

        return sel

    def _e_Call(self, e):
        f = math_fn(e.func, e.type, _where(e, self.fn))
        args = [self._expr(a) for a in e.args]
        if is_site(e):
            return self._watch(e, f, args)
        if len(args) == 1:
            (a,) = args
            return lambda st: f(a(st))
        if len(args) == 2:
            a, b = args
            return lambda st: f(a(st), b(st))
        a, b, c = args
        return lambda st: f(a(st), b(st), c(st))

    def _watch(self, e, f, operands):
        """The closure computing ``e`` = ``f(*operands)`` that records ``e`` as a site (interp_sites)
        that saw a NaN/inf operand or result (for a float NaN or inf, ``v - v`` is NaN, which is true)."""
        seen, by, k = self.special_seen, self.special_seen_by, id(e)

        def watched(st):
            vals = [x(st) for x in operands]
            r = f(*vals)
            if (r - r) or any(v - v for v in vals):
                seen.add(k)
                by.setdefault(st[1], set()).add(k)
            return r

        return watched

    _REG = {"global_id": 0, "local_id": 1, "group_id": 2, "local_size": 3, "num_groups": 4}

    def _e_SpecialReg(self, e):
        r, d = self._REG[e.kind], e.dim
        return lambda st: st[0][r][d]

    def _e_Subgroup(self, e):
        if e.collective:
            raise OracleError(f"{_where(e, self.fn)}: subgroup_{e.op} outside an assignment of its own")
        op, size = e.op, self.subgroup_size
        return lambda st: register_value(op, linear_id(st[0][1], st[0][3]), size)

    def _g_collective(self, s):
        """``t = subgroup_<op>(...)``: yields a Request (like a barrier); resumed with the result."""
        k, node, where = self._slot(s.name, s), s.value, _where(s, self.fn)
        args = [self._expr(a) for a in node.args]

        def collective(st):
            st[k] = yield Request(where, node, [a(st) for a in args])
            return None

        return collective

    def _index(self, base: ir.Var, index: ir.Expr):
        k = self._slot(base.name, base)
        idx = self._expr(index)
        where = _where(index, self.fn)
        name = base.name

        def bad(i, n):
            raise OracleError(f"{where}: index {i} is out of bounds of '{name}' ({n} elements)")

        return k, idx, bad

    def _e_Load(self, e):
        k, idx, bad = self._index(e.base, e.index)
        where, name = _where(e, self.fn), e.base.name
        if isinstance(e.base.type, ArrayType) and e.base.type.scope == "local":
            def load_local(st):
                arr, i = st[k], idx(st)
                if not 0 <= i < len(arr):
                    bad(i, len(arr))
                return arr[i]

            return load_local
        shared = isinstance(e.base.type, ArrayType)

        def load(st):
            mem, i = st[k], idx(st)
            data = mem.data
            if not 0 <= i < len(data):
                bad(i, len(data))
            ep, me = st[2][0], st[1]
            w = mem.wr[i]
            if w is not None and w[0] == ep and w[1] != me:
                raise OracleError(f"{where}: data race on {name}[{i}]: read by work-item {me} after "
                                  f"{'a write' if isinstance(w[1], int) else 'atomic updates'} by another "
                                  "work-item in the same barrier interval")
            r = mem.rd[i]
            if r is None or r[0] != ep:
                mem.rd[i] = (ep, me)
            elif r[1] != me:
                mem.rd[i] = (ep, -2)
            v = data[i]
            if v is None and shared:
                raise OracleError(f"{where}: read of {name}[{i}], which no work-item has written "
                                  "(shared memory starts uninitialized)")
            return v

        return load

    def _write_check(self, st, mem, i, where, atomic):
        """Record a write (``atomic``: None for a plain store, else the atomic op) and refuse races:
        two work-items touching one element in one barrier interval, one of them writing, unless both
        are the same commutative atomic (add, min, max), whose final value does not depend on order."""
        ep, me = st[2][0], st[1]
        w = mem.wr[i]
        tag = me if atomic is None else atomic
        if w is not None and w[0] == ep and w[1] != me and w[1] != tag:
            raise OracleError(f"{where}: data race on {mem.name}[{i}]: "
                              f"{'written' if atomic is None else f'atomic_{atomic}()'} by work-item {me} after "
                              f"{'a write by another work-item' if isinstance(w[1], int) else f'atomic_{w[1]}()'} in the "
                              "same barrier interval (the result would depend on the order)")
        r = mem.rd[i]
        if r is not None and r[0] == ep and r[1] != me:
            raise OracleError(f"{where}: data race on {mem.name}[{i}]: written by work-item {me} after "
                              "another work-item read it in the same barrier interval")
        mem.wr[i] = (ep, tag if atomic in (None, "add", "min", "max") else me)

    def _e_Atomic(self, e):
        k, idx, bad = self._index(e.base, e.index)
        where = _where(e, self.fn)
        elem = e.base.type.elem
        val = self._expr(e.value)
        cmp_ = self._expr(e.compare) if e.compare is not None else None
        if e.op == "add":
            f = binop("add", elem, where)
        elif e.op in ("min", "max"):
            f = math_fn(e.op, elem, where)
        elif e.op == "xchg":
            f = lambda old, v: v  # noqa: E731
        elif e.op == "cas":
            f = None
        else:
            raise OracleError(f"{where}: unknown atomic_{e.op}()")
        check = self._write_check
        tags = self._store_taint(e.value, e.compare)
        sites = self._store_sites(e.value, e.compare)
        op = e.op

        def atomic(st):
            mem, i = st[k], idx(st)
            data = mem.data
            if not 0 <= i < len(data):
                bad(i, len(data))
            v = val(st)
            c = cmp_(st) if cmp_ is not None else None
            old = data[i]
            if old is None:
                raise OracleError(f"{where}: atomic on {mem.name}[{i}], which no work-item has written")
            check(st, mem, i, where, op)
            if f is None:
                if old == c:
                    data[i] = v
            else:
                data[i] = f(old, v)
            if tags is not None:
                _mark(mem, i, tags)
            if sites or mem.sites is not None:
                _mark_sites(mem, i, sites(st) if sites else None, True)
            return old

        return atomic

    # ------------------------------------------------------------ statements
    def _store_sites(self, value, extra=None):
        """None when no float operation feeds ``value`` (and ``extra``), else a function of the
        work-item's state giving what the stored element records: (whether an own site already saw a
        NaN/inf in this work-item, the memory sites, whether an add/sub chain fed it)."""
        own, mem = self.flow.split(value)
        if extra is not None:
            o2, m2 = self.flow.split(extra)
            own, mem = own | o2, mem | m2
        if not own and not mem:
            return None
        chained = bool((own | mem) & self.flow.chain_sites)
        by = self.special_seen_by

        def record(st):
            w = by.get(st[1])
            return (bool(w and not own.isdisjoint(w)), mem, chained)

        return record

    def _store_taint(self, value, extra=None):
        tags = self.taint.tags(value) | (self.taint.tags(extra) if extra is not None else _NONE)
        if not tags:
            return None
        return (self.taint.direct(value) if extra is None else None, tags, ())

    def _s_Assign(self, s):
        k = self._slot(s.name, s)
        v = self._expr(s.value)

        def assign(st):
            st[k] = v(st)

        return assign

    def _s_Store(self, s):
        k, idx, bad = self._index(s.base, s.index)
        v = self._expr(s.value)
        where = _where(s, self.fn)
        if isinstance(s.base.type, ArrayType) and s.base.type.scope == "local":
            def store_local(st):
                arr, i = st[k], idx(st)
                if not 0 <= i < len(arr):
                    bad(i, len(arr))
                arr[i] = v(st)

            return store_local
        check = self._write_check
        tags = self._store_taint(s.value)
        sites = self._store_sites(s.value)
        if tags is not None and tags[0] is not None:
            return self._direct_store(s, k, idx, bad, where, tags, sites)

        def store(st):
            mem, i = st[k], idx(st)
            if not 0 <= i < len(mem.data):
                bad(i, len(mem.data))
            x = v(st)
            check(st, mem, i, where, None)
            mem.data[i] = x
            if tags is not None or mem.taint is not None:
                _mark(mem, i, tags)
            if sites or mem.sites is not None:
                _mark_sites(mem, i, sites(st) if sites else None, False)

        return store

    def _direct_store(self, s, k, idx, bad, where, tags, sites):
        """A store of one inexact operation on exact operands: also record the operands, which the
        comparison needs (numerics promises depend on them: domains, exponent growth)."""
        e = s.value
        args = [self._expr(a) for a in e.children()]
        f = (binop("div", e.type, where) if isinstance(e, ir.BinOp)
             else math_fn(e.func, e.type, where))
        direct, tagset, _ = tags
        check = self._write_check
        seen, by, site = self.special_seen, self.special_seen_by, id(e)

        def store_direct(st):
            mem, i = st[k], idx(st)
            if not 0 <= i < len(mem.data):
                bad(i, len(mem.data))
            vals = tuple(a(st) for a in args)
            x = f(*vals)
            if (x - x) or any(v - v for v in vals):  # a NaN/inf (see _watch)
                seen.add(site)
                by.setdefault(st[1], set()).add(site)
            check(st, mem, i, where, None)
            mem.data[i] = x
            _mark(mem, i, (direct, tagset, vals))
            _mark_sites(mem, i, sites(st), False)

        return store_direct

    def _s_ExprStmt(self, s):
        f = self._expr(s.expr)

        def run(st):
            f(st)

        return run

    def _s_Break(self, s):
        return lambda st: _BREAK

    def _s_Continue(self, s):
        return lambda st: _CONTINUE

    def _s_Return(self, s):
        return lambda st: _RETURN

    def _stmt(self, s):
        name = type(s).__name__
        if self.gen and ir.subgroup_collective(s) is not None:
            return self._g_collective(s), True
        if self.gen and isinstance(s, (ir.If, ir.For, ir.While, ir.Barrier)):
            return getattr(self, "_g_" + name)(s), True
        m = getattr(self, "_s_" + name, None)
        if m is None:
            raise OracleError(f"{_where(s, self.fn)}: the oracle cannot run {name} statements")
        return m(s), False

    def _block(self, stmts):
        compiled = [self._stmt(s) for s in stmts]
        if not self.gen:
            fs = [f for f, _ in compiled]
            if len(fs) == 1:
                return fs[0]

            def block(st):
                for f in fs:
                    r = f(st)
                    if r:
                        return r
                return None

            return block

        def gblock(st):
            for f, is_gen in compiled:
                r = (yield from f(st)) if is_gen else f(st)
                if r:
                    return r
            return None

        return gblock

    def _s_If(self, s):
        c, t, o = self._expr(s.cond), self._block(s.then), self._block(s.orelse)
        return lambda st: t(st) if c(st) else o(st)

    def _g_If(self, s):
        c, t, o = self._expr(s.cond), self._block(s.then), self._block(s.orelse)

        def gif(st):
            return (yield from (t(st) if c(st) else o(st)))

        return gif

    def _loop_parts(self, s):
        k = self._slot(s.var, s)
        start, stop, body = self._expr(s.start), self._expr(s.stop), self._block(s.body)
        step = s.step
        add = binop("add", s.start.type, _where(s, self.fn))
        down = step < 0
        where = _where(s, self.fn)
        return k, start, stop, body, step, add, down, where

    def _s_For(self, s):
        k, start, stop, body, step, add, down, where = self._loop_parts(s)

        def loop(st):
            budget = st[3]
            st[k] = start(st)
            end = stop(st)  # evaluated once, as Python evaluates range()
            while (st[k] > end) if down else (st[k] < end):
                budget[0] -= 1
                if budget[0] < 0:
                    _runaway(where)
                r = body(st)
                if r == _BREAK:
                    break
                if r == _RETURN:
                    return r
                st[k] = add(st[k], step)
            return None

        return loop

    def _g_For(self, s):
        k, start, stop, body, step, add, down, where = self._loop_parts(s)

        def gloop(st):
            budget = st[3]
            st[k] = start(st)
            end = stop(st)
            while (st[k] > end) if down else (st[k] < end):
                budget[0] -= 1
                if budget[0] < 0:
                    _runaway(where)
                r = yield from body(st)
                if r == _BREAK:
                    break
                if r == _RETURN:
                    return r
                st[k] = add(st[k], step)
            return None

        return gloop

    def _s_While(self, s):
        c, body, where = self._expr(s.cond), self._block(s.body), _where(s, self.fn)

        def loop(st):
            budget = st[3]
            while c(st):
                budget[0] -= 1
                if budget[0] < 0:
                    _runaway(where)
                r = body(st)
                if r == _BREAK:
                    break
                if r == _RETURN:
                    return r
            return None

        return loop

    def _g_While(self, s):
        c, body, where = self._expr(s.cond), self._block(s.body), _where(s, self.fn)

        def gloop(st):
            budget = st[3]
            while c(st):
                budget[0] -= 1
                if budget[0] < 0:
                    _runaway(where)
                r = yield from body(st)
                if r == _BREAK:
                    break
                if r == _RETURN:
                    return r
            return None

        return gloop

    def _g_Barrier(self, s):
        where = _where(s, self.fn)

        def barrier(st):
            yield where
            return None

        return barrier

    # ------------------------------------------------------------ launch
    def run(self, args: Sequence, grid, block) -> Result:
        with np.errstate(all="ignore"):
            return self._run(args, grid, block)

    def _run(self, args: Sequence, grid, block) -> Result:
        fn = self.fn
        grid, block = _dims(grid), _dims(block)
        if len(args) != len(fn.params):
            raise OracleError(f"kernel '{fn.name}' takes {len(fn.params)} arguments, got {len(args)}")
        for key in SUBNORMAL_SEEN:
            SUBNORMAL_SEEN[key] = False
        self.special_seen.clear()
        self.special_seen_by.clear()
        base: List = [None] * self.nslots
        base[3] = [_LOOP_BUDGET]
        mems: Dict[str, _Mem] = {}
        for p, a in zip(fn.params, args):
            if isinstance(p.type, BufferType):
                arr = np.asarray(a)
                if arr.dtype != p.type.elem.numpy:
                    raise OracleError(f"argument '{p.name}' of '{fn.name}' must be {p.type.elem.numpy} "
                                      f"elements, got {arr.dtype}")
                data = [canon(p.type.elem, x) for x in arr.reshape(-1).tolist()]
                mems[p.name] = _Mem(p.name, data)
                base[self.slot[p.name]] = mems[p.name]
            else:
                base[self.slot[p.name]] = canon(p.type, a)
        locals_ = [(self.slot[n], zero(t)) for n, t in fn.locals.items() if n in self.slot and not fn.param(n)]
        local_arrays = [(self.slot[n], a) for n, a in fn.local_arrays.items()]
        shared = [(self.slot[n], n, a) for n, a in fn.shared_arrays.items()]
        ngroups = grid[0] * grid[1] * grid[2]
        gsize = block[0] * block[1] * block[2]
        for g in range(ngroups):
            gid3 = (g % grid[0], (g // grid[0]) % grid[1], g // (grid[0] * grid[1]))
            epoch = [g * 1_000_000]  # distinct per group: shared memory is per group anyway
            group_base = list(base)
            for k, n, a in shared:
                group_base[k] = _Mem(n, [None] * a.size)
            group_base[2] = epoch
            states = []
            for li in range(gsize):
                lid3 = (li % block[0], (li // block[0]) % block[1], li // (block[0] * block[1]))
                st = list(group_base)
                st[0] = (tuple(gid3[d] * block[d] + lid3[d] for d in range(3)), lid3, gid3, block, grid)
                st[1] = g * gsize + li
                for k, z in locals_:
                    st[k] = z
                for k, a in local_arrays:
                    st[k] = [zero(a.elem)] * a.size
                states.append(st)
            if self.gen:
                self._run_group_barriers(states, epoch)
            else:
                body = self.body
                for st in states:
                    body(st)
        out = {}
        taint = {}
        for p in fn.params:
            if isinstance(p.type, BufferType):
                mem = mems[p.name]
                out[p.name] = np.array(mem.data, dtype=p.type.elem.numpy)
                if mem.taint is not None:
                    taint[p.name] = mem.taint
        seen, flow = frozenset(self.special_seen), self.flow
        special, chained = _loose(mems, seen)
        return Result(out, taint, frozenset(k for k, v in SUBNORMAL_SEEN.items() if v), self.contractible,
                      special, bool(seen & flow.global_sites), chained, bool(flow.chain_sites & flow.global_sites))

    def _run_group_barriers(self, states, epoch):
        live = [self.body(st) for st in states]
        sent = [None] * len(live)  # what each work-item is resumed with (a collective's result)
        while live:
            at_barrier, finished, stops = [], 0, []
            where = None
            for gen, value in zip(live, sent):
                try:
                    where = gen.send(value)
                    at_barrier.append(gen)
                    stops.append(where)
                except StopIteration:
                    finished += 1
            if at_barrier and finished:
                raise OracleError(f"{getattr(where, 'where', where)}: barrier reached by {len(at_barrier)} "
                                  f"work-items of a group while {finished} others finished without it (a "
                                  "barrier in divergent control flow)")
            sent = [None] * len(at_barrier)
            requests = [r for r in stops if isinstance(r, Request)]
            if requests:
                if len(requests) != len(stops):
                    raise OracleError(f"{requests[0].where}: some work-items of a group reached a subgroup "
                                      "operation while others reached a barrier (divergent control flow)")
                sent = resolve(requests, self.subgroup_size)
            else:  # a subgroup operation orders no memory: only a barrier starts a new interval
                epoch[0] += 1
            live = at_barrier


def _float_chain(fn: ir.Function, inner_ops) -> bool:
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


def _mark(mem: _Mem, i: int, tags):
    if mem.taint is None:
        mem.taint = [None] * len(mem.data)
    mem.taint[i] = tags


_NO_SITES = (False, frozenset(), False)


def _mark_sites(mem: _Mem, i: int, rec, accumulate: bool):
    """Record what fed element ``i`` (see Program._store_sites; None: no float operation)."""
    if mem.sites is None:
        mem.sites = [_NO_SITES] * len(mem.data)
    rec = rec or _NO_SITES
    if accumulate:
        old = mem.sites[i]
        rec = (old[0] or rec[0], old[1] | rec[1], old[2] or rec[2])
    mem.sites[i] = rec


def _loose(mems, seen) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
    """Per buffer with a site recorded: the elements a float operation that saw a NaN/inf may have
    fed (an own site in the storing work-item, a memory site in any: ``seen``), and those an add/sub
    chain fed."""
    special, chained = {}, {}
    for name, mem in mems.items():
        if mem.sites is not None:
            special[name] = np.array([hit or not m.isdisjoint(seen) for hit, m, _ in mem.sites], bool)
            chained[name] = np.array([c for _, _, c in mem.sites], bool)
    return special, chained


def _runaway(where):
    raise OracleError(f"{where}: more than {_LOOP_BUDGET} loop iterations in one launch; "
                      "the oracle treats the program as not terminating")


def _dims(d) -> Tuple[int, int, int]:
    if isinstance(d, (int, np.integer)):
        d = (int(d),)
    d = tuple(int(x) for x in d)
    return (d + (1, 1, 1))[:3]


def prepare(kernel, subgroup_size: int = CPU_SUBGROUP_SIZE) -> Program:
    """A Program for a ``@pk.kernel`` (its IR after the default passes, on a copy) or an ir.Function;
    ``subgroup_size``: work-items per subgroup (the CPU backend's by default)."""
    from ..ir.verifier import verify
    from ..passes import run_default_passes

    fn = kernel if isinstance(kernel, ir.Function) else kernel.ir
    return Program(run_default_passes(verify(copy.deepcopy(fn))), subgroup_size)


def interpret(kernel, args: Sequence, grid, block, subgroup_size: int = CPU_SUBGROUP_SIZE) -> Result:
    """Run ``kernel`` on the oracle; returns every buffer after the launch (inputs are not modified)."""
    return prepare(kernel, subgroup_size).run(args, grid, block)
