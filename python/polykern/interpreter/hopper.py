"""Hopper's matrix path in the oracle (``polykern.interpreter``; docs/language.md "Hopper: warpgroup
MMA, tensor copies, transaction barriers"; the rules and reference are ``polykern.ir.hopper``).

Scheduling. A kernel with Hopper operations runs its work-items as generators scheduled one at a
time (:func:`run_group`): each runs until it stops, at a ``pk.barrier()`` (or a subgroup / fragment
collective), at a warpgroup operation, or at an ``mbarrier_wait`` whose phase has not completed, and
the scheduler goes round the runnable ones. A barrier (or a subgroup / fragment collective: the language
makes them group-uniform) is passed once every unfinished work-item of the group is at one
(``Program._group_stop``, as for kernels without these features); a warpgroup operation once all 128
work-items of the warpgroup are at it (the same operation with the same operands, else an OracleError);
a wait once its barrier's phase bit differs from its parity; a named barrier (``interpreter/named.py``) once its
round's count of work-items arrived. When no work-item can move, the program
hangs on a GPU: the oracle raises an OracleError naming what each blocked work-item waits for.

Transaction barriers are per group (shared memory), with the arrival count, pending arrivals, pending
transaction bytes (signed: a copy may land before its ``mbarrier_arrive_tx``) and the phase count
(the phase bit is its parity). A second ``mbarrier_init`` of one barrier, a use before it, or a use by
another work-item in the barrier interval of the init (no ``pk.barrier()`` made it visible) is refused.

Tensor copies land when issued (a valid schedule: the bytes arrive at once) and complete their box's
bytes on the barrier. Their elements are written "by the copy engine": their last-writer slot
(``Mem.wr``) is ``(ALWAYS, Landed)``, exempt from the plain race checks (and the copy clears their
readers); instead every read of such an element (a load, a fragment load, a copy source, a wgmma
operand, by every work-item of the warpgroup) and every plain write to it is refused unless the
work-item has *seen* the barrier phase the copy completed: a ``mbarrier_wait`` it passed after that
phase completed, or a ``pk.barrier()`` after another work-item saw it. A copy over the operands of a
pending wgmma (not retired by ``wgmma_wait``) is refused. Plain accesses of different work-items are
ordered by ``pk.barrier()``, as in every kernel, and by named barriers (``interpreter/named.py``), not by
transaction barriers: a plain shared-memory write that another work-item reads after a transaction
barrier (and no ``pk.barrier()`` or named barrier round ordering them) is refused as a race
(conservative). Not checked: a copy overwriting an element that a work-item read with a plain load
before (the program's "empty" barriers order such a reuse).

Warpgroup accumulators are per (warpgroup, name) 64 x N float32 matrices. ``wgmma`` computes
``ir.hopper.reference_wgmma`` at issue and marks the accumulator pending until a ``wgmma_wait`` retires
its committed group; reading it (``wg_store``) or refilling it (``wg_fill``) while pending is refused.
``wg_store`` writes each element as the work-item that holds it in wgmma's register layout, so the race
checks see the device's writers; stored floats carry the inexact tag ``("mma", "f32")``. Swizzled arrays
are stored logically (the swizzle never shows in the language).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import UninitializedReadError
from ..ir import hopper as H
from ..ir import nodes as ir
from ..ir.types import bf16, f16, f32
from .copies import ALWAYS, Marker, PendingCopy, pending_message, read_check
from .fragments import FragmentRequest
from .memory import mark, mark_sites
from .named import NamedBarriers, NamedWait, uses_named
from .subgroups import Request
from .taint import MMA_TAGS, NONE, location
from .values import OracleError, rounder

__all__ = ["HopperCompiler", "launch_check", "run_group"]

#: ops a work-item stops at (the others run in place)
_WARPGROUP = frozenset(H.WARPGROUP_OPS)
#: PTX's limit on an arrival count and on a transaction byte count
_COUNT_LIMIT = 1 << 20


class Landed(Marker):
    """The last writer of an element a tensor copy wrote: the copy, and the barrier phase it completed."""

    __slots__ = ("run", "bar", "phase", "where")

    def __init__(self, run: "_GroupState", bar: Tuple[str, int], phase: int, where: str):
        self.run, self.bar, self.phase, self.where = run, bar, phase, where

    def refuse(self, me: int, where: str, what: str, name: str, i: int) -> Optional[str]:
        if self.run.seen[me - self.run.first].get(self.bar, 0) > self.phase:
            return None
        return self.message(me, where, what, name, i)

    def message(self, me, where, what, name, i) -> str:
        bars, k = self.bar
        return (f"{where}: {name}[{i}] {what} before the tensor copy into it (pk.tma_load at {self.where}) is "
                f"known to have landed: the copy completes phase {self.phase} of barrier {bars}[{k}], which "
                f"work-item {me} has not waited for (pk.mbarrier_wait({bars}, {k}, {self.phase % 2}) must "
                "return first)")


class _Bar:
    __slots__ = ("count", "pending", "tx", "phase", "by", "epoch", "where")

    def __init__(self, count, by, epoch, where):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0
        self.by, self.epoch, self.where = by, epoch, where

    def __str__(self):
        return (f"phase bit {self.phase % 2}, {self.pending} of {self.count} arrivals and {self.tx} transaction "
                "bytes pending")


#: The key of an accumulator's registers in ``_GroupState.reading`` (a wgmma reads them as its A operand).
_REGS = "#registers"


class _Acc:
    __slots__ = ("value", "inexact", "pending")

    def __init__(self, value, inexact):
        self.value, self.inexact, self.pending = value, inexact, 0


class _GroupState:
    """A group's Hopper state during a launch: barriers, what each work-item has seen, accumulators and
    each warpgroup's wgmma groups (uncommitted, committed: lists of (accumulator, operand reads))."""

    def __init__(self, first: int, size: int):
        self.first = first
        self.bars: Dict[Tuple[str, int], _Bar] = {}
        self.seen: List[Dict[Tuple[str, int], int]] = [{} for _ in range(size)]
        self.accs: Dict[Tuple[int, str], _Acc] = {}
        self.groups: Dict[int, List[list]] = {}
        self.reading: Dict[tuple, int] = {}  # (array, element) or (_REGS, wg, acc) -> pending wgmma reads
        self.vecs: Dict[Tuple[int, str], List[float]] = {}  # (work-item, row vector) -> its registers


class WaitStop:
    """A work-item blocked at ``mbarrier_wait`` (yielded until the phase bit differs from ``parity``)."""

    __slots__ = ("where", "bar", "parity", "state")

    def __init__(self, where, bar, parity, state):
        self.where, self.bar, self.parity, self.state = where, bar, parity, state


class WarpgroupStop:
    """A work-item at a warpgroup operation, with its operand values."""

    __slots__ = ("where", "node", "st", "values")

    def __init__(self, where, node, st, values):
        self.where, self.node, self.st, self.values = where, node, st, values


def launch_check(fn: ir.Function, params, gsize: int) -> None:
    """The launch's rules: the block is exactly the declared warpgroups; every tensor map's shape fits
    its buffer and has rows of a multiple of 16 bytes (``params``: the arguments by name)."""
    hf = fn.hopper
    if hf is None:
        return
    if hf.warpgroups and gsize != H.WARPGROUP * hf.warpgroups:
        raise OracleError(f"kernel '{fn.name}' declares pk.warpgroups({hf.warpgroups}): its blocks have exactly "
                          f"{H.WARPGROUP * hf.warpgroups} work-items, got {gsize}")
    for name, tm in hf.tensor_maps.items():
        rows, cols = (params[d] if isinstance(d, str) else d for d in tm.shape)
        n = len(params[tm.buffer].data)
        if rows <= 0 or cols <= 0 or rows * cols > n or (cols * tm.elem.nbytes) % 16:
            raise OracleError(f"tensor map '{name}' views '{tm.buffer}' ({n} elements) as {rows} x {cols}: the "
                              "shape must be positive, fit the buffer and have rows of a multiple of 16 bytes")


def _ranges(ids: List[int]) -> str:
    out, ids = [], sorted(ids)
    start = prev = ids[0]
    for i in ids[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(str(start) if start == prev else f"{start}..{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(out)


def run_group(prog, states, epoch) -> None:
    """Run one group's work-items (``states``, in linear order) to completion; see the module's text."""
    n = len(states)
    first = states[0][1]
    hs = prog.hopper_state = _GroupState(first, n)
    gens = [prog.body(st) for st in states]
    named = NamedBarriers(states, epoch[0], hs) if uses_named(prog.fn) else None
    stops: List = [None] * n  # None: runnable
    sent: List = [None] * n
    done = [False] * n
    at_wg: Dict[int, List[int]] = {}  # warpgroup -> its work-items at a warpgroup operation
    while True:
        moved = False
        for w in range(n):
            if done[w]:
                continue
            s = stops[w]
            if s is not None:
                if not (isinstance(s, WaitStop) and s.state.phase % 2 != s.parity):
                    continue
                stops[w] = None
            moved = True
            try:
                s = stops[w] = gens[w].send(sent[w])
            except StopIteration:
                done[w] = True
                continue
            sent[w] = None
            if isinstance(s, WarpgroupStop):
                wg = w // H.WARPGROUP
                got = at_wg.setdefault(wg, [])
                got.append(w)
                if len(got) == H.WARPGROUP:
                    del at_wg[wg]
                    lo, hi = wg * H.WARPGROUP, (wg + 1) * H.WARPGROUP
                    _same_op(wg, stops[lo:hi])
                    if s.node.op in H.NAMED_OPS:  # named.py: wait for the round, or only arrive
                        go = named.arrive(wg, s, s.node.op == "named_barrier")
                        if lo not in go:
                            stops[lo:hi] = [NamedWait(s.where, s.node, named.rounds[s.values[0]])] * H.WARPGROUP
                        for k in go:
                            stops[k] = None
                    else:
                        _warpgroup_op(prog, hs, wg, stops[lo:hi])
                        stops[lo:hi] = [None] * H.WARPGROUP
        live = [w for w in range(n) if not done[w]]
        if not live:
            return
        for wg, got in at_wg.items():
            gone = [i for i in range(wg * H.WARPGROUP, (wg + 1) * H.WARPGROUP) if done[i]]
            if gone:
                raise OracleError(f"{stops[got[0]].where}: work-items {_ranges(got)} of warpgroup {wg} reached a "
                                  f"warpgroup operation that work-items {_ranges(gone)} finished without (a "
                                  "warpgroup operation in divergent control flow)")
        group = [w for w in live if stops[w] is not None
                 and not isinstance(stops[w], (WaitStop, WarpgroupStop, NamedWait))]
        if len(group) == len(live):
            if len(live) != n:
                raise OracleError(f"{getattr(stops[live[0]], 'where', stops[live[0]])}: barrier reached by "
                                  f"{len(live)} work-items of a group while {n - len(live)} others finished "
                                  "without it (a barrier in divergent control flow)")
            got = prog._group_stop([stops[w] for w in live], epoch)
            if got is None:  # a barrier: what one work-item has seen, all have
                merged: Dict = {}
                for d in hs.seen:
                    for k, v in d.items():
                        if v > merged.get(k, 0):
                            merged[k] = v
                hs.seen = [dict(merged) for _ in range(n)]
                if named is not None:  # a new epoch: what anyone did before is ordered before what all do after
                    named.new_epoch(epoch[0])
                got = [None] * n
            for k, w in enumerate(live):
                stops[w], sent[w] = None, got[k]
            continue
        if not moved:
            raise OracleError(_deadlock(live, stops, states))


def _deadlock(live, stops, states) -> str:
    why: Dict[str, List[int]] = {}
    for w in live:
        s = stops[w]
        if isinstance(s, NamedWait):
            what = s.describe()
        elif isinstance(s, WaitStop):
            what = (f"pk.mbarrier_wait({s.bar[0]}, {s.bar[1]}, {s.parity}) at {s.where} ({s.bar[0]}[{s.bar[1]}]: "
                    f"{s.state})")
        elif isinstance(s, WarpgroupStop):
            what = f"the warpgroup operation {H.builtin(s.node.op)} at {s.where} (its other work-items do not reach it)"
        elif isinstance(s, (Request, FragmentRequest)):
            what = f"the {'subgroup' if isinstance(s, Request) else 'matrix-fragment'} operation at {s.where}"
        else:
            what = f"pk.barrier() at {getattr(s, 'where', s)}"
        why.setdefault(what, []).append(states[w][1])
    return ("deadlock: no work-item of the group can proceed (the kernel hangs on a GPU): "
            + "; ".join(f"work-item{'s' if len(ids) > 1 else ''} {_ranges(ids)} wait{'' if len(ids) > 1 else 's'} at "
                        f"{what}" for what, ids in why.items()))


class HopperCompiler:
    """Mixin of ``program.Program``: ``_g_HopperOp`` (a generator statement). ``self.hopper_state``: the
    running group's :class:`_GroupState`."""

    hopper_state: _GroupState

    def _g_HopperOp(self, s: ir.HopperOp):
        where = location(s, self.fn)
        args = [self._expr(a) for a in s.args]
        if s.op in _WARPGROUP:
            def warpgroup_op(st):
                yield WarpgroupStop(where, s, st, tuple(a(st) for a in args))
                return None

            return warpgroup_op
        if s.op == "wg_set":
            return self._wg_set(s, where, args)
        if s.op == "tma_load":
            tma = self._tma_load(s, where)

            def tma_load(st):
                tma(st, *(a(st) for a in args))
                if False:  # a generator statement, like the others
                    yield None
                return None

            return tma_load
        op = s.op
        bars = s.names[0]
        count = self.fn.hopper.mbarriers[bars]

        def mbar(st):
            hs, me = self.hopper_state, st[1]
            vals = [a(st) for a in args]
            i = vals[0]
            if not 0 <= i < count:
                raise OracleError(f"{where}: barrier index {i} is out of bounds of '{bars}' ({count} barriers)")
            key = (bars, i)
            if op == "mbar_init":
                b = hs.bars.get(key)
                if b is not None:
                    raise OracleError(f"{where}: barrier {bars}[{i}] initialized again by work-item {me} (work-item "
                                      f"{b.by} initialized it at {b.where}): one work-item initializes it, once")
                if not 0 < vals[1] < _COUNT_LIMIT:
                    raise OracleError(f"{where}: an arrival count is 1 to {_COUNT_LIMIT - 1}, got {vals[1]}")
                hs.bars[key] = _Bar(vals[1], me, st[2][0], where)
                return None
            b = _barrier(hs, key, me, st[2][0], where)
            if op == "mbar_wait":
                parity = vals[1] & 1
                if b.phase % 2 == parity:
                    yield WaitStop(where, key, parity, b)
                seen = hs.seen[me - hs.first]
                if b.phase > seen.get(key, 0):
                    seen[key] = b.phase
                return None
            if op == "mbar_arrive_tx":
                if not 0 <= vals[1] < _COUNT_LIMIT:
                    raise OracleError(f"{where}: a transaction byte count is 0 to {_COUNT_LIMIT - 1}, got {vals[1]}")
                b.tx += vals[1]
            if b.pending == 0:
                raise OracleError(f"{where}: work-item {me} arrives on barrier {bars}[{i}] when no arrival is pending "
                                  f"({b}): more arrivals in one phase than its count {b.count}")
            b.pending -= 1
            _complete(b)
            return None

        return mbar

    def _e_WgReg(self, e: ir.WgReg):
        where = location(e, self.fn)
        reg = self._register(e.name, where)
        idx = self._expr(e.index)
        return lambda st: reg(st, idx(st), None)

    def _wg_set(self, s: ir.HopperOp, where: str, args):
        reg = self._register(s.names[0], where)
        idx, value = args

        def wg_set(st):
            reg(st, idx(st), value(st))
            if False:  # a generator statement, like the others
                yield None
            return None

        return wg_set

    def _register(self, name: str, where: str):
        """``f(st, index, value)``: reads (value None) or writes register ``index`` of the work-item's part of
        accumulator or row vector ``name`` (ir.hopper.element_row_col: the accumulator's element it holds)."""
        hf = self.fn.hopper
        if name in hf.vecs:
            def vec(st, i, value):
                if not 0 <= i < H.VEC_SLOTS:
                    raise OracleError(f"{where}: register {i} of row vector '{name}' (a work-item holds {H.VEC_SLOTS})")
                regs = self.hopper_state.vecs.setdefault((st[1], name), [0.0] * H.VEC_SLOTS)
                if value is None:
                    return regs[i]
                regs[i] = value
                return None

            return vec
        n = hf.accs[name].n

        def acc_reg(st, i, value):
            hs = self.hopper_state
            k = st[1] - hs.first
            wg = k // H.WARPGROUP
            if not 0 <= i < n // 2:
                raise OracleError(f"{where}: register {i} of accumulator '{name}' (a work-item holds {n // 2})")
            acc = hs.accs.get((wg, name))
            if acc is None:
                raise OracleError(f"{where}: accumulator '{name}' of warpgroup {wg} is read before pk.wg_fill")
            if acc.pending:
                raise OracleError(f"{where}: accumulator '{name}' of warpgroup {wg} is {'read' if value is None else 'written'} "
                                  "while a wgmma into it is pending (pk.wgmma_commit, then pk.wgmma_wait retires it)")
            r, c = H.element_row_col(k % H.WARPGROUP, i)
            if value is None:
                return float(acc.value[r, c])
            if (_REGS, wg, name) in hs.reading:
                raise OracleError(f"{where}: accumulator '{name}' of warpgroup {wg} is written while a wgmma that reads "
                                  "it (its A operand) is pending (pk.wgmma_wait retires it)")
            acc.value[r, c] = value
            return None

        return acc_reg

    def _tma_load(self, s: ir.HopperOp, where: str):
        dst_name, tmap, bars = s.names
        tm = self.fn.hopper.tensor_maps[tmap]
        count = self.fn.hopper.mbarriers[bars]
        kd, ks = self.slot[dst_name], self.slot[tm.buffer]
        shape = [self.slot[d] if isinstance(d, str) else None for d in tm.shape]
        box_r, box_c = tm.box
        zero = 0 if tm.elem.is_int else 0.0

        def tma(st, off, row, col, i):
            hs, me, ep = self.hopper_state, st[1], st[2][0]
            dst, src = st[kd], st[ks]
            why = H.check_tma_dst(off, tm.swizzle, tm.elem)
            if why:
                raise OracleError(f"{where}: {why}")
            if off + box_r * box_c > len(dst.data):
                raise OracleError(f"{where}: the {box_r} x {box_c} box lands at {dst.name}[{off}] .. "
                                  f"[{off + box_r * box_c - 1}], out of bounds ({len(dst.data)} elements)")
            if not 0 <= i < count:
                raise OracleError(f"{where}: barrier index {i} is out of bounds of '{bars}' ({count} barriers)")
            key = (bars, i)
            b = _barrier(hs, key, me, ep, where)
            rows, cols = (st[k] if k is not None else d for k, d in zip(shape, tm.shape))
            landed = Landed(hs, key, b.phase, where)
            marker = (ALWAYS, landed)
            for r in range(box_r):
                gr = row + r
                for c in range(box_c):
                    gc, di = col + c, off + r * box_c + c
                    if (dst.name, di) in hs.reading:
                        raise OracleError(f"{where}: a tensor copy overwrites {dst.name}[{di}] while a wgmma that "
                                          "reads it is pending (pk.wgmma_wait retires it)")
                    w = dst.wr[di]
                    if w is not None and isinstance(w[1], PendingCopy):
                        raise OracleError(pending_message(where, "written by a tensor copy", dst.name, di, w[1]))
                    if 0 <= gr < rows and 0 <= gc < cols:
                        si = gr * cols + gc
                        read_check(src, si, me, ep, where, f"read by a tensor copy of work-item {me}",
                                   f"read by a tensor copy of work-item {me}")
                        dst.data[di] = src.data[si]
                        t = src.taint[si] if src.taint is not None else None
                        sites = src.sites[si] if src.sites is not None else None
                    else:
                        dst.data[di], t, sites = zero, None, None
                    dst.wr[di], dst.rd[di] = marker, None  # the copy engine's write: ordered by the barriers
                    if t is not None or dst.taint is not None:
                        mark(dst, di, t)
                    if sites is not None or dst.sites is not None:
                        mark_sites(dst, di, sites, False)
            b.tx -= tm.box_bytes
            _complete(b)

        return tma


def _barrier(hs: _GroupState, key, me: int, ep: int, where: str) -> _Bar:
    """Barrier ``key`` used by work-item ``me`` in barrier interval ``ep``: initialized, and visible to it."""
    b = hs.bars.get(key)
    if b is None:
        raise OracleError(f"{where}: barrier {key[0]}[{key[1]}] used by work-item {me} before pk.mbarrier_init")
    if b.by != me and b.epoch == ep:
        raise OracleError(f"{where}: barrier {key[0]}[{key[1]}] used by work-item {me} in the barrier interval in "
                          f"which work-item {b.by} initialized it ({b.where}): a pk.barrier() must make the "
                          "initialization visible first")
    return b


def _complete(b: _Bar) -> None:
    if b.pending == 0 and b.tx == 0:
        b.phase += 1
        b.pending = b.count


def _same_op(wg: int, stops: List[WarpgroupStop]) -> None:
    """All 128 work-items of warpgroup ``wg`` (``stops``) reached one warpgroup operation with the same operands."""
    first = stops[0]
    for r in stops[1:]:
        if r.node is not first.node:
            raise OracleError(f"{r.where}: work-items of warpgroup {wg} reached different warpgroup operations "
                              f"(work-item {first.st[1]} at {first.where}, work-item {r.st[1]} here): a warpgroup "
                              "operation in divergent control flow")
        if r.values != first.values:
            raise OracleError(f"{r.where}: the operands of {H.builtin(first.node.op)} differ within warpgroup {wg} "
                              f"({first.values} in work-item {first.st[1]}, {r.values} in work-item {r.st[1]}): "
                              "every work-item of the warpgroup gives the same")


def _warpgroup_op(prog, hs: _GroupState, wg: int, stops: List[WarpgroupStop]) -> None:
    """Do the warpgroup operation all 128 work-items of warpgroup ``wg`` (``stops``) reached."""
    first = stops[0]
    s, where, vals = first.node, first.where, first.values
    op = s.op
    if op.startswith("setmaxnreg"):
        return
    groups = hs.groups.setdefault(wg, [[], []])
    if op == "wgmma_commit":
        groups[1].append(groups[0])
        groups[0] = []
        return
    if op == "wgmma_wait":
        while len(groups[1]) > vals[0]:
            for acc, reads in groups[1].pop(0):
                acc.pending -= 1
                for key in reads:
                    left = hs.reading[key] - 1
                    if left:
                        hs.reading[key] = left
                    else:
                        del hs.reading[key]
        return
    name = s.names[0] if op not in ("wg_store", "wg_row_max", "wg_row_sum") else s.names[1]
    at = prog.fn.hopper.accs[name]
    acc = hs.accs.get((wg, name))
    if op == "wg_fill":
        if acc is not None and acc.pending:
            raise OracleError(f"{where}: pk.wg_fill overwrites accumulator '{name}' of warpgroup {wg} while a wgmma "
                              "into it is pending (pk.wgmma_commit, then pk.wgmma_wait retires it)")
        if (_REGS, wg, name) in hs.reading:
            raise OracleError(f"{where}: pk.wg_fill overwrites accumulator '{name}' of warpgroup {wg} while a wgmma "
                              "that reads it (its A operand) is pending (pk.wgmma_wait retires it)")
        hs.accs[(wg, name)] = _Acc(np.full((H.WG_M, at.n), vals[0], np.float32), False)
        return
    if acc is None:
        raise OracleError(f"{where}: accumulator '{name}' of warpgroup {wg} is read before pk.wg_fill")
    if op in H.WGMMA_OPS:
        _wgmma(prog, hs, stops, wg, s, acc, at, vals, groups)
        return
    if acc.pending:  # wg_store, wg_row_max, wg_row_sum
        raise OracleError(f"{where}: {H.builtin(op)} reads accumulator '{name}' of warpgroup {wg} while a wgmma into "
                          "it is pending (pk.wgmma_commit, then pk.wgmma_wait retires it)")
    if op in ("wg_row_max", "wg_row_sum"):
        ref = H.reference_row_max if op == "wg_row_max" else H.reference_row_sum
        rows = [float(ref(acc.value[r])) for r in range(H.WG_M)]
        for x in stops:
            t = (x.st[1] - hs.first) % H.WARPGROUP
            hs.vecs[(x.st[1], s.names[0])] = [rows[H.slot_row(t, k)] for k in range(H.VEC_SLOTS)]
        return
    _store(prog, stops, where, s.names[0], name, acc, vals)


def _wgmma(prog, hs, stops, wg: int, s: ir.HopperOp, acc: _Acc, at, vals, groups) -> None:
    """Issue ``pk.wgmma`` / ``pk.wgmma_kn``: the result is computed now, retired by a later wgmma_wait."""
    where = stops[0].where
    _, a_name, b_name = s.names
    hf = prog.fn.hopper
    b_elem = prog.fn.arrays[b_name].elem
    if a_name in hf.accs:  # A from an accumulator's registers, rounded to B's element type
        why = H.check_a_registers(vals[0], hf.accs[a_name].n)
        if why:
            raise OracleError(f"{where}: {why}")
        src = hs.accs.get((wg, a_name))
        if src is None or src.pending:
            raise OracleError(f"{where}: the A operand of {H.builtin(s.op)} is accumulator '{a_name}' of warpgroup {wg}, "
                              f"{'read before pk.wg_fill' if src is None else 'while a wgmma into it is pending'}")
        rnd = rounder(b_elem)
        a = (np.array([[rnd(float(x)) for x in row] for row in src.value[:, vals[0]:vals[0] + H.WG_K]], np.float64),
             [(_REGS, wg, a_name)])
    else:
        a = _operand(prog, hs, stops, where, a_name, H.WG_M, "A", vals[0], lambda r, k, o=vals[0]: o + 64 * r + k)
    if s.op == "wgmma_kn":
        off, panel = vals[1], vals[2]
        why = H.check_kn_operand(off, panel, at.n)
        if why:
            raise OracleError(f"{where}: {why}")
        b = _operand(prog, hs, stops, where, b_name, at.n, "B", None,
                     lambda j, k: off + (j // 64) * panel + 64 * k + j % 64)
    else:
        b = _operand(prog, hs, stops, where, b_name, at.n, "B", vals[1], lambda j, k, o=vals[1]: o + 64 * j + k)
    acc.value = H.reference_wgmma(acc.value, a[0], b[0])
    acc.inexact = True
    acc.pending += 1
    reads = a[1] + b[1]
    for key in reads:
        hs.reading[key] = hs.reading.get(key, 0) + 1
    groups[0].append((acc, reads))


def _operand(prog, hs, stops, where, arr: str, rows: int, what: str, off, index):
    """The ``rows`` x 16 operand of shared array ``arr`` whose element (r, k) is ``arr[index(r, k)]`` (values,
    elements read); ``off``: a K-major operand's offset, checked here."""
    if off is not None:
        why = H.check_operand_offset(off, what)
        if why:
            raise OracleError(f"{where}: {why}")
    st0 = stops[0].st
    mem = st0[prog.slot[arr]]
    last = max(index(rows - 1, H.WG_K - 1), index(min(rows, 64) - 1, H.WG_K - 1))
    if last >= len(mem.data):
        raise OracleError(f"{where}: the wgmma {what} operand at {arr}[{index(0, 0)}] reads up to element {last}, out of "
                          f"bounds ({len(mem.data)} elements)")
    known: Dict = {}
    out = np.empty((rows, H.WG_K), np.float64)
    keys = []
    for r in range(rows):
        for k in range(H.WG_K):
            i = index(r, k)
            w = mem.wr[i]
            if w is None or mem.data[i] is None:
                raise UninitializedReadError(f"{where}: the wgmma {what} operand reads {arr}[{i}], which nothing has "
                                             "written (shared memory starts uninitialized)")
            m = w[1]
            if isinstance(m, Landed):
                have = known.get(m.bar)
                if have is None:
                    have = known[m.bar] = min(hs.seen[x.st[1] - hs.first].get(m.bar, 0) for x in stops)
                if have <= m.phase:
                    late = next(x.st[1] for x in stops if hs.seen[x.st[1] - hs.first].get(m.bar, 0) <= m.phase)
                    raise OracleError(m.message(late, where, f"read by wgmma ({what} operand) of warpgroup "
                                                f"{(late - hs.first) // H.WARPGROUP}", arr, i))
            elif isinstance(m, Marker):
                why = m.refuse(st0[1], where, f"read by wgmma ({what} operand)", arr, i)
                if why:
                    raise OracleError(why)
            out[r, k] = mem.data[i]
            keys.append((arr, i))
    return out, keys


def _store(prog, stops, where, buf: str, name: str, acc: _Acc, vals) -> None:
    """``buf[off + i * ld + j] = acc[i][j]``, each element written as the work-item holding it in wgmma's
    register layout (warp w holds rows 16w .. 16w+15; lane l rows l/4 and l/4 + 8 of those, columns
    8c + 2(l%4) + {0, 1})."""
    off, ld = vals
    st0 = stops[0].st
    mem = st0[prog.slot[buf]]
    elem = prog.fn.param(buf).type.elem
    rnd = rounder(f16) if elem == f16 else rounder(f32)
    rows, cols = acc.value.shape
    n = len(mem.data)
    for i in (off, off + (rows - 1) * ld, off + cols - 1, off + (rows - 1) * ld + cols - 1):
        if not 0 <= i < n:
            raise OracleError(f"{where}: pk.wg_store writes {buf}[{i}], out of bounds ({n} elements; offset {off}, "
                              f"ld {ld}, {rows} x {cols})")
    inexact = prog.taint.arr.get(name, NONE) | (MMA_TAGS if acc.inexact else NONE)
    tags = (None, inexact, ()) if inexact else None
    values = acc.value.tolist()
    check = prog._write_check
    for r in range(rows):
        lane_row = 4 * (r % 8)
        warp = 32 * (r // 16)
        base = off + r * ld
        for c in range(cols):
            st = stops[warp + lane_row + (c % 8) // 2].st
            i = base + c
            check(st, mem, i, where, None)
            mem.data[i] = rnd(values[r][c])
            if tags is not None or mem.taint is not None:
                mark(mem, i, tags)
            if mem.sites is not None:
                mark_sites(mem, i, None, False)
