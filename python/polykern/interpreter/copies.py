"""Asynchronous copies in the oracle (``polykern.interpreter``; docs/language.md "Asynchronous
copies").

``pk.copy_async`` reads its source elements when it is issued (a read like a load: a race with
another work-item's write in the same barrier interval is refused) and writes the destination when a
``pk.copy_wait`` of the issuing work-item retires its group: then the elements count as written by
that work-item in the current barrier interval, so another work-item may read them only after the
next ``pk.barrier()``, as after a plain store. Between issue and retirement the copy is *pending* and
the oracle refuses what a real asynchronous copy leaves undefined:

- any read or write of a destination element, by any work-item (even after a barrier: a barrier does
  not wait for copies);
- a write to a source element (the copy may read it at any time until then).

A destination element being pending is recorded in the element's last-writer slot (``Mem.wr``) as
``(ALWAYS, PendingCopy)``: that marker is "a write by another work-item in every barrier interval",
so every existing race check refuses any access to it without a check of its own, and names the copy
(``pending_message``). Pending source elements are in ``Mem.pending`` (element -> [copies, the first
PendingCopy]), which only the write check reads. Copies still pending when the kernel ends vanish
with the shared memory they were copying into.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from ..errors import DataRaceError
from ..ir import nodes as ir
from .memory import mark, mark_sites
from .named import join
from .taint import location
from .values import OracleError


class _Always:
    """Equal to every barrier epoch."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False


ALWAYS = _Always()


class Marker:
    """A last writer that is not a work-item (``(ALWAYS, marker)`` in ``Mem.wr``): every access to the
    element asks it; ``refuse`` gives the message refusing the access, or None to allow it."""

    __slots__ = ()

    def refuse(self, me: int, where: str, what: str, name: str, i: int) -> Optional[str]:
        raise NotImplementedError


class PendingCopy(Marker):
    """Who issued a pending copy, and where: every access to its destination is refused."""

    __slots__ = ("issuer", "where")

    def __init__(self, issuer: int, where: str):
        self.issuer, self.where = issuer, where

    def refuse(self, me: int, where: str, what: str, name: str, i: int) -> Optional[str]:
        return pending_message(where, what, name, i, self)


def pending_message(where: str, what: str, name: str, i: int, p: PendingCopy, source: bool = False) -> str:
    """The oracle's refusal of ``what`` (e.g. 'read by work-item 3') on element ``i`` of ``name``
    while the copy ``p`` is pending."""
    if source:
        return (f"{where}: {name}[{i}] {what} while an asynchronous copy from it is pending (pk.copy_async "
                f"by work-item {p.issuer} at {p.where}); the copy may read the element until the issuing "
                "work-item's pk.copy_wait retires it")
    return (f"{where}: {name}[{i}] {what} while an asynchronous copy into it is pending (pk.copy_async by "
            f"work-item {p.issuer} at {p.where}): the data is there for the issuing work-item after its "
            "pk.copy_wait retires the copy's group, for the others after that and a pk.barrier()")


def read_check(mem, i: int, me: int, ep, where: str, what: str, reader: str) -> None:
    """Work-item ``me`` reads ``mem[i]`` in barrier interval ``ep``: refused if another work-item wrote it in
    that interval (``reader``: who reads, for the message) or its Marker refuses (``what``: e.g. 'read by
    work-item 3'); recorded for the write checks."""
    w = mem.wr[i]
    if w is not None and w[0] == ep and w[1] != me:
        if isinstance(w[1], Marker):
            why = w[1].refuse(me, where, what, mem.name, i)
            if why:
                raise DataRaceError(why)
        else:
            raise DataRaceError(f"{where}: data race on {mem.name}[{i}]: {reader} after a write by another work-item "
                                "in the same barrier interval (a barrier must separate them)")
    r = mem.rd[i]
    if r is None or r[0] != ep or r[1] == me:
        mem.rd[i] = (ep, me)
    else:  # several readers (with named barriers: each of them, interpreter/named.py)
        mem.rd[i] = (ep if ep.__class__ is int else join(r[0], ep), -2)


class _Copy:
    __slots__ = ("dst", "di", "src", "si", "values", "taint", "sites", "mark")

    def __init__(self, dst, di, src, si, values, taint, sites, mark):
        self.dst, self.di, self.src, self.si = dst, di, src, si
        self.values, self.taint, self.sites, self.mark = values, taint, sites, mark


class CopyCompiler:
    """Mixin of ``program.Program``: the CopyAsync, CopyCommit and CopyWait statements. ``self.copies``
    (reset for every launch) holds per work-item id [its copies not yet committed, its committed
    groups, oldest first]."""

    copies: Dict[int, List[list]]

    def _copy_state(self, me: int) -> List[list]:
        state = self.copies.get(me)
        if state is None:
            state = self.copies[me] = [[], []]
        return state

    def _s_CopyAsync(self, s: ir.CopyAsync):
        dk_, dst_idx, dbad = self._index(s.dst, s.dst_k)
        sk_, src_idx, sbad = self._index(s.src, s.src_k)
        n, where = s.count, location(s, self.fn)
        check = self._write_check
        state = self._copy_state

        def copy_async(st):
            dst, src = st[dk_], st[sk_]
            di, si = n * dst_idx(st), n * src_idx(st)
            for i in (di, di + n - 1):
                if not 0 <= i < len(dst.data):
                    dbad(i, len(dst.data))
            for i in (si, si + n - 1):
                if not 0 <= i < len(src.data):
                    sbad(i, len(src.data))
            ep, me = st[2][0], st[1]
            p = PendingCopy(me, where)
            for i in range(si, si + n):  # read now, as a load is
                read_check(src, i, me, ep, where, f"read by work-item {me}", f"read by pk.copy_async of work-item {me}")
                if src.pending is None:
                    src.pending = {}
                got = src.pending.get(i)
                if got is None:
                    src.pending[i] = [1, p]
                else:
                    got[0] += 1
            for i in range(di, di + n):
                check(st, dst, i, where, None)  # a race with what others did in this interval
                dst.wr[i] = (ALWAYS, p)
            values = src.data[si:si + n]
            taint = src.taint[si:si + n] if src.taint is not None else None
            sites = src.sites[si:si + n] if src.sites is not None else None
            state(me)[0].append(_Copy(dst, di, src, si, values, taint, sites, p))

        return copy_async

    def _s_CopyCommit(self, s: ir.CopyCommit):
        state = self._copy_state

        def copy_commit(st):
            mine = state(st[1])
            mine[1].append(mine[0])
            mine[0] = []

        return copy_commit

    def _s_CopyWait(self, s: ir.CopyWait):
        state, keep = self._copy_state, s.pending

        def copy_wait(st):
            groups = state(st[1])[1]
            ep, me = st[2][0], st[1]
            while len(groups) > keep:
                for c in groups.pop(0):
                    _retire(c, ep, me)

        return copy_wait


def _retire(c: _Copy, ep: int, me: int) -> None:
    """The copy ``c`` lands: its destination elements are written by ``me`` in interval ``ep``."""
    dst, src = c.dst, c.src
    for j, v in enumerate(c.values):
        i = c.di + j
        dst.data[i] = v
        dst.wr[i] = (ep, me)
        if c.taint is not None or dst.taint is not None:
            mark(dst, i, c.taint[j] if c.taint is not None else None)
        if c.sites is not None or dst.sites is not None:
            mark_sites(dst, i, c.sites[j] if c.sites is not None else None, False)
        got = src.pending[c.si + j]
        got[0] -= 1
        if not got[0]:
            del src.pending[c.si + j]
