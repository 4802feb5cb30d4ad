"""Statements of the oracle (``polykern.interpreter``): stores (with the race checks and what fed
the stored value), control flow and loops, each compiled once into a closure of the work-item's
state that returns BREAK, CONTINUE, RETURN or None; where the kernel has barriers or subgroup
collectives, blocks that contain them are generators that stop there (``program.Program`` resumes
a group's work-items together)."""
from __future__ import annotations

import sys

from .. import numerics
from ..ir import debug_print
from ..ir import nodes as ir
from ..ir.types import ArrayType
from ..ir.vector import lane_of
from .memory import mark, mark_sites
from .taint import NONE, bf16_operation, location
from .values import OracleError, binop, math_fn, rounder

BREAK, CONTINUE, RETURN = 1, 2, 3
LOOP_BUDGET = 2_000_000  # loop iterations per launch before the oracle calls the program runaway


def runaway(where, budget: list):
    raise OracleError(f"{where}: more than {budget[1]} loop iterations in one launch; "
                      "the interpreter treats the program as not terminating")


class StmtCompiler:
    """Mixin of ``program.Program``: ``_block(stmts)`` gives the closure running ``stmts``."""

    def _store_sites(self, value, extra=None):
        """None when no float operation feeds ``value`` (and ``extra``), else a function of the
        work-item's state giving what the stored element records: (whether an own site already saw a
        NaN/inf in this work-item, the memory sites, whether an add/sub chain fed it, whether an own
        site gave an unspecified result in this work-item, whether an a*b+c a backend may contract fed it)."""
        own, mem = self.flow.split(value)
        if extra is not None:
            o2, m2 = self.flow.split(extra)
            own, mem = own | o2, mem | m2
        if not own and not mem:
            return None
        chained = bool((own | mem) & self.flow.chain_sites)
        contracted = bool((own | mem) & self.flow.contract_sites)
        by, unspecified_by = self.special_seen_by, self.unspecified_seen_by

        def record(st):
            w, u = by.get(st[1]), unspecified_by.get(st[1])
            return (bool(w and not own.isdisjoint(w)), mem, chained, bool(u and not own.isdisjoint(u)), contracted)

        return record

    def _store_taint(self, value, extra=None):
        tags = self.taint.tags(value) | (self.taint.tags(extra) if extra is not None else NONE)
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
        where = location(s, self.fn)
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
            check(st, mem, i, where, None, s)
            mem.data[i] = x
            if tags is not None or mem.taint is not None:
                mark(mem, i, tags)
            if sites or mem.sites is not None:
                mark_sites(mem, i, sites(st) if sites else None, False)

        return store

    def _direct_store(self, s, k, idx, bad, where, tags, sites):
        """A store of one inexact operation on exact operands: also record the operands, which the
        comparison needs (numerics promises depend on them: domains, exponent growth)."""
        e = s.value
        inner = bf16_operation(e)
        if inner is not None:  # bf16(op(f32 operands)): the f32 operation, rounded to bf16
            e = inner
        args = [self._expr(a) for a in e.children()]
        f = (binop("div", e.type, where) if isinstance(e, ir.BinOp)
             else math_fn(e.func, e.type, where))
        if inner is not None:
            f32_op, to_bf16 = f, rounder(s.value.type)
            f = lambda *v: to_bf16(f32_op(*v))  # noqa: E731
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
            check(st, mem, i, where, None, s)
            mem.data[i] = x
            mark(mem, i, (direct, tagset, vals))
            mark_sites(mem, i, sites(st), False)

        return store_direct

    def _s_ExprStmt(self, s):
        f = self._expr(s.expr)

        def run(st):
            f(st)

        return run

    def _s_Break(self, s):
        return lambda st: BREAK

    def _s_Print(self, s):
        """pk.debug_print: the text C's printf would print, to ``sys.stdout`` (looked up at each print, so a
        redirection of it takes effect), in the order the work-items run."""
        parts = debug_print.parse(s.fmt)
        args = [self._expr(a) for a in s.args]

        def print_(st):
            sys.stdout.write(debug_print.render(parts, [a(st) for a in args]))

        return print_

    def _s_Continue(self, s):
        return lambda st: CONTINUE

    def _s_Return(self, s):
        return lambda st: RETURN

    def _stmt(self, s):
        name = type(s).__name__
        if self.gen and ir.subgroup_collective(s) is not None:
            return self._g_collective(s), True
        if self.gen and isinstance(s, (ir.If, ir.For, ir.While, ir.Barrier, ir.MatrixOp, ir.HopperOp)):
            return getattr(self, "_g_" + name)(s), True
        m = getattr(self, "_s_" + name, None)
        if m is None:
            raise OracleError(f"{location(s, self.fn)}: the oracle cannot run {name} statements")
        lane = lane_of(s)
        if lane is not None and lane.lane == 0:
            return self._vector_index_check(s, lane, m(s)), False
        return m(s), False

    def _vector_index_check(self, s, lane, f):
        """A pk.vload/pk.vstore group (its first lane ``s``, compiled ``f``) whose elements n*k .. n*k + n-1
        do not fit the index type is refused: the language requires them to (docs/language.md "Wide
        access"); the scalar lanes would wrap, a backend's fused vector access does not."""
        lo, hi = numerics.int_range(lane.index_type.name)
        n, t, where = lane.n, lane.index_type, location(s, self.fn)
        k = self._slot(lane.index, s) if isinstance(lane.index, str) else None

        def checked(st):
            v = st[k] if k is not None else lane.index
            if not lo <= v * n <= v * n + n - 1 <= hi:
                raise OracleError(f"{where}: pk.vload/pk.vstore of {n} elements at group index {v}: elements "
                                  f"{v * n} .. {v * n + n - 1} do not fit its index type {t}")
            return f(st)

        return checked

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

    def _s_For(self, s):
        return self._loop(s, False)

    def _g_For(self, s):
        return self._loop(s, True)

    _s_While, _g_While = _s_For, _g_For

    def _loop(self, s, gen: bool):
        """A ``for`` loop (``s.var`` from ``s.start`` while below, or for a negative step above,
        ``s.stop``, which is evaluated once, start first, as Python's range() is) or a ``while`` loop;
        ``gen``: a generator, for a body that can stop at a barrier."""
        where, body = location(s, self.fn), self._block(s.body)
        if isinstance(s, ir.For):
            k = self._slot(s.var, s)
            start, stop, step = self._expr(s.start), self._expr(s.stop), s.step
            add = binop("add", s.start.type, where)
            down = step < 0

            def enter(st):
                st[k] = start(st)
                return stop(st)

            def test(st, end):
                return (st[k] > end) if down else (st[k] < end)

            def advance(st):
                st[k] = add(st[k], step)
        else:
            cond = self._expr(s.cond)
            advance = None

            def enter(st):
                return None

            def test(st, end):
                return cond(st)

        if not gen:
            def loop(st):
                budget = st[3]
                end = enter(st)
                while test(st, end):
                    budget[0] -= 1
                    if budget[0] < 0:
                        runaway(where, budget)
                    r = body(st)
                    if r == BREAK:
                        break
                    if r == RETURN:
                        return r
                    if advance is not None:
                        advance(st)
                return None

            return loop

        def gloop(st):
            budget = st[3]
            end = enter(st)
            while test(st, end):
                budget[0] -= 1
                if budget[0] < 0:
                    runaway(where, budget)
                r = yield from body(st)
                if r == BREAK:
                    break
                if r == RETURN:
                    return r
                if advance is not None:
                    advance(st)
            return None

        return gloop

    def _g_Barrier(self, s):
        where = location(s, self.fn)

        def barrier(st):
            yield where
            return None

        return barrier
