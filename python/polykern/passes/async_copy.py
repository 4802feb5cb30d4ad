"""Asynchronous copies as plain copies (docs/language.md "Asynchronous copies").

Every target without native asynchronous copies (all but cuda and nvptx on sm_80+, which declare
``Capabilities.async_copy``, polykern/capabilities.py) compiles ``pk.copy_async`` as the copy itself, done at once by the issuing
work-item, and ``pk.copy_commit``/``pk.copy_wait`` as nothing: a copy that is complete when it is issued
meets every promise of the language (the destination is ready by the wait; a kernel may not look at it
earlier). The copy becomes ``pk.vload``/``pk.vstore``-style groups (``ir.vector``) of at most 4
lanes, so backends with vector memory operations fuse the loads (and the stores where they fuse
those); checked mode (``bounds_check``) also builds from this form.
"""
from __future__ import annotations

from itertools import count
from typing import List

from ..ir import nodes as ir
from ..ir.vector import VecLane, element_index, lane_of

__all__ = ["lower_async_copies", "copy_lowering"]

def lower_async_copies(fn: ir.Function) -> ir.Function:
    """``fn`` with every CopyAsync replaced by its plain copy and CopyCommit/CopyWait removed."""
    if not ir.uses_async_copies(fn):
        return fn
    copy_lowering(fn).run()
    return fn


def copy_lowering(fn: ir.Function) -> "_Lowering":
    """The lowering of ``fn``'s copies: ``.copy(s)`` gives the plain copy of one CopyAsync ``s`` (checked
    mode, passes/bounds_check.py, guards each copy before its statements replace it)."""
    groups = [lane_of(s).group for s in ir.walk_stmts(fn.body) if lane_of(s) is not None]
    return _Lowering(fn, max(groups, default=-1) + 1)


class _Lowering:
    def __init__(self, fn: ir.Function, first_group: int):
        self.fn = fn
        self.groups = count(first_group)
        self.names = count()

    def run(self) -> None:
        self.fn.body = self.block(self.fn.body)

    def block(self, stmts: List[ir.Stmt]) -> List[ir.Stmt]:
        out: List[ir.Stmt] = []
        for s in stmts:
            if isinstance(s, ir.If):
                s.then, s.orelse = self.block(s.then), self.block(s.orelse)
            elif isinstance(s, (ir.For, ir.While)):
                s.body = self.block(s.body)
            if isinstance(s, ir.CopyAsync):
                out.extend(self.copy(s))
            elif not isinstance(s, (ir.CopyCommit, ir.CopyWait)):
                out.append(s)
        return out

    def fresh(self, t, loc) -> str:
        taken = self.fn.locals.keys() | self.fn.arrays.keys() | {p.name for p in self.fn.params}
        while True:
            name = f"_cp{next(self.names)}"
            if name not in taken:
                self.fn.locals[name] = t
                return name

    def located(self, s: ir.Stmt, loc) -> ir.Stmt:
        s.loc = loc
        return s

    def chunk_indices(self, k: ir.Expr, chunks: int, out: List[ir.Stmt], loc):
        """The vector index of each chunk of a copy at group index ``k``: ``k * chunks + c`` (a
        constant, or a temporary assigned here once)."""
        t = k.type
        if isinstance(k, ir.Const):
            return [k.value * chunks + c for c in range(chunks)]
        base = self.fresh(t, loc)
        out.append(self.located(ir.Assign(base, k), loc))
        if chunks == 1:
            return [base]
        names = []
        for c in range(chunks):
            name = self.fresh(t, loc)
            e = ir.BinOp("add", ir.BinOp("mul", ir.Var(base, t), ir.Const(chunks, t)), ir.Const(c, t))
            out.append(self.located(ir.Assign(name, e), loc))
            names.append(name)
        return names

    def copy(self, s: ir.CopyAsync) -> List[ir.Stmt]:
        loc, elem, n = s.loc, s.dst.type.elem, s.count
        width = min(n, 4)  # the widest pk.vload group
        chunks = n // width
        t = s.dst_k.type
        out: List[ir.Stmt] = []
        dks = self.chunk_indices(s.dst_k, chunks, out, loc)
        sks = self.chunk_indices(s.src_k, chunks, out, loc)
        for dk, sk in zip(dks, sks):
            load_group, store_group = next(self.groups), next(self.groups)
            values = []
            for j in range(width):
                lane = VecLane(load_group, width, j, sk, t)
                tmp = self.fresh(elem, loc)
                load = ir.Load(ir.Var(s.src.name, s.src.type), element_index(lane))
                load.loc = loc
                a = self.located(ir.Assign(tmp, load), loc)
                if width > 1:
                    a.vec = lane
                out.append(a)
                values.append(tmp)
            for j, tmp in enumerate(values):
                lane = VecLane(store_group, width, j, dk, t)
                st = self.located(ir.Store(ir.Var(s.dst.name, s.dst.type), element_index(lane),
                                           ir.Var(tmp, elem)), loc)
                if width > 1:
                    st.vec = lane
                out.append(st)
        return out
