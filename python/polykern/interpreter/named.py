"""Named barriers in the oracle (``polykern.testing.interp``; docs/language.md 5.3 "Named barriers"; the
rules are ``polykern.ir.hopper``): ``pk.named_barrier(id, count)`` and ``pk.named_arrive(id, count)``.

Arrivals. A warpgroup arrives once all 128 of its work-items are at the operation with the same operands
(``interp_hopper.run_group`` gathers them as for every warpgroup operation) and counts 128 work-items. A
``named_barrier`` warpgroup then waits (:class:`NamedWait`); a ``named_arrive`` one goes on. When the
round's arrivals reach its count the round completes and its waiters go on. Refused: an id outside
1..15, arrivals of one round giving different counts, and a warpgroup arriving twice in one round (a
``named_arrive`` running ahead of the waiters: the hardware would count it towards the wrong round). A
round that never completes leaves its waiters blocked: the scheduler's deadlock error names them.

Ordering. Without named barriers every work-item of a group is in the group's barrier interval (an int
``st[2][0]``, the same for all, advanced by ``pk.barrier()``) and two accesses race when they are in the
same interval. A kernel with named barriers gives each work-item its own :class:`Interval` instead: the
group's barrier epoch, the work-item, its count of intervals so far and what it *knows* of the others
(``known[j]``: work-item j's intervals numbered below it are ordered before this one). A completing round
ends the interval of each of its waiters, who then know all that any participant knew and every
participant's intervals up to the current one; a ``named_arrive`` ends its arrivers' intervals too (what
they did before is released to the round's waiters) and teaches them nothing. ``pk.barrier()`` starts a new
epoch, in which no earlier access races. The race checks compare a recorded access's interval with the
current one by ``==``, which an Interval answers as "not ordered before" (the ``_Always`` marker of
``interp_copies`` answers it the same way): the checks themselves are unchanged. Several readers of one
element (or several same-op atomics) not ordered with each other are recorded together
(:class:`Accesses`, :func:`join`), so that a later write is checked against each of them. What the waiters
have *seen* of transaction barrier phases (``interp_hopper``) is merged the same way: what one participant
had seen, every waiter has.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from ..ir import hopper as H
from ..ir import nodes as ir
from .values import OracleError

__all__ = ["Interval", "Accesses", "NamedBarriers", "NamedWait", "join", "uses_named"]


def uses_named(fn) -> bool:
    """Whether ``fn`` has named barrier operations (then its work-items run in :class:`Interval`s)."""
    return any(isinstance(s, ir.HopperOp) and s.op in H.NAMED_OPS for s in ir.walk_stmts(fn.body))


class Interval:
    """A work-item's barrier interval: ``recorded == current`` is True when the recorded access (made in
    interval ``recorded``) is not ordered before the work-item in interval ``current`` (a race if one of the
    two writes). An interval of the same work-item equals only itself (the checks skip the work-item's own
    accesses; its reader slot is brought up to date)."""

    __slots__ = ("epoch", "owner", "count", "known")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, epoch: int, owner: int, count: int, known: np.ndarray):
        self.epoch, self.owner, self.count, self.known = epoch, owner, count, known

    def __eq__(self, other):
        if other.__class__ is not Interval:
            return NotImplemented
        if self.owner == other.owner:
            return self is other
        return self.epoch == other.epoch and other.known[self.owner] <= self.count

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq


class Accesses:
    """Accesses of several work-items to one element, none ordered before the others (readers, or atomics of
    one commutative op): equal to an interval when any of them made by another work-item is not ordered
    before it."""

    __slots__ = ("members",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, members: List[Interval]):
        self.members = members

    def __eq__(self, other):
        if other.__class__ is not Interval:
            return NotImplemented
        return any(m.owner != other.owner and m == other for m in self.members)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq


def join(prev, current: Interval):
    """The record of an element's accesses after work-item ``current.owner`` adds one to ``prev`` (an
    Interval or Accesses): those of ``prev`` it is not ordered after, and its own."""
    members = prev.members if prev.__class__ is Accesses else [prev]
    keep = [m for m in members if m.owner != current.owner and m == current]
    return Accesses(keep + [current]) if keep else current


class NamedWait:
    """A work-item of a warpgroup waiting at a named barrier for its round to complete."""

    __slots__ = ("where", "node", "round")

    def __init__(self, where: str, node, rnd: "_Round"):
        self.where, self.node, self.round = where, node, rnd

    def describe(self) -> str:
        r = self.round
        return (f"{H.builtin(self.node.op)}({r.bar_id}, {r.count}) at {self.where} (named barrier {r.bar_id}: "
                f"{r.arrived} of {r.count} work-items arrived, warpgroup{'s' if len(r.wgs) > 1 else ''} "
                f"{', '.join(map(str, r.wgs))})")


class _Round:
    """A named barrier's current round: its count, the warpgroups arrived, the waiters (group-local
    indices), what the arrivers that went on released (known intervals, seen phases)."""

    __slots__ = ("bar_id", "count", "arrived", "wgs", "waiters", "known", "seen", "where")

    def __init__(self, bar_id: int, count: int, n: int, where: str):
        self.bar_id, self.count, self.arrived, self.where = bar_id, count, 0, where
        self.wgs: List[int] = []
        self.waiters: List[int] = []
        self.known = np.zeros(n, np.int64)
        self.seen: Dict = {}


def _merge_seen(into: Dict, d: Dict) -> None:
    for k, v in d.items():
        if v > into.get(k, 0):
            into[k] = v


class NamedBarriers:
    """A group's named barriers during a launch: the rounds in progress and each work-item's interval
    (installed in its state's ``st[2]``, which is its own list from now on)."""

    def __init__(self, states, epoch: int, hs):
        self.states = states
        self.n = len(states)
        self.hs = hs  # interp_hopper's _GroupState: .seen, the transaction barrier phases each work-item saw
        self.counts = np.zeros(self.n, np.int64)
        self.rounds: Dict[int, _Round] = {}
        for st in states:
            st[2] = [None]
        self.new_epoch(epoch)

    def new_epoch(self, epoch: int) -> None:
        """After a ``pk.barrier()``: every work-item in a new interval of the new epoch, in which nothing of
        the others is known yet."""
        self.counts += 1
        zero = np.zeros(self.n, np.int64)
        for k, st in enumerate(self.states):
            st[2][0] = Interval(epoch, k, int(self.counts[k]), zero)

    def _next(self, members, known: Optional[np.ndarray]) -> None:
        """Work-items ``members`` start new intervals knowing ``known`` (None: what each knew)."""
        for k in members:
            self.counts[k] += 1
            cur = self.states[k][2]
            cur[0] = Interval(cur[0].epoch, k, int(self.counts[k]), cur[0].known if known is None else known)

    def _learned(self, members, into: np.ndarray) -> np.ndarray:
        """``into`` raised by what ``members`` know and by their intervals up to the current ones."""
        for known in {id(self.states[k][2][0].known): self.states[k][2][0].known for k in members}.values():
            np.maximum(into, known, out=into)
        idx = np.asarray(members)
        into[idx] = np.maximum(into[idx], self.counts[idx] + 1)
        return into

    def arrive(self, wg: int, stop, waits: bool) -> List[int]:
        """Warpgroup ``wg`` (all at ``stop``, a gathered warpgroup stop with values (id, count)) arrives: the
        work-items (group-local) to resume now; the warpgroup's own stay blocked when it waits and the round
        did not complete (the caller marks them with :class:`NamedWait`)."""
        bar_id, count = stop.values
        where = stop.where
        why = H.check_named_id(bar_id)
        if why:
            raise OracleError(f"{where}: {why}")
        rnd = self.rounds.get(bar_id)
        if rnd is None:
            rnd = self.rounds[bar_id] = _Round(bar_id, count, self.n, where)
        elif rnd.count != count:
            raise OracleError(f"{where}: warpgroup {wg} arrives at named barrier {bar_id} with count {count}, but "
                              f"warpgroup {rnd.wgs[0]} arrived in this round with count {rnd.count} ({rnd.where}): "
                              "every arrival of a round gives the same count")
        elif wg in rnd.wgs:
            raise OracleError(f"{where}: warpgroup {wg} arrives at named barrier {bar_id} again before its round "
                              f"completed ({rnd.arrived} of {rnd.count} work-items arrived): on the GPU the second "
                              "arrival would count towards the round the others are waiting for")
        if rnd.arrived + H.WARPGROUP > count:  # whole warpgroups arrive, so only a count outside the rules gets here
            raise OracleError(f"{where}: {H.check_named_count(count, self.n // H.WARPGROUP)}")
        lo = wg * H.WARPGROUP
        members = list(range(lo, lo + H.WARPGROUP))
        rnd.wgs.append(wg)
        rnd.arrived += H.WARPGROUP
        resume: List[int] = []
        if waits:
            rnd.waiters.extend(members)
        else:  # released to the round's waiters; the arrivers go on in new intervals
            self._learned(members, rnd.known)
            for k in members:
                _merge_seen(rnd.seen, self.hs.seen[k])
            self._next(members, None)
            resume = members
        if rnd.arrived == count:
            del self.rounds[bar_id]
            if rnd.waiters:
                known = self._learned(rnd.waiters, rnd.known)
                seen = rnd.seen
                for k in rnd.waiters:
                    _merge_seen(seen, self.hs.seen[k])
                for k in rnd.waiters:
                    self.hs.seen[k] = dict(seen)
                self._next(rnd.waiters, known)
            resume = resume + rnd.waiters
        return resume
