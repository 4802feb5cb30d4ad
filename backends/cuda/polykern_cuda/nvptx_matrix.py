"""Matrix fragments for the ``nvptx`` target: the same mma.sync scheme as the CUDA C path
(``mma_sync.py``: lane layout, tiling, instruction, and ``ldmatrix`` for f16 A/B loads from shared
memory whose offset and leading dimension are provably multiples of 8 elements), in LLVM IR. A
fragment is a private array of the lane's elements (constant indices only, so LLVM keeps it in
registers); ``mma`` packs them into 32-bit registers (f32 ones rounded to tf32 there) and calls the instruction through inline PTX."""
from __future__ import annotations

from llvmlite import ir as ll

from polykern.codegen.llvm_types import I32, I64, mem_type, value_type
from polykern.codegen.llvm_fragments import lane_fragment
from polykern.ir import nodes as N
from polykern.ir.matrix import mma_types
from polykern.ir.types import FragmentType, f32

from .mma_sync import (CVT_TF32, _blocks, _ldmatrix_aligned, _tf32, instructions, ldmatrix_groups, ldmatrix_trans,
                       ptx_mma, slots)

_F32 = value_type(f32)


def _elem_type(ft: FragmentType) -> ll.Type:
    """Register type of one element: accumulators of f16 are kept in f32 (mma_sync.py)."""
    if ft.role == "acc" and ft.elem.is_float:
        return _F32
    return mem_type(ft.elem)


class NVPTXMatrix:
    """Mixin of NVPTXEmitter: ``stmt_MatrixOp``."""

    def _fragment(self, name: str):
        ft = self.fn.fragments[name]
        return lane_fragment(self, name, len(slots(ft)), _elem_type(ft)), ft

    def _slot(self, ptr, ft: FragmentType, j: int):
        return self.builder.gep(ptr, [ll.Constant(I64, j)], inbounds=True, source_etype=_elem_type(ft))

    def stmt_MatrixOp(self, s: N.MatrixOp) -> None:
        b = self.builder
        ptr, ft = self._fragment(s.frag)
        ety = _elem_type(ft)
        n = len(slots(ft))
        if s.op in ("fill", "scale"):
            v = self.expr(s.args[0])
            if v.type != ety:
                v = b.fpext(v, ety)
            for j in range(n):
                p = self._slot(ptr, ft, j)
                x = v if s.op == "fill" else b.fmul(b.load(p, typ=ety), v)
                if s.op == "scale" and ft.elem.name == "f16":
                    x = b.fpext(b.fptrunc(x, mem_type(ft.elem)), ety)
                b.store(x, p)
            return
        if s.op == "mma":
            self._mma(s, ptr, ft)
            return
        self._memory(s, ptr, ft)

    def _memory(self, s: N.MatrixOp, ptr, ft: FragmentType) -> None:
        b = self.builder
        name = s.base.name
        if name in self.buffers:
            mptr, st = self.buffers[name]
        else:
            mptr, st = self.arrays[name].ptr, self.arrays[name].st
        mty, ety = mem_type(st), _elem_type(ft)
        off, ld = (self.index64(a) for a in s.args)
        lane = b.zext(b.and_(self._sg_tid(), ll.Constant(I32, 31)), I64)
        groups = ldmatrix_groups(ft, s.layout) if s.op == "load" else None
        if groups is not None and _ldmatrix_aligned(self, s):
            self._ldmatrix(ptr, ft, s.layout, mptr, mty, off, ld, lane, groups)
            return
        g, t = b.lshr(lane, ll.Constant(I64, 2)), b.and_(lane, ll.Constant(I64, 3))

        def coord(c):
            k, cg, ct = c
            v = ll.Constant(I64, k)
            if cg:
                v = b.add(v, b.mul(g, ll.Constant(I64, cg)))
            if ct:
                v = b.add(v, b.mul(t, ll.Constant(I64, ct)))
            return v

        for j, (r, c) in enumerate(slots(ft)):
            if s.layout == "col":
                r, c = c, r
            idx = b.add(off, b.add(b.mul(coord(r), ld), coord(c)))
            mp = b.gep(mptr, [idx], inbounds=True, source_etype=mty)
            fp = self._slot(ptr, ft, j)
            if s.op == "load":
                v = b.load(mp, typ=mty)
                b.store(b.fpext(v, ety) if v.type != ety else v, fp)
            else:
                v = b.load(fp, typ=ety)
                b.store(b.fptrunc(v, mty) if v.type != mty else v, mp)

    def _ldmatrix(self, ptr, ft: FragmentType, layout: str, mptr, mty, off, ld, lane, groups) -> None:
        """An f16 A/B fragment from shared memory with ``ldmatrix`` (mma_sync.py "ldmatrix"): lane l
        gives the address of row ``l & 7`` of sub-matrix ``(l >> 3) % n`` of each group of n; register
        q's pair (low half first) becomes the fragment's elements 2q, 2q + 1."""
        b = self.builder
        trans = ldmatrix_trans(ft, layout)
        q, j = b.lshr(lane, ll.Constant(I64, 3)), b.and_(lane, ll.Constant(I64, 7))
        i16, half = ll.IntType(16), _elem_type(ft)
        reg = 0
        for group in groups:
            n = len(group)
            which = b.urem(q, ll.Constant(I64, n))
            k, m = ll.Constant(I64, group[-1][0]), ll.Constant(I64, group[-1][1])
            for idx in range(n - 1):  # the lane's sub-matrix origin (k, other), by which
                hit = b.icmp_unsigned("==", which, ll.Constant(I64, idx))
                k = b.select(hit, ll.Constant(I64, group[idx][0]), k)
                m = b.select(hit, ll.Constant(I64, group[idx][1]), m)
            row, col = (b.add(k, j), m) if trans else (b.add(m, j), k)
            addr = b.gep(mptr, [b.add(off, b.add(b.mul(row, ld), col))], inbounds=True, source_etype=mty)
            text = (f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16 "
                    f"{{{', '.join(f'${x}' for x in range(n))}}}, [${n}];")
            fnty = ll.FunctionType(ll.LiteralStructType([I32] * n), [I64])
            res = b.asm(fnty, text, ",".join(["=r"] * n + ["l"]), [b.ptrtoint(addr, I64)], True)
            for x in range(n):
                word = b.extract_value(res, x)
                lo = b.bitcast(b.trunc(word, i16), half)
                hi = b.bitcast(b.trunc(b.lshr(word, ll.Constant(I32, 16)), i16), half)
                b.store(lo, self._slot(ptr, ft, 2 * (reg + x)))
                b.store(hi, self._slot(ptr, ft, 2 * (reg + x) + 1))
            reg += n

    def _mma(self, s: N.MatrixOp, dptr, dt: FragmentType) -> None:
        b = self.builder
        a_t, b_t, c_t = mma_types(self.fn, s)
        (aptr, _), (bptr, _), (cptr, _) = (self._fragment(x) for x in s.srcs)
        acc = _elem_type(c_t)
        if cptr is not dptr:
            for j in range(len(slots(c_t))):
                b.store(b.load(self._slot(cptr, c_t, j), typ=acc), self._slot(dptr, dt, j))
        byte = a_t.elem.bits == 8
        k = 4 if byte else 1 if _tf32(a_t) else 2
        per_a, per_b = _blocks(a_t)[4], _blocks(b_t)[4]
        in_ty = mem_type(a_t.elem)
        tf32 = ll.FunctionType(I32, [in_ty])

        def regs(p, ft, block, per):
            out = []
            for r in range(per // k):
                if _tf32(ft):  # f32 -> tf32 bits as it enters the instruction (ir.matrix.round_tf32)
                    v = b.load(self._slot(p, ft, block * per + r), typ=in_ty)
                    out.append(b.asm(tf32, f"{CVT_TF32} $0, $1;", "=r,f", [v], False))
                    continue
                word = ll.Constant(I32, 0)
                for q in range(k):
                    v = b.load(self._slot(p, ft, block * per + r * k + q), typ=in_ty)
                    bits = b.zext(v if byte else b.bitcast(v, ll.IntType(16)), I32)
                    word = b.or_(word, b.shl(bits, ll.Constant(I32, (8 if byte else 16) * q)))
                out.append(word)
            return out

        text = ptx_mma(a_t).replace("%", "$")
        cons = "f" if c_t.elem.is_float else "r"
        for ab, bb, cb in instructions(a_t, c_t):
            ins = regs(aptr, a_t, ab, per_a) + regs(bptr, b_t, bb, per_b)
            cs = [self._slot(dptr, dt, 4 * cb + q) for q in range(4)]
            cvals = [b.load(p, typ=acc) for p in cs]
            fnty = ll.FunctionType(ll.LiteralStructType([acc] * 4), [I32] * len(ins) + [acc] * 4)
            constraint = ",".join([f"={cons}"] * 4 + ["r"] * len(ins) + ["0", "1", "2", "3"])
            res = b.asm(fnty, text, constraint, ins + cvals, True)
            for q, p in enumerate(cs):
                b.store(b.extract_value(res, q), p)
        if c_t.elem.name == "f16":
            for j in range(len(slots(c_t))):
                p = self._slot(dptr, dt, j)
                b.store(b.fpext(b.fptrunc(b.load(p, typ=acc), mem_type(c_t.elem)), acc), p)
