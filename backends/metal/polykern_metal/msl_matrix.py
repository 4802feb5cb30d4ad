"""Matrix fragments in MSL: simdgroup matrices (``simdgroup_half8x8`` / ``simdgroup_float8x8``).

Metal's matrix unit multiplies 8 x 8 tiles, so a fragment of R x C elements is an array of
(R / 8) x (C / 8) simdgroup matrices (a 16 x 16 fragment: 2 x 2). ``frag_load``/``frag_store`` are
``simdgroup_load``/``simdgroup_store`` per tile at the tile's first element, with the leading dimension
as elements per row (a column-major tile is loaded transposed); ``mma`` is one
``simdgroup_multiply_accumulate`` per (output tile, k tile), in k order; ``frag_fill`` is
``make_filled_simdgroup_matrix``; ``frag_scale`` multiplies by the diagonal matrix ``s * I`` (exact: the
other products are zeros). Types: half inputs into half or float accumulators, bfloat inputs into float
accumulators (``simdgroup_bfloat8x8``, MSL 3.1: Apple GPUs of macOS 14 / iOS 17 and newer; a bf16 value is
its bits, a ushort, in this dialect (passes/legalize_f16.py), so loads see the memory as ``bfloat`` and a fill
bit-casts); float inputs are the language's tf32 inputs: Metal multiplies full floats, so each f32 A/B tile
is rounded to tf32 after its load or fill (``ir.matrix.round_tf32`` on the bits of the lane's
``thread_elements()``, the two elements a lane holds of an 8 x 8 tile); no integers. Codegen only here: no MSL compiler runs on Linux (golden tests).
"""
from __future__ import annotations

from typing import Optional

from polykern.ir import nodes as ir
from polykern.ir.matrix import mma_types
from polykern.ir.types import ArrayType, FragmentType

__all__ = ["supported", "emit"]

_TYPE = {"f16": "half", "f32": "float", "bf16": "bfloat"}


def supported(target, fn: ir.Function, s: ir.MatrixOp) -> Optional[str]:
    """``Capabilities.matrix`` of metal: half inputs into half or float accumulators, bfloat inputs into float
    accumulators (the language's table, ir/matrix.py), any language shape."""
    types = [t.elem.name for t in (mma_types(fn, s) if s.op == "mma" else (s.ftype,))]
    bad = [t for t in types if t not in _TYPE]
    if bad:
        return f"Metal's simdgroup matrices hold half, bfloat and float, not {bad[0]}"
    return None


def _name(em, name: str) -> str:
    names = em.__dict__.setdefault("_pk_fragments", {})
    if name not in names:
        ft = em.fn.fragments[name]
        c = f"pk_frag{len(names)}"
        em.temps.append(f"simdgroup_{_TYPE[ft.elem.name]}8x8 {c}[{ft.rows // 8}][{ft.cols // 8}];  // {name}: {ft}")
        names[name] = c
    return names[name]


def _tiles(ft: FragmentType):
    return [(i, j) for i in range(ft.rows // 8) for j in range(ft.cols // 8)]


def emit(em, s: ir.MatrixOp) -> None:
    """``s`` as MSL (``em``: the c_source KernelEmitter of the metal dialect)."""
    ft = s.ftype
    d = _name(em, s.frag)
    t = _TYPE[ft.elem.name]
    if s.op == "fill":
        v = em.expr(s.args[0])
        v = f"as_type<bfloat>({v})" if t == "bfloat" else f"({t})({v})"  # bf16: its ushort bits
        for i, j in _tiles(ft):
            em.line(f"{d}[{i}][{j}] = make_filled_simdgroup_matrix<{t}, 8, 8>({v});")
        _round_tf32(em, ft, d)
    elif s.op == "scale":
        v = em.expr(s.args[0])
        em.line(f"{{ simdgroup_{t}8x8 pk_s = simdgroup_{t}8x8(({t})({v}));")
        for i, j in _tiles(ft):
            em.line(f"  {{ simdgroup_{t}8x8 pk_x = {d}[{i}][{j}]; simdgroup_multiply({d}[{i}][{j}], pk_x, pk_s); }}")
        em.line("}")
    elif s.op == "mma":
        a_t, _, c_t = mma_types(em.fn, s)
        a, b, c = (_name(em, n) for n in s.srcs)
        for i, j in _tiles(c_t):
            for kk in range(a_t.k // 8):
                src = c if kk == 0 else d
                em.line(f"simdgroup_multiply_accumulate({d}[{i}][{j}], {a}[{i}][{kk}], {b}[{kk}][{j}], "
                        f"{src}[{i}][{j}]);")
    else:
        off, ld = (em.expr(x) for x in s.args)
        base = em.names[s.base.name]
        if t == "bfloat":  # the ushort bits seen as bfloat (A/B fragments are only loaded)
            space = "threadgroup" if isinstance(s.base.type, ArrayType) else "device"
            base = f"(({space} const bfloat*){base})"
        fn = "simdgroup_load" if s.op == "load" else "simdgroup_store"
        em.line("{")
        em.line(f"  long pk_o = (long)({off}); ulong pk_ld = (ulong)({ld});")
        for i, j in _tiles(ft):
            r, c = 8 * i, 8 * j
            at = f"pk_o + {r} * (long)pk_ld + {c}" if s.layout == "row" else f"pk_o + {c} * (long)pk_ld + {r}"
            transpose = "false" if s.layout == "row" else "true"
            em.line(f"  {fn}({d}[{i}][{j}], {base} + ({at}), pk_ld, ulong2(0, 0), {transpose});")
        em.line("}")
        if s.op == "load":
            _round_tf32(em, ft, d)


#: f32 bits ``u`` rounded to tf32 (ir.matrix.round_tf32: + 0x1000, low 13 bits cleared; a NaN kept NaN)
_TF32_BITS = "(((pk_u & 0x7FFFFFFFu) > 0x7F800000u ? (pk_u | 0x400000u) : (pk_u + 0x1000u)) & 0xFFFFE000u)"


def _round_tf32(em, ft: FragmentType, d: str) -> None:
    """An f32 A/B fragment's elements rounded to tf32, in place (the lane's two per tile)."""
    if ft.role == "acc" or ft.elem.name != "f32":
        return
    for i, j in _tiles(ft):
        em.line(f"{{ thread auto &pk_e = {d}[{i}][{j}].thread_elements(); for (int pk_q = 0; pk_q < 2; pk_q++) "
                f"{{ uint pk_u = as_type<uint>(pk_e[pk_q]); pk_e[pk_q] = as_type<float>({_TF32_BITS}); }} }}")
