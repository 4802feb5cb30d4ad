"""Expressions of the oracle (``polykern.interpreter``): each IR expression compiled once into a
Python closure of the work-item's state; loads and atomics with the bounds, race and
uninitialized-shared-memory checks; float operations recorded where they see a NaN/inf."""
from __future__ import annotations

import math

from ..errors import DataRaceError, UninitializedReadError
from ..ir import nodes as ir
from ..ir.types import ArrayType
from .copies import Marker, pending_message
from .memory import mark, mark_sites
from .named import join
from .sites import is_site
from .subgroups import Request, linear_id, register_value
from .taint import location
from .values import OracleError, binop, bitcaster, canon, caster, math_fn, unop


class ExprCompiler:
    """Mixin of ``program.Program``: ``_expr(e)`` gives the closure computing ``e``."""

    def _expr(self, e: ir.Expr):
        m = getattr(self, "_e_" + type(e).__name__, None)
        if m is None:
            raise OracleError(f"{location(e, self.fn)}: the oracle cannot run {type(e).__name__} expressions")
        return m(e)

    def describe(self, me: int) -> str:
        """Work-item ``me`` (its linear id in the launch) by its ids, for a message."""
        grid, block = self.launch_dims
        gsize = block[0] * block[1] * block[2]
        g, li = divmod(me, gsize)
        gid = (g % grid[0], (g // grid[0]) % grid[1], g // (grid[0] * grid[1]))
        lid = (li % block[0], (li // block[0]) % block[1], li // (block[0] * block[1]))
        glob = tuple(gid[d] * block[d] + lid[d] for d in range(3))
        return f"work-item {me}: global_id {glob}, group_id {gid}, local_id {lid}"

    def located(self, cls, node, text: str, *items):
        """A ``cls`` error at ``node``'s kernel line: ``text``, then the ids of the work-items ``items``
        (linear ids; others, such as an atomic's tag, are left out)."""
        msg = text + self._ids(*items)
        loc = getattr(node, "loc", None)
        return cls(msg, loc) if loc is not None else cls(f"kernel '{self.fn.name}': {msg}")

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
            raise OracleError(f"{location(node, self.fn)}: unknown variable '{name}'") from None

    def _e_BinOp(self, e):
        a, b = self._expr(e.a), self._expr(e.b)
        if e.op == "land":
            return lambda st: a(st) and b(st)
        if e.op == "lor":
            return lambda st: a(st) or b(st)
        f = binop(e.op, e.a.type, location(e, self.fn))
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
        f = unop(e.op, e.a.type, location(e, self.fn))
        return lambda st: f(a(st))

    def _e_Cast(self, e):
        a = self._expr(e.a)
        f = caster(e.a.type, e.to)
        if is_site(e):
            return self._watch(e, f, (a,))
        return lambda st: f(a(st))

    def _e_Bitcast(self, e):
        a, f = self._expr(e.a), bitcaster(e.a.type, e.to)
        return lambda st: f(a(st))

    def _e_Select(self, e):
        c, a, b = self._expr(e.cond), self._expr(e.a), self._expr(e.b)

        def sel(st):
            x, y = a(st), b(st)  # eager: both arms evaluated
            return x if c(st) else y

        return sel

    def _e_Call(self, e):
        f = math_fn(e.func, e.type, location(e, self.fn))
        args = [self._expr(a) for a in e.args]
        if e.func in ("min", "max") and e.type.is_float:
            return self._min_max(e, f, *args)
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

    def _min_max(self, e, f, a, b):
        """Float min/max: a site (see _watch) that also records where its operands are a +0 and a -0:
        the sign of the zero it gives is unspecified (C99 F.9.9.2; PoCL's fmax(+0, -0) is -0, LLVM's
        maxnum(-0, +0) is -0 on x86), which a later 1 / x turns into +inf or -inf."""
        seen, by, k = self.special_seen, self.special_seen_by, id(e)
        useen, uby = self.unspecified_seen, self.unspecified_seen_by

        def min_max(st):
            x, y = a(st), b(st)
            r = f(x, y)
            if (r - r) or (x - x) or (y - y):
                seen.add(k)
                by.setdefault(st[1], set()).add(k)
            elif x == 0 and y == 0 and math.copysign(1.0, x) != math.copysign(1.0, y):
                useen.add(k)
                uby.setdefault(st[1], set()).add(k)
            return r

        return min_max

    def _watch(self, e, f, operands):
        """The closure computing ``e`` = ``f(*operands)`` that records ``e`` as a site (sites)
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
            raise OracleError(f"{location(e, self.fn)}: subgroup_{e.op} outside an assignment of its own")
        op, size = e.op, self.subgroup_size
        return lambda st: register_value(op, linear_id(st[0][1], st[0][3]), size)

    def _g_collective(self, s):
        """``t = subgroup_<op>(...)``: yields a Request (like a barrier); resumed with the result."""
        k, node, where = self._slot(s.name, s), s.value, location(s, self.fn)
        args = [self._expr(a) for a in node.args]

        useen, uby, site = self.unspecified_seen, self.unspecified_seen_by, id(node)

        def collective(st):
            r = Request(where, node, [a(st) for a in args])
            st[k] = yield r
            if r.unspecified:  # see _min_max
                useen.add(site)
                uby.setdefault(st[1], set()).add(site)
            return None

        return collective

    def _index(self, base: ir.Var, index: ir.Expr):
        k = self._slot(base.name, base)
        idx = self._expr(index)
        where = location(index, self.fn)
        name = base.name

        def bad(i, n):
            raise OracleError(f"{where}: index {i} is out of bounds of '{name}' ({n} elements)")

        return k, idx, bad

    def _e_Load(self, e):
        k, idx, bad = self._index(e.base, e.index)
        where, name = location(e, self.fn), e.base.name
        if isinstance(e.base.type, ArrayType) and e.base.type.scope == "local":
            def load_local(st):
                arr, i = st[k], idx(st)
                if not 0 <= i < len(arr):
                    bad(i, len(arr))
                return arr[i]

            return load_local
        shared = isinstance(e.base.type, ArrayType)
        located = self.located

        def load(st):
            mem, i = st[k], idx(st)
            data = mem.data
            if not 0 <= i < len(data):
                bad(i, len(data))
            ep, me = st[2][0], st[1]
            w = mem.wr[i]
            if w is not None and w[0] == ep and w[1] != me:
                if not isinstance(w[1], Marker):
                    raise located(DataRaceError, e, f"data race on {name}[{i}]: read by work-item {me} after "
                                  f"{'a write' if isinstance(w[1], int) else 'atomic updates'} by another "
                                  "work-item in the same barrier interval", me, w[1])
                why = w[1].refuse(me, where, f"read by work-item {me}", name, i)
                if why:
                    raise DataRaceError(why)
            r = mem.rd[i]
            if r is None or r[0] != ep:
                mem.rd[i] = (ep, me)
            elif r[1] != me:  # several readers (with named barriers: each of them, interpreter/named.py)
                mem.rd[i] = (ep if ep.__class__ is int else join(r[0], ep), -2)
            v = data[i]
            if v is None and shared:
                raise located(UninitializedReadError, e, f"read of {name}[{i}], which no work-item has written "
                              "(shared memory starts uninitialized)", me)
            return v

        return load

    def _write_check(self, st, mem, i, where, atomic, node=None):
        """Record a write (``atomic``: None for a plain store, else the atomic op) and refuse races:
        two work-items touching one element in one barrier interval, one of them writing, unless both
        are the same commutative atomic (add, min, max), whose final value does not depend on order.
        ``node``: the statement or atomic writing, to locate the error at its line (else ``where``)."""
        ep, me = st[2][0], st[1]
        w = mem.wr[i]
        tag = me if atomic is None else atomic
        if w is not None and w[0] == ep and w[1] != me and w[1] != tag:
            if isinstance(w[1], Marker):
                why = w[1].refuse(me, where, f"written by work-item {me}", mem.name, i)
                if why:
                    raise DataRaceError(why)
            elif node is not None:
                raise self.located(DataRaceError, node, self._race_message(me, mem, i, atomic, w), me, w[1])
            else:
                raise DataRaceError(f"{where}: {self._race_message(me, mem, i, atomic, w)}{self._ids(me, w[1])}")
        r = mem.rd[i]
        if r is not None and r[0] == ep and r[1] != me:
            text = (f"data race on {mem.name}[{i}]: written by work-item {me} after another work-item read it in "
                    "the same barrier interval")
            if node is not None:
                raise self.located(DataRaceError, node, text, me, r[1])
            raise DataRaceError(f"{where}: {text}{self._ids(me, r[1])}")
        if mem.pending is not None and i in mem.pending:
            raise DataRaceError(pending_message(where, f"written by work-item {me}", mem.name, i, mem.pending[i][1],
                                                source=True))
        if w is not None and w[1] == tag != me and ep.__class__ is not int and w[0] == ep:
            ep = join(w[0], ep)  # unordered atomics of one op, with named barriers: each of them (named.py)
        mem.wr[i] = (ep, tag if atomic in (None, "add", "min", "max") else me)

    def _ids(self, *items) -> str:
        ids = "; ".join(self.describe(i) for i in items if type(i) is int and i >= 0)
        return f" [{ids}]" if ids else ""

    @staticmethod
    def _race_message(me, mem, i, atomic, w) -> str:
        return (f"data race on {mem.name}[{i}]: "
                f"{'written' if atomic is None else f'atomic_{atomic}()'} by work-item {me} after "
                f"{'a write by another work-item' if isinstance(w[1], int) else f'atomic_{w[1]}()'} in the "
                "same barrier interval (the result would depend on the order)")

    def _e_Atomic(self, e):
        k, idx, bad = self._index(e.base, e.index)
        where = location(e, self.fn)
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
        # a float min/max is a site (sites): over a +0 and a -0 it gives a zero of unspecified sign
        # (like pk.min/pk.max, _min_max), to the element and to every later old value read from it
        zeros = is_site(e)
        sites = self._store_sites(e.value, e if zeros else e.compare)
        useen, uby, site = self.unspecified_seen, self.unspecified_seen_by, id(e)
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
                raise UninitializedReadError(f"{where}: atomic on {mem.name}[{i}], which no work-item has written")
            check(st, mem, i, where, op, e)
            if f is None:
                if old == c:
                    data[i] = v
            else:
                data[i] = f(old, v)
                if zeros and old == 0 and v == 0 and math.copysign(1.0, old) != math.copysign(1.0, v):
                    useen.add(site)
                    uby.setdefault(st[1], set()).add(site)
            if tags is not None:
                mark(mem, i, tags)
            if sites or mem.sites is not None:
                mark_sites(mem, i, sites(st) if sites else None, True)
            return old

        return atomic
