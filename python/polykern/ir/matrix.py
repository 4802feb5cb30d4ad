"""Matrix fragments (docs/language.md "Matrix fragments"): the language's table of shapes and element
types, the reference multiply-add every backend is compared with, and the refusal a backend gives for a
combination its hardware lacks.

A fragment is one matrix held by a whole subgroup (``ir.MatrixOp``); how its elements are spread over
the lanes is the backend's business (WMMA/cooperative-matrix layouts are opaque), so the language offers
only whole-fragment operations: fill, load, store, mma, scale.
"""
from __future__ import annotations

from typing import Iterable, Optional, Tuple

import numpy as np

from ..errors import KernelTypeError
from . import nodes as ir
from .types import FragmentType, ScalarType

#: Fragment dimensions the language accepts (a backend may support fewer: see ``refuse_unsupported``).
DIMS = (8, 16, 32)
#: Input element type -> accumulator types it may be multiplied into.
#: f32 inputs are multiplied at tf32 precision (``round_tf32``; docs/language.md "Matrix fragments").
ACCUMULATE = {"f16": ("f32", "f16"), "bf16": ("f32",), "f32": ("f32",), "i8": ("i32",), "u8": ("i32",)}
#: Accumulator types: what fragments of role "acc" may hold.
ACC_TYPES = ("f32", "f16", "i32")


def check_type(ft: FragmentType) -> Optional[str]:
    """Why ``ft`` is not a fragment type of the language, or None."""
    for d, what in ((ft.m, "M"), (ft.n, "N"), (ft.k, "K")):
        if d not in DIMS:
            return f"{what} = {d} is not a fragment dimension (the language has {', '.join(map(str, DIMS))})"
    name = ft.elem.name
    if ft.role == "acc" and name not in ACC_TYPES:
        return f"an accumulator holds {', '.join(ACC_TYPES)}, not {name}"
    if ft.role != "acc" and name not in ACCUMULATE:
        return f"an A or B fragment holds {', '.join(ACCUMULATE)}, not {name}"
    return None


def check_mma(a: FragmentType, b: FragmentType, c: FragmentType) -> Optional[str]:
    """Why ``mma(a, b, c)`` is not well typed, or None."""
    if (a.role, b.role, c.role) != ("a", "b", "acc"):
        return (f"mma(a, b, c) takes a frag_a, a frag_b and a frag_acc, got {a.role}, {b.role} and "
                f"{c.role} fragments")
    if not (a.m, a.n, a.k) == (b.m, b.n, b.k) == (c.m, c.n, c.k):
        return f"the fragments' shapes differ: {a.shape}, {b.shape} and {c.shape} (M x N x K)"
    if a.elem != b.elem:
        return f"A holds {a.elem} but B holds {b.elem}"
    if c.elem.name not in ACCUMULATE.get(a.elem.name, ()):
        return (f"{a.elem} inputs accumulate into {' or '.join(ACCUMULATE[a.elem.name])}, not "
                f"{c.elem}")
    return None


def mma_types(fn: ir.Function, s: ir.MatrixOp) -> Tuple[FragmentType, FragmentType, FragmentType]:
    """The A, B and C fragment types of an ``mma`` statement."""
    return tuple(fn.fragments[n] for n in s.srcs)  # type: ignore[return-value]


def combination(fn: ir.Function, s: ir.MatrixOp) -> str:
    """What a backend must support for ``s``: 'M x N x K inputs -> acc' (for messages and tables)."""
    if s.op == "mma":
        a, _, c = mma_types(fn, s)
        return f"{a.shape} {a.elem} -> {c.elem}"
    return f"{s.ftype.shape} {s.ftype.elem} ({s.ftype.role})"


def check_target(fn: ir.Function, kind: str, target, support=None, no_engine: str = "") -> None:
    """Refuse ``fn`` for ``target`` (of ``kind``) if it has a MatrixOp the kind cannot compile.
    ``support`` is the kind's declared predicate (``Capabilities.matrix``, polykern/capabilities.py:
    ``support(target, fn, stmt)`` gives None for a MatrixOp it can compile, else why not); where it is
    None, every one is refused, with ``no_engine`` (``Capabilities.no_matrix``) saying why."""
    if not fn.fragments:
        return
    for s in ir.walk_stmts(fn.body):
        if not isinstance(s, ir.MatrixOp):
            continue
        what = f"pk.{_builtin(s)} ({combination(fn, s)})"
        if support is None:
            why = no_engine
            raise KernelTypeError(f"{kind} has no matrix fragments (tensor cores, cooperative matrices): "
                                  f"{what} cannot be compiled for it" + (f"; {why}" if why else ""), s.loc)
        why = support(target, fn, s)
        if why:
            raise KernelTypeError(f"{kind} does not support {what}: {why}", s.loc)


def _builtin(s: ir.MatrixOp) -> str:
    return "mma" if s.op == "mma" else f"frag_{s.op}"


# ---------------------------------------------------------------------------------------------- reference

#: tf32: f32's sign and 8 exponent bits, 10 of its 23 fraction bits; the low 13 bits of an f32 are
#: rounded off (``round_tf32``).
TF32_DROPPED_BITS = 13


def round_tf32(x: np.ndarray) -> np.ndarray:
    """``x`` (f32) rounded to tf32, as every f32 input of an mma is: to nearest on the f32 bits ``u``,
    ties away from zero (``(u + 0x1000) & ~0x1FFF``, PTX's ``cvt.rna.tf32.f32``); nothing is flushed
    (subnormals round like any value), a value past the largest finite tf32 becomes ±inf, ±inf stay;
    a NaN stays a NaN (quiet bit set, low 13 bits cleared)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    low = np.uint32((1 << TF32_DROPPED_BITS) - 1)
    nan = (u & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    nan &= (u & np.uint32(0x007FFFFF)) != 0
    rounded = (u + np.uint32(1 << (TF32_DROPPED_BITS - 1))) & ~low
    return np.where(nan, (u | np.uint32(0x00400000)) & ~low, rounded).astype(np.uint32).view(np.float32)


def reference_mma(a: np.ndarray, b: np.ndarray, c: np.ndarray, acc: ScalarType,
                  inputs: Optional[ScalarType] = None) -> np.ndarray:
    """``a @ b + c`` as the language defines it (and the oracle and the CPU backends compute it): for
    float inputs (bf16 ones given as their f32 values; f32 ones, ``inputs`` f32, rounded to tf32 first
    by ``round_tf32``) every product is exact (f16/bf16/tf32 products fit f32), the sum starts at ``c``
    and adds the products in k order, each add rounded to f32; an f16 accumulator is rounded to f16 once
    at the end. Integer inputs: exact products, sums wrap modulo 2**32. Devices may sum in another order
    or with other internal rounding: ``numerics.mma_error_bound`` is the difference they may show."""
    if inputs is not None and inputs.name == "f32":
        a, b = round_tf32(a), round_tf32(b)
    if acc.is_int:
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        d = c.astype(np.int64) + a64 @ b64
        return ((d + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)
    out = c.astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for k in range(a.shape[1]):
        out = out + np.outer(a64[:, k], b64[k, :]).astype(np.float32)
    return out.astype(acc.numpy)


def fragment_names(fn: ir.Function) -> Iterable[str]:
    return sorted(fn.fragments)
