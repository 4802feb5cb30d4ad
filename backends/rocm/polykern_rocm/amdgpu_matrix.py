"""Matrix fragments on AMD CDNA GPUs (gfx908, gfx90a, gfx942, gfx950): the wave64 MFMA instruction
``v_mfma_f32_16x16x16f16`` through ``llvm.amdgcn.mfma.f32.16x16x16f16``, and for bf16 inputs (gfx90a and
newer) ``v_mfma_f32_16x16x16bf16_1k`` through ``llvm.amdgcn.mfma.f32.16x16x16bf16.1k`` (the same lane
layout; its operands are the bf16 bits as ``<4 x i16>``). f32 inputs (the language's tf32 inputs) use
``v_mfma_f32_16x16x4f32`` (``llvm.amdgcn.mfma.f32.16x16x4f32``: one A and one B element per lane, A row
``l % 16`` column ``l // 16``, B row ``l // 16`` column ``l % 16``): the 16 x 16 block's 4 elements per lane
of the layout below are 4 such instructions, the i-th taking element i (k ``4 * (l // 16) + i``), each
input first rounded to tf32 with integer code (``llvm_fragments.round_tf32``; MFMA multiplies full f32).

A fragment is tiled into 16 x 16 blocks; in each block, lane l (0..63) of the wavefront holds 4
elements, i = 0..3 (AMD's matrix instruction layout for 16x16x16 f16):

- A: row ``l % 16``, column (k) ``4 * (l // 16) + i``;
- B: row (k) ``4 * (l // 16) + i``, column ``l % 16``;
- C/D (f32): row ``4 * (l // 16) + i``, column ``l % 16``.

``frag_load``/``frag_store`` move those elements with plain loads and stores (any leading dimension,
row- or column-major); ``mma`` is one MFMA per (output block, k block), in k order. f16 or bf16 inputs
(or f32) into f32 accumulators only; M, N and K multiples of 16. Validated offline: the object links with ld.lld
(tests/test_rocm_matrix.py); no ROCm runtime here.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir as ll

from polykern.codegen.llvm_types import I32, I64, mem_type
from polykern.codegen.llvm_fragments import lane_fragment, round_tf32
from polykern.ir import nodes as N
from polykern.ir.matrix import mma_types
from polykern.ir.types import FragmentType

__all__ = ["AMDGPUMatrix", "supported", "MFMA_MCPUS"]

MFMA_MCPUS = ("gfx908", "gfx90a", "gfx942", "gfx950")
#: bf16 inputs: the "_1k" instruction (gfx908 has only the half-rate 16x16x8bf16)
BF16_MCPUS = ("gfx90a", "gfx942", "gfx950")
_HALF, _F32, _I16 = ll.HalfType(), ll.FloatType(), ll.IntType(16)
_MFMA = {"f16": ("llvm.amdgcn.mfma.f32.16x16x16f16", _HALF), "bf16": ("llvm.amdgcn.mfma.f32.16x16x16bf16.1k", _I16),
         "f32": ("llvm.amdgcn.mfma.f32.16x16x4f32", _F32)}


def supported(target, fn: N.Function, s: N.MatrixOp) -> Optional[str]:
    """``Capabilities.matrix`` of the rocm target kind."""
    mcpu = target.attrs["mcpu"]
    if mcpu not in MFMA_MCPUS:
        return f"MFMA matrix instructions exist on {', '.join(MFMA_MCPUS)}, not {mcpu}"
    types = mma_types(fn, s) if s.op == "mma" else (s.ftype,)
    ft = types[0]
    if any(d % 16 for d in (ft.m, ft.n, ft.k)):
        return f"the MFMA tiling needs M, N and K multiples of 16 (shape {ft.shape})"
    for t in types:
        if t.role == "acc" and t.elem.name != "f32" or t.role != "acc" and t.elem.name not in _MFMA:
            return f"MFMA fragments here are f16, bf16 or f32 (tf32) inputs into f32 accumulators, not {t}"
        if t.elem.name == "bf16" and mcpu not in BF16_MCPUS:
            return f"bf16 MFMA (16x16x16bf16_1k) exists on {', '.join(BF16_MCPUS)}, not {mcpu}"
    return None


def _blocks(ft: FragmentType):
    rows, cols = ft.rows // 16, ft.cols // 16
    return [(r, c) for r in range(rows) for c in range(cols)]


def _coords(ft: FragmentType, block, i, lane_lo, lane_hi, b):
    """(row, col) i64 values of element ``i`` of ``block`` for the lane (lane % 16, lane // 16)."""
    r0, c0 = 16 * block[0], 16 * block[1]
    k = b.add(b.mul(lane_hi, ll.Constant(I64, 4)), ll.Constant(I64, i))
    if ft.role == "a":
        return b.add(lane_lo, ll.Constant(I64, r0)), b.add(k, ll.Constant(I64, c0))
    return b.add(k, ll.Constant(I64, r0)), b.add(lane_lo, ll.Constant(I64, c0))


class AMDGPUMatrix:
    """Mixin of AMDGPUEmitter: ``stmt_MatrixOp``."""

    def _fragment(self, name: str):
        ft = self.fn.fragments[name]
        return lane_fragment(self, name, 4 * len(_blocks(ft)), mem_type(ft.elem)), ft

    def _elem(self, ptr, ft: FragmentType, j: int):
        return self.builder.gep(ptr, [ll.Constant(I64, j)], inbounds=True, source_etype=mem_type(ft.elem))

    def stmt_MatrixOp(self, s: N.MatrixOp) -> None:
        b = self.builder
        ptr, ft = self._fragment(s.frag)
        n = 4 * len(_blocks(ft))
        ety = mem_type(ft.elem)
        if s.op in ("fill", "scale"):
            v = self.expr(s.args[0])
            for j in range(n):
                p = self._elem(ptr, ft, j)
                b.store(v if s.op == "fill" else b.fmul(b.load(p, typ=ety), v), p)
        elif s.op == "mma":
            self._mfma(s, ptr, ft)
        else:
            self._memory(s, ptr, ft)

    def _memory(self, s: N.MatrixOp, ptr, ft: FragmentType) -> None:
        b = self.builder
        name = s.base.name
        mptr, st = self.buffers[name] if name in self.buffers else (self.arrays[name].ptr, self.arrays[name].st)
        mty = mem_type(st)
        off, ld = (self.index64(a) for a in s.args)
        lane = b.zext(b.and_(self._sg_tid(), ll.Constant(I32, self.WAVE - 1)), I64)
        lo, hi = b.and_(lane, ll.Constant(I64, 15)), b.lshr(lane, ll.Constant(I64, 4))
        for bi, block in enumerate(_blocks(ft)):
            for i in range(4):
                r, c = _coords(ft, block, i, lo, hi, b)
                if s.layout == "col":
                    r, c = c, r
                mp = b.gep(mptr, [b.add(off, b.add(b.mul(r, ld), c))], inbounds=True, source_etype=mty)
                fp = self._elem(ptr, ft, 4 * bi + i)
                if s.op == "load":
                    b.store(b.load(mp, typ=mty), fp)
                else:
                    b.store(b.load(fp, typ=mty), mp)

    def _vector(self, ptr, ft, block_index, ety):
        b = self.builder
        vec = ll.Constant(ll.VectorType(ety, 4), ll.Undefined)
        for i in range(4):
            vec = b.insert_element(vec, b.load(self._elem(ptr, ft, 4 * block_index + i), typ=ety), ll.Constant(I32, i))
        return vec

    def _mfma(self, s: N.MatrixOp, dptr, dt: FragmentType) -> None:
        b = self.builder
        a_t, b_t, c_t = mma_types(self.fn, s)
        (aptr, _), (bptr, _), (cptr, _) = (self._fragment(x) for x in s.srcs)
        if cptr is not dptr:
            for j in range(4 * len(_blocks(c_t))):
                b.store(b.load(self._elem(cptr, c_t, j), typ=_F32), self._elem(dptr, dt, j))
        kb, nb = a_t.k // 16, c_t.n // 16
        zero = ll.Constant(I32, 0)
        intrinsic, in_ty = _MFMA[a_t.elem.name]
        for mi in range(c_t.m // 16):
            for ni in range(nb):
                cb = mi * nb + ni
                acc = self._vector(dptr, dt, cb, _F32)
                for ki in range(kb):
                    if a_t.elem.name == "f32":  # 4 x 16x16x4 on tf32-rounded elements (module docstring)
                        for i in range(4):
                            av = round_tf32(b, b.load(self._elem(aptr, a_t, 4 * (mi * kb + ki) + i), typ=_F32))
                            bv = round_tf32(b, b.load(self._elem(bptr, b_t, 4 * (ki * nb + ni) + i), typ=_F32))
                            acc = self.call_intrinsic(intrinsic, ll.VectorType(_F32, 4), [av, bv, acc, zero, zero, zero])
                        continue
                    av = self._vector(aptr, a_t, mi * kb + ki, in_ty)
                    bv = self._vector(bptr, b_t, ki * nb + ni, in_ty)
                    acc = self.call_intrinsic(intrinsic, ll.VectorType(_F32, 4), [av, bv, acc, zero, zero, zero])
                for i in range(4):
                    b.store(b.extract_element(acc, ll.Constant(I32, i)), self._elem(dptr, dt, 4 * cb + i))
