"""Subgroups on the CPU (llvm backend): a subgroup is a fixed slice of the work-item loop.

The work-items of a group are numbered linearly (``local_id(0)`` fastest, then 1, then 2; the order
in which :mod:`.workgroup` runs them) and cut into subgroups of
:data:`.subgroup_size.CPU_SUBGROUP_SIZE` consecutive work-items; the last subgroup of a group whose size
is not a multiple is partial.

A collective (``t = pk.subgroup_add(v)``) is a communication point among the slice, so it is given
to barrier fission (:mod:`polykern.passes.barrier_fission`) as one: :func:`lower_collectives` rewrites ::

    t = subgroup_add(v)          _sgv0 = v                  (each work-item's operand, kept per
                           -->   barrier()                   work-item: "pinned")
                                 t = subgroup_add(_sgv0)     (reads the operands of its slice)

The ``barrier()`` splits the region there, so every work-item of the group that reaches it has stored
its operand before any reads its slice's. This is exact under the rule every collective follows (it is
reached by all work-items of its subgroup or none: passes/uniformity.py): inside control flow that
differs between subgroups, barrier fission runs the construct per work-item (``GIf``/``GLoop`` that are
not ``uniform``), the work-items of the subgroups that take it run its regions and the others are
parked, so every lane of each slice that is read has stored its operand. The cost is the barrier's: the
operands live in per-work-item storage and the work-item loop is split in two at each collective.
The reading side (:func:`emit_subgroup`) folds the slice in lane order (a fixed order: sums are
reproducible run to run), unrolled and branch-free, so each work-item does ``CPU_SUBGROUP_SIZE`` steps
per reduction.
"""
from __future__ import annotations

from typing import List, Set, Tuple

from llvmlite import ir as ll

from ...errors import CompileError
from ...ir import nodes as N
from ...passes.clone import clone_function
from .subgroup_size import CPU_SUBGROUP_SIZE

__all__ = ["lower_collectives", "emit_subgroup"]

_I64 = ll.IntType(64)
_I32 = ll.IntType(32)


def lower_collectives(fn: N.Function) -> Tuple[N.Function, Set[str]]:
    """``fn`` with every collective split as the module docstring shows (a copy; ``fn`` itself if it
    has none), and the names of the operand locals that must be kept per work-item."""
    if not any(N.subgroup_collective(s) for s in N.walk_stmts(fn.body)):
        return fn, set()
    out = clone_function(fn)
    pinned: Set[str] = set()

    def rewrite(stmts: List[N.Stmt]) -> List[N.Stmt]:
        res: List[N.Stmt] = []
        for s in stmts:
            sg = N.subgroup_collective(s)
            if sg is not None:
                args = []
                for a in sg.args:
                    name = f"_sgv{len(pinned)}"
                    while name in out.locals or name in out.arrays:
                        name = "_" + name
                    out.locals[name] = a.type
                    pinned.add(name)
                    res.append(_located(N.Assign(name, a), s))
                    args.append(N.Var(name, a.type))
                res.append(_located(N.Barrier(), s))
                new = N.Subgroup(sg.op, args)
                new.loc = sg.loc
                res.append(_located(N.Assign(s.name, new), s))
                continue
            if isinstance(s, N.If):
                s.then, s.orelse = rewrite(s.then), rewrite(s.orelse)
            elif isinstance(s, (N.For, N.While)):
                s.body = rewrite(s.body)
            res.append(s)
        return res

    out.body = rewrite(out.body)
    return out, pinned


def _located(s: N.Stmt, like: N.Stmt) -> N.Stmt:
    s.loc = like.loc
    return s


def emit_subgroup(em, e: N.Subgroup) -> ll.Value:
    """The value of ``e`` in the current work-item of ``em`` (a WorkgroupLoopEmitter)."""
    b = em.builder
    if e.op == "size":  # uniform, so barrier fission may compute it before the work-item loops
        return ll.Constant(_I32, CPU_SUBGROUP_SIZE)
    if em.item is None:
        raise CompileError("internal error: subgroup op outside a work-item loop")
    item = em.item
    if e.op == "local_id":
        return b.trunc(b.and_(item, _c(CPU_SUBGROUP_SIZE - 1)), _I32)
    if e.op == "id":
        return b.trunc(b.lshr(item, _c(CPU_SUBGROUP_SIZE.bit_length() - 1)), _I32)
    slots = []
    for a in e.args:
        slot = em.slots.get(a.name) if isinstance(a, N.Var) else None
        if slot is None or not slot.per_item:
            raise CompileError(f"internal error: operand of subgroup_{e.op} is not kept per work-item")
        slots.append(slot)
    vslot = slots[0]
    base = b.and_(item, _c(~(CPU_SUBGROUP_SIZE - 1)))
    top = b.add(base, _c(CPU_SUBGROUP_SIZE))
    end = b.select(b.icmp_unsigned("<", top, em.nitems), top, em.nitems)

    def value_at(index):
        return b.load(b.gep(vslot.ptr, [index], inbounds=True, source_etype=vslot.ty), typ=vslot.ty)

    if e.op == "broadcast_first":
        return value_at(base)
    if e.op in ("shuffle", "shuffle_xor"):
        lane = b.zext(b.and_(slots[1].load(em), ll.Constant(_I32, CPU_SUBGROUP_SIZE - 1)), _I64)
        src = b.add(base, lane) if e.op == "shuffle" else b.xor(item, lane)
        # A lane past the end of a partial subgroup: unspecified (docs/language.md); here the own value.
        return value_at(b.select(b.icmp_unsigned("<", src, end), src, item))
    st = e.args[0].type
    # Unrolled, branch-free: lane j's operand (clamped into the slice, so always a valid load) joins
    # where lane j exists; lane order, so float sums are the same run to run.
    last = b.sub(end, _c(1))
    acc = value_at(base)
    for j in range(1, CPU_SUBGROUP_SIZE):
        lane = b.add(base, _c(j))
        x = value_at(b.select(b.icmp_unsigned("<", lane, end), lane, last))
        if e.op == "any":
            both = b.or_(acc, x)
        elif e.op == "all":
            both = b.and_(acc, x)
        elif e.op == "add":
            both = b.fadd(acc, x) if st.is_float else b.add(acc, x)
        else:
            both = em.math_call(e.op, st, [acc, x])
        acc = b.select(b.icmp_unsigned("<", lane, end), both, acc)
    return acc


def _c(v: int) -> ll.Constant:
    return ll.Constant(_I64, v)

