"""Matrix-fragment helpers every LLVM emitter shares: the GPU emitters' per-lane fragment arrays
(nvptx, rocm) and tf32 rounding with integer code (the CPU, rocm). The CPU's own fragment lowering is
:mod:`polykern.codegen.cpu.matrix`."""
from __future__ import annotations

from llvmlite import ir as ll

from ..ir.matrix import TF32_DROPPED_BITS
from .llvm_types import I32, I64

__all__ = ["lane_fragment", "round_tf32"]


def round_tf32(b: ll.IRBuilder, v):
    """The f32 ``v`` rounded to tf32 (:func:`polykern.ir.matrix.round_tf32`: to nearest on the bits, ties
    away from zero; a NaN stays a NaN), with integer code: what every f32 mma input goes through on the
    CPU and on GPUs without a conversion instruction (rocm)."""
    u = b.bitcast(v, I32)
    low = ll.Constant(I32, ~((1 << TF32_DROPPED_BITS) - 1) & 0xFFFFFFFF)
    nan = b.icmp_unsigned(">", b.and_(u, ll.Constant(I32, 0x7FFFFFFF)), ll.Constant(I32, 0x7F800000))
    quiet = b.and_(b.or_(u, ll.Constant(I32, 0x00400000)), low)
    rounded = b.and_(b.add(u, ll.Constant(I32, 1 << (TF32_DROPPED_BITS - 1))), low)
    return b.bitcast(b.select(nan, quiet, rounded), v.type)


def lane_fragment(em, name: str, count: int, ety: ll.Type):
    """GPU emitters (nvptx, rocm) keep each fragment as a private array of the lane's ``count``
    elements of ``ety`` (constant indices only, so LLVM keeps it in registers): the array of ``name``
    in the current kernel, made on first use."""
    store = em.__dict__.setdefault("_pk_fragments", {})
    key = (id(em.fn), name)
    if key not in store:
        store[key] = em.alloca(ety, ll.Constant(I64, count), name=f"frag.{name}")
    return store[key]
