"""Matrix fragments on the CPU (llvm and hexagon: :mod:`.workgroup` kernels).

A fragment belongs to a subgroup (:data:`.subgroup_size.CPU_SUBGROUP_SIZE` consecutive work-items), so
each fragment is an array of ``rows * cols`` elements per subgroup of the group, allocated beside the
per-work-item storage (its length comes from the launch's block size). The work-item loop runs the
items of a subgroup one after the other, so the subgroup's first work-item does the whole operation
when it reaches the statement, with its own operand values (the language makes them the same in the
whole subgroup), and the others skip it: no fission point is needed, because no other work-item's
state is read. What this orders is documented with the language: memory another work-item of the
subgroup wrote is seen by ``frag_load`` only after a ``pk.barrier()`` (as on a GPU).

The arithmetic is :func:`polykern.ir.matrix.reference_mma`'s exactly: f16 inputs widened to f32, f32
inputs rounded to tf32 (``round_tf32``, integer code on the bits), each product (exact) added to the f32 sum in k order, an f16 accumulator rounded once at the end; integer
inputs widened to i32, wrapping sums. So the CPU agrees bit for bit with the oracle.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ...errors import CompileError
from ...ir import nodes as N
from ...ir.types import FragmentType, bf16, f32
from ..llvm_types import I32, I64, mem_type, value_type
from ..llvm_bf16 import bf16_to_f32
from ..llvm_fragments import round_tf32
from .subgroup_size import CPU_SUBGROUP_SIZE

__all__ = ["allocate_fragments", "emit_matrix_op", "cpu_support"]

_SHIFT = CPU_SUBGROUP_SIZE.bit_length() - 1


def _c(v: int) -> ll.Constant:
    return ll.Constant(I64, v)


def allocate_fragments(em, fn: N.Function) -> None:
    """Storage for every fragment of ``fn``: ``em.fragments[name] = (pointer, type)``."""
    em.fragments = {}
    if not fn.fragments:
        return
    ab = em.abuilder
    nsub = ab.lshr(ab.add(em.nitems, _c(CPU_SUBGROUP_SIZE - 1)), _c(_SHIFT), name="nsubgroups")
    for name, ft in sorted(fn.fragments.items()):
        count = ab.mul(nsub, _c(ft.rows * ft.cols))
        em.fragments[name] = (em.alloca(mem_type(ft.elem), count, name=f"frag.{name}", align=16), ft)


def _frag_base(em, name: str):
    """(pointer to this subgroup's first element of fragment ``name``, its type)."""
    if em.item is None:
        raise CompileError("internal error: matrix-fragment operation outside a work-item loop")
    ptr, ft = em.fragments[name]
    b = em.builder
    start = b.mul(b.lshr(em.item, _c(_SHIFT)), _c(ft.rows * ft.cols))
    return b.gep(ptr, [start], inbounds=True, source_etype=mem_type(ft.elem)), ft


def _at(em, base, ft: FragmentType, flat):
    return em.builder.gep(base, [flat], inbounds=True, source_etype=mem_type(ft.elem))


def emit_matrix_op(em, s: N.MatrixOp) -> None:
    """``s`` in the current work-item of ``em`` (a WorkgroupLoopEmitter): done by the subgroup's first."""
    b = em.builder
    first = b.icmp_unsigned("==", b.and_(em.item, _c(CPU_SUBGROUP_SIZE - 1)), _c(0))
    run, done = em.new_block(f"frag.{s.op}"), em.new_block(f"frag.{s.op}.end")
    b.cbranch(first, run, done)
    b.position_at_end(run)
    args = [em.expr(a) for a in s.args]
    base, ft = _frag_base(em, s.frag)
    if s.op in ("fill", "scale"):
        _elementwise(em, s, base, ft, args[0])
    elif s.op == "mma":
        _mma(em, s, base)
    else:
        _memory(em, s, base, ft, args)
    em.builder.branch(done)
    em.builder.position_at_end(done)


def _elementwise(em, s: N.MatrixOp, base, ft: FragmentType, value) -> None:
    def body(e, _latch):
        b = em.builder
        p = _at(em, base, ft, e)
        v = value if s.op == "fill" else b.fmul(b.load(p, typ=mem_type(ft.elem)), value)
        b.store(v, p)

    em.counted_loop(_c(0), _c(ft.rows * ft.cols), f"frag.{s.op}", body)


def _mma(em, s: N.MatrixOp, dbase) -> None:
    (abase, at), (bbase, bt), (cbase, ct) = (_frag_base(em, n) for n in s.srcs)
    acc_t = ct.elem
    wide = value_type(f32) if acc_t.is_float else I32
    ain, bin_, cty = mem_type(at.elem), mem_type(bt.elem), mem_type(acc_t)
    K, N_ = at.k, ct.n

    def widen(v, st):
        b = em.builder
        if st == bf16:  # its bits (llvm_bf16.py): exact in f32
            return bf16_to_f32(b, v)
        if st.is_float:
            return b.fpext(v, wide) if v.type != wide else v
        return b.sext(v, wide) if st.is_signed else b.zext(v, wide)

    def row(i, _):
        def col(j, _):
            b = em.builder
            flat = b.add(b.mul(i, _c(N_)), j)
            c0 = widen(b.load(_at(em, cbase, ct, flat), typ=cty), acc_t)
            acc = em.alloca(wide, name="mma.acc")
            b.store(c0, acc)

            def step(k, _):
                bb = em.builder
                x = widen(bb.load(_at(em, abase, at, bb.add(bb.mul(i, _c(K)), k)), typ=ain), at.elem)
                y = widen(bb.load(_at(em, bbase, bt, bb.add(bb.mul(k, _c(N_)), j)), typ=bin_), bt.elem)
                if at.elem == f32:  # tf32 inputs (ir.matrix.round_tf32)
                    x, y = round_tf32(bb, x), round_tf32(bb, y)
                cur = bb.load(acc, typ=wide)
                bb.store(bb.fadd(cur, bb.fmul(x, y)) if acc_t.is_float else bb.add(cur, bb.mul(x, y)), acc)

            em.counted_loop(_c(0), _c(K), "mma.k", step)
            b = em.builder
            r = b.load(acc, typ=wide)
            if acc_t.is_float and r.type != cty:
                r = b.fptrunc(r, cty)
            b.store(r, _at(em, dbase, ct, b.add(b.mul(i, _c(N_)), j)))

        em.counted_loop(_c(0), _c(N_), "mma.j", col)

    em.counted_loop(_c(0), _c(ct.m), "mma.i", row)


def _memory(em, s: N.MatrixOp, base, ft: FragmentType, args) -> None:
    name = s.base.name
    if name in em.buffers:
        mptr, st = em.buffers[name]
    elif name in em.arrays:
        mptr, st = em.arrays[name].ptr, em.arrays[name].st
    else:
        raise CompileError(f"{name!r} is not a buffer or shared array")
    b = em.builder
    offset, ld = ((b.sext(a, I64) if e.type.is_signed else b.zext(a, I64)) if a.type.width < 64 else a
                  for a, e in zip(args, s.args))
    ty = mem_type(st)

    def row(i, _):
        def col(j, _):
            bb = em.builder
            r, c = (i, j) if s.layout == "row" else (j, i)
            mp = bb.gep(mptr, [bb.add(offset, bb.add(bb.mul(r, ld), c))], inbounds=True, source_etype=ty)
            fp = _at(em, base, ft, bb.add(bb.mul(i, _c(ft.cols)), j))
            if s.op == "load":
                bb.store(bb.load(mp, typ=ty), fp)
            else:
                bb.store(bb.load(fp, typ=ty), mp)

        em.counted_loop(_c(0), _c(ft.cols), f"frag.{s.op}.j", col)

    em.counted_loop(_c(0), _c(ft.rows), f"frag.{s.op}.i", row)


def cpu_support(target, fn: N.Function, s: N.MatrixOp):
    """The ``Capabilities.matrix`` predicate of the CPU kinds (llvm, hexagon): every fragment shape
    and type of the language compiles (ir/matrix.py)."""
    return None
