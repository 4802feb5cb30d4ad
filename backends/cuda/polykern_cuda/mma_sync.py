"""Matrix fragments on NVIDIA GPUs (cuda and nvptx): the warp-level ``mma.sync`` tensor-core
instruction of sm_80+, with each fragment held in the registers of the warp's 32 lanes.

A fragment is tiled into the blocks of ``mma.sync.aligned.m16n8k16.row.col`` (A: 16x16, B: 16x8,
C/D: 16x8), and each lane holds the elements the PTX ISA assigns it ("Matrix Fragments for
mma.m16n8k16"), with ``g = lane >> 2`` (groupID) and ``t = lane & 3`` (threadID_in_group):

- f16 (and bf16: the same layout) A: element i (0..7) at row ``g + 8 * ((i >> 1) & 1)``, column ``2t + (i & 1) + 8 * (i >> 2)``;
  f16 B: element i (0..3) at row ``2t + (i & 1) + 8 * (i >> 1)``, column ``g``;
- s8/u8 A: element i (0..7) at row ``g + 8 * (i >> 2)``, column ``4t + (i & 3)``;
  s8/u8 B: element i (0..3) at row ``4t + i``, column ``g``;
- C/D (f32 or s32): element i (0..3) at row ``g + 8 * (i >> 1)``, column ``2t + (i & 1)``.

f32 inputs use ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`` (blocks A: 16x8, B: 8x8; PTX ISA
"Matrix Fragments for mma.m16n8k8", .tf32), one 32-bit register per element:

- tf32 A: element i (0..3) at row ``g + 8 * (i & 1)``, column ``t + 4 * (i >> 1)``;
  tf32 B: element i (0..1) at row ``t + 4 * i``, column ``g``; C/D as above.

Each f32 input is rounded to tf32 with ``cvt.rna.tf32.f32`` (the language's ``ir.matrix.round_tf32``:
nearest, ties away from zero) when it is loaded or filled (CUDA C keeps the tf32 bits) or when it
enters the instruction (NVPTX).

``frag_load``/``frag_store`` move exactly those elements with plain loads and stores (any address, any
leading dimension, row- or column-major: no alignment rule beyond the element's), so every fragment
of one role has one register layout and ``mma`` never depends on how its operands were loaded; f16
pairs and 8-bit quads are packed into the 32-bit registers the instruction reads (first element in
the low bits). An ``M x N x K`` mma is ``M/16 * N/8`` output blocks, each accumulated over ``K/16``
instructions in k order. An f16 accumulator is kept in f32 registers and rounded to f16 after each
``mma`` (the language's reference: ``ir.matrix.reference_mma``); its loads and stores convert.

The tables here are shared by the CUDA C dialect (``cuda_c.py``: inline PTX) and the NVPTX emitter.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from polykern.ir import nodes as ir
from polykern.ir.matrix import ACCUMULATE, mma_types
from polykern.ir.types import ArrayType, FragmentType

from .divisibility import Divisibility

__all__ = ["supported", "slots", "instructions", "ptx_mma", "register_count", "MIN_ARCH"]

MIN_ARCH = 80
#: (M, N, K) the tiling covers: M a multiple of 16, N of 8, K of 16 (f32 inputs: of 8) within the
#: language's dims.
SHAPES = tuple((m, n, k) for m in (16, 32) for n in (8, 16, 32) for k in (16, 32))
TF32_SHAPES = tuple((m, n, k) for m in (16, 32) for n in (8, 16, 32) for k in (8, 16, 32))
_INPUTS = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "i8": "s8", "u8": "u8"}
_ACC = ACCUMULATE  # mma.sync has every combination of the language's table
#: The PTX conversion every f32 input goes through (ir.matrix.round_tf32).
CVT_TF32 = "cvt.rna.tf32.f32"

# A coordinate: (constant, coefficient of g, coefficient of t).
Coord = Tuple[int, int, int]


def _arch(target) -> int:
    return int("".join(ch for ch in target.attrs["arch"][3:] if ch.isdigit()))


def supported(target, fn: ir.Function, s: ir.MatrixOp) -> Optional[str]:
    """The ``Capabilities.matrix`` predicate of cuda and nvptx (ir/matrix.py)."""
    if _arch(target) < MIN_ARCH:
        return f"mma.sync needs sm_{MIN_ARCH} or newer; the target is {target.attrs['arch']}"
    ft = s.ftype if s.op != "mma" else mma_types(fn, s)[0]
    if ft.role != "acc" and ft.elem.name not in _INPUTS:
        return f"mma.sync takes f16, bf16, f32 (as tf32), i8 or u8 inputs, not {ft.elem}"
    if ft.role != "acc" and _tf32(ft):
        if (ft.m, ft.n, ft.k) not in TF32_SHAPES:
            return ("the mma.sync tf32 tiling covers M in 16, 32; N in 8, 16, 32; K in 8, 16, 32 (shape "
                    f"{ft.shape})")
    elif (ft.m, ft.n, ft.k) not in (TF32_SHAPES if ft.role == "acc" else SHAPES):
        return ("the mma.sync tiling covers M in 16, 32; N in 8, 16, 32; K in 16, 32 (8 for f32 inputs; "
                f"shape {ft.shape})")
    if s.op == "mma":
        a, _, c = mma_types(fn, s)
        if c.elem.name not in _ACC[a.elem.name]:
            return (f"mma.sync takes f16 -> f32/f16, bf16/f32 -> f32 and i8/u8 -> i32, not {a.elem} -> "
                    f"{c.elem}")
        if (a.m, a.n, a.k) not in (TF32_SHAPES if _tf32(a) else SHAPES):
            return f"the mma.sync tiling covers K in 16, 32 for {a.elem} inputs (shape {a.shape})"
    return None


def _tf32(ft: FragmentType) -> bool:
    """An A/B fragment of f32: tf32 inputs (m16n8k8 blocks, one element per register)."""
    return ft.role != "acc" and ft.elem.name == "f32"


def _block(ft: FragmentType, i: int) -> Tuple[Coord, Coord]:
    """(row, column) of element ``i`` of one instruction block of a fragment of ``ft``."""
    byte = ft.elem.bits == 8
    if _tf32(ft):
        if ft.role == "a":
            return (8 * (i & 1), 1, 0), (4 * (i >> 1), 0, 1)
        return (4 * i, 0, 1), (0, 1, 0)
    if ft.role == "a":
        if byte:
            return (8 * (i >> 2), 1, 0), (i & 3, 0, 4)
        return (8 * ((i >> 1) & 1), 1, 0), ((i & 1) + 8 * (i >> 2), 0, 2)
    if ft.role == "b":
        if byte:
            return (i, 0, 4), (0, 1, 0)
        return ((i & 1) + 8 * (i >> 1), 0, 2), (0, 1, 0)
    return (8 * (i >> 1), 1, 0), (i & 1, 0, 2)


def _blocks(ft: FragmentType) -> Tuple[int, int, int, int, int]:
    """(block rows, block cols, rows per block, cols per block, elements per lane per block)."""
    kb = 8 if _tf32(ft) else 16
    if ft.role == "a":
        return ft.m // 16, ft.k // kb, 16, kb, kb // 2
    if ft.role == "b":
        return ft.k // kb, ft.n // 8, kb, 8, kb // 4
    return ft.m // 16, ft.n // 8, 16, 8, 4


def slots(ft: FragmentType) -> List[Tuple[Coord, Coord]]:
    """Every element a lane holds of a fragment of ``ft``, in register order: (row, column)."""
    br, bc, rows, cols, per = _blocks(ft)
    out = []
    for r in range(br):
        for c in range(bc):
            for i in range(per):
                (r0, rg, rt), (c0, cg, ct) = _block(ft, i)
                out.append(((r * rows + r0, rg, rt), (c * cols + c0, cg, ct)))
    return out


def register_count(ft: FragmentType) -> int:
    """32-bit registers per block of ``ft`` (elements packed 2 per f16 register, 4 per byte; one tf32)."""
    per = _blocks(ft)[4]
    return per // (32 // ft.elem.bits) if ft.role != "acc" else per


def instructions(a: FragmentType, c: FragmentType) -> List[Tuple[int, int, int]]:
    """The instructions of ``mma`` in order: (A block, B block, C block) indices; each C block gets
    its k blocks in k order."""
    kb, nb = a.k // _blocks(a)[3], c.n // 8
    out = []
    for mi in range(c.m // 16):
        for ni in range(nb):
            for ki in range(kb):
                out.append((mi * kb + ki, ki * nb + ni, mi * nb + ni))
    return out


def ptx_mma(a: FragmentType) -> str:
    """The instruction (accumulating in place: D and C are the same registers %0-%3) for inputs of
    ``a``'s element type: operands %0-%3 D/C, then A's registers, then B's."""
    if a.elem.bits == 8:
        t = _INPUTS[a.elem.name]
        return (f"mma.sync.aligned.m16n8k16.row.col.s32.{t}.{t}.s32 {{%0, %1, %2, %3}}, {{%4, %5}}, {{%6}}, "
                "{%0, %1, %2, %3};")
    t = _INPUTS[a.elem.name]  # f16 or bf16: the same lane layout and registers; tf32: m16n8k8, as many
    if _tf32(a):
        return (f"mma.sync.aligned.m16n8k8.row.col.f32.{t}.{t}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, "
                "{%8, %9}, {%0, %1, %2, %3};")
    return (f"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, "
            "{%0, %1, %2, %3};")


# ------------------------------------------------------------------------------------------ CUDA C

_C_STORAGE = {"f16": "unsigned short", "bf16": "unsigned short", "f32": "unsigned", "i8": "signed char",
              "u8": "unsigned char"}  # f32 A/B: the tf32 bits
_C_ACC = {"f32": "float", "f16": "float", "i32": "int"}


def _packed(ft: FragmentType) -> bool:
    """f16/bf16 A/B fragments are held as the instruction's 32-bit registers (element pairs, first in the
    low half): half the registers of one 16-bit value each, whichever way they were loaded."""
    return ft.role != "acc" and ft.elem.bits == 16


def _c_name(em, name: str) -> str:
    """The C array of fragment ``name`` (declared at the top of the kernel on first use)."""
    names = em.__dict__.setdefault("_pk_fragments", {})
    if name not in names:
        ft = em.fn.fragments[name]
        c = f"pk_frag{len(names)}"
        if _packed(ft):
            em.temps.append(f"unsigned {c}[{len(slots(ft)) // 2}];  /* {name}: {ft}, 16-bit pairs */")
        else:
            ctype = _C_ACC[ft.elem.name] if ft.role == "acc" else _C_STORAGE[ft.elem.name]
            em.temps.append(f"{ctype} {c}[{len(slots(ft))}];  /* {name}: {ft} */")
        names[name] = c
    return names[name]


def _coord(c: Coord) -> str:
    k, g, t = c
    parts = [p for p in (str(k) if k else "", f"{g} * pk_g" if g else "", f"{t} * pk_t" if t else "") if p]
    return "(" + " + ".join(parts or ["0"]) + ")"


def emit_c(em, s: ir.MatrixOp) -> None:
    """``s`` as CUDA C (``em``: the c_source KernelEmitter of the cuda dialect)."""
    unit = em.unit
    ft = s.ftype
    d = _c_name(em, s.frag)
    n = len(slots(ft))
    if s.op == "fill":
        v = em.expr(s.args[0])
        if _packed(ft):  # a bf16 value already is its bits (passes/legalize_f16.py); f16 is a float
            bits = v if ft.elem.name == "bf16" else f"{unit.helper('pk_f2h')}({v})"
            em.line(f"{{ unsigned pk_h = (unsigned){bits}; "
                    f"for (int pk_i = 0; pk_i < {n // 2}; pk_i++) {d}[pk_i] = pk_h | (pk_h << 16); }}")
            return
        if _tf32(ft):
            em.line(f'{{ unsigned pk_h; asm("{CVT_TF32} %0, %1;" : "=r"(pk_h) : "f"({v})); '
                    f"for (int pk_i = 0; pk_i < {n}; pk_i++) {d}[pk_i] = pk_h; }}")
            return
        em.line(f"for (int pk_i = 0; pk_i < {n}; pk_i++) {d}[pk_i] = {v};")
        return
    if s.op == "scale":
        em.line(f"for (int pk_i = 0; pk_i < {n}; pk_i++) {d}[pk_i] = {d}[pk_i] * {em.expr(s.args[0])};")
        if ft.elem.name == "f16":
            em.line(f"for (int pk_i = 0; pk_i < {n}; pk_i++) {d}[pk_i] = {unit.helper('pk_f16')}({d}[pk_i]);")
        return
    if s.op == "mma":
        _emit_c_mma(em, s, d)
        return
    off, ld = (em.expr(a) for a in s.args)
    base = em.names[s.base.name]
    em.line("{")
    em.depth += 1
    em.line(f"unsigned pk_ln = {unit.helper('pk_sg_local_id')}(); int pk_g = (int)(pk_ln >> 2), "
            "pk_t = (int)(pk_ln & 3u);")
    em.line(f"long long pk_o = (long long)({off}), pk_ld = (long long)({ld});")
    fast = ldmatrix_groups(ft, s.layout) if s.op == "load" and _ldmatrix_aligned(em, s) else None
    if fast is not None:
        _emit_c_ldmatrix(em, ft, s.layout, base, d, fast)
    else:
        for line in _element_lines(unit, ft, s.op, s.layout, d, base + "[pk_o + {}]"):
            em.line(line)
    em.depth -= 1
    em.line("}")


def _element_lines(unit, ft: FragmentType, op: str, layout: str, d: str, at: str) -> List[str]:
    """A fragment's element-wise load or store in C (``pk_g``, ``pk_t``, ``pk_ld`` in scope);
    ``at``: the memory access with ``{}`` for the element's offset."""
    out = []
    f16_acc = ft.role == "acc" and ft.elem.name == "f16"
    for j, (r, c) in enumerate(slots(ft)):
        if layout == "col":
            r, c = c, r
        el = at.format(f"{_coord(r)} * pk_ld + {_coord(c)}")
        if _tf32(ft):  # a load, rounded to tf32
            out.append(f'asm("{CVT_TF32} %0, %1;" : "=r"({d}[{j}]) : "f"({el}));')
        elif _packed(ft):  # a load
            out.append(f"{d}[{j // 2}] {'=' if j % 2 == 0 else '|='} (unsigned){el}{' << 16' if j % 2 else ''};")
        elif op == "load":
            out.append(f"{d}[{j}] = {unit.helper('pk_h2f') + '(' + el + ')' if f16_acc else el};")
        else:
            out.append(f"{el} = {unit.helper('pk_f2h') + '(' + d + f'[{j}])' if f16_acc else f'{d}[{j}]'};")
    return out


# ------------------------------------------------------------------------------ ldmatrix (shared f16)
#
# ``ldmatrix.sync.aligned.m8n8.x{2,4}[.trans].shared.b16`` loads 2 or 4 8x8 matrices of 16-bit
# elements; lane l gives the address of row ``l & 7`` of matrix ``l >> 3``, and register q of lane
# (g, t) receives elements (g, 2t), (g, 2t+1) of matrix q (with ``.trans``: (2t, g), (2t+1, g)).
# Each 32-bit register of an f16 A or B fragment holds such a pair: an 8x8 sub-matrix whose pair runs
# along k (A: row g, columns 2t, 2t+1; B: rows 2t, 2t+1, column g). So when k is contiguous in memory
# (A row-major, B column-major) the plain form loads it, otherwise ``.trans``. The rows must be 16-byte
# aligned: used where the offset and leading dimension are provably multiples of 8 elements
# (divisibility.py) in a shared array (declared 16-byte aligned), else the element-wise loads. (A
# run-time check with both paths costs gemm_f16 ~40 registers, halving its occupancy.)


def _ldmatrix_aligned(em, s: ir.MatrixOp) -> bool:
    if not (isinstance(s.base.type, ArrayType) and s.base.type.scope == "shared"):
        return False
    div = em.__dict__.get("_pk_divisibility")
    if div is None or div[0] is not em.fn:
        div = em.__dict__["_pk_divisibility"] = (em.fn, Divisibility(em.fn))
    return all(div[1].multiple_of(a, 8) for a in s.args)


def ldmatrix_groups(ft: FragmentType, layout: str) -> Optional[List[List[Tuple[int, int]]]]:
    """The ldmatrix instructions loading a fragment of ``ft`` from memory of ``layout``: per
    instruction, per register, the sub-matrix origin (k, other) in fragment coordinates; None where
    ldmatrix does not apply (8-bit elements, accumulators)."""
    if ft.role == "acc" or ft.elem.bits != 16:
        return None
    origins = []
    sl = slots(ft)
    for r in range(0, len(sl), 2):
        (r0, _, _), (c0, _, _) = sl[r]
        origins.append((c0, r0) if ft.role == "a" else (r0, c0))
    return [origins[i:i + 4] for i in range(0, len(origins), 4)]


def ldmatrix_trans(ft: FragmentType, layout: str) -> bool:
    """Whether the fragment's pairs (along k) are strided in memory of ``layout`` (``.trans``)."""
    k_contiguous = (ft.role == "a") == (layout != "col")
    return not k_contiguous


def _emit_c_ldmatrix(em, ft: FragmentType, layout: str, base: str, d: str, groups) -> None:
    trans = ldmatrix_trans(ft, layout)
    em.line("unsigned pk_sa;")
    em.line('asm("{ .reg .u64 pk_p; cvta.to.shared.u64 pk_p, %1; cvt.u32.u64 %0, pk_p; }" : "=r"(pk_sa) : '
            f'"l"({base} + pk_o));')
    em.line("unsigned pk_q = pk_ln >> 3, pk_j = pk_ln & 7u;")
    reg = 0
    for group in groups:
        n = len(group)
        # lane l's matrix: l >> 3 (x2: lanes 16-31 repeat 0-15's addresses, which ldmatrix ignores)
        k0 = " : ".join(f"pk_q % {n}u == {q}u ? {kq}u" for q, (kq, _) in enumerate(group[:-1])) or ""
        m0 = " : ".join(f"pk_q % {n}u == {q}u ? {mq}u" for q, (_, mq) in enumerate(group[:-1])) or ""
        k_expr = f"({k0} : {group[-1][0]}u)" if k0 else f"{group[-1][0]}u"
        m_expr = f"({m0} : {group[-1][1]}u)" if m0 else f"{group[-1][1]}u"
        if trans:
            row, col = f"({k_expr} + pk_j)", m_expr
        else:
            row, col = f"({m_expr} + pk_j)", k_expr
        em.line(f"{{ unsigned pk_a = pk_sa + 2u * ({row} * (unsigned)pk_ld + {col});")
        outs = ", ".join(f'"=r"({d}[{reg + q}])' for q in range(n))
        regs = ", ".join(f"%{q}" for q in range(n))
        em.line(f'  asm volatile("ldmatrix.sync.aligned.m8n8.x{n}{".trans" if trans else ""}.shared.b16 '
                f'{{{regs}}}, [%{n}];" : {outs} : "r"(pk_a));')
        em.line("}")
        reg += n


def _emit_c_mma(em, s: ir.MatrixOp, d: str) -> None:
    a_t, b_t, c_t = mma_types(em.fn, s)
    a, b, c = (_c_name(em, n) for n in s.srcs)
    if c != d:
        em.line(f"for (int pk_i = 0; pk_i < {len(slots(c_t))}; pk_i++) {d}[pk_i] = {c}[pk_i];")
    byte = a_t.elem.bits == 8
    per_a, per_b = _blocks(a_t)[4], _blocks(b_t)[4]
    out = '"+r"' if c_t.elem.is_int else '"+f"'
    asm = ptx_mma(a_t)

    def regs(arr: str, block: int, per: int) -> List[str]:
        k = 4 if byte else 1 if _tf32(a_t) else 2
        base = block * per
        out_regs = []
        for r in range(per // k):
            if _tf32(a_t):
                out_regs.append(f'"r"({arr}[{base + r}])')
                continue
            if not byte:
                out_regs.append(f'"r"({arr}[{base // 2 + r}])')
                continue
            parts = [f"((unsigned)(unsigned char){arr}[{base + 4 * r + q}] << {8 * q})" for q in range(4)]
            out_regs.append('"r"(' + " | ".join(parts) + ")")
        return out_regs

    for ab, bb, cb in instructions(a_t, c_t):
        outs = ", ".join(f"{out}({d}[{4 * cb + q}])" for q in range(4))
        ins = ", ".join(regs(a, ab, per_a) + regs(b, bb, per_b))
        em.line(f'asm volatile("{asm}" : {outs} : {ins});')
    if c_t.elem.name == "f16":
        f16 = em.unit.helper("pk_f16")
        em.line(f"for (int pk_i = 0; pk_i < {len(slots(c_t))}; pk_i++) {d}[pk_i] = {f16}({d}[pk_i]);")
