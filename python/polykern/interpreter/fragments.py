"""Matrix fragments in the oracle (docs/language.md "Matrix fragments").

A fragment operation (``ir.MatrixOp``) is done by a whole subgroup, so the interpreter runs it like a
subgroup collective: every work-item of the group stops there (a :class:`FragmentRequest` with its
operands) and, once all have, :func:`resolve_fragments` does the operation once per subgroup, on that
subgroup's matrices (NumPy arrays, per group and subgroup). The operands must be the same in every
work-item of a subgroup; the program has no single meaning otherwise, so the oracle refuses it, as it
refuses a fragment that is read before anything was written to it. Memory is accessed as the
subgroup's first work-item: the race checks treat a fragment store by one subgroup and a plain access
by another work-item in the same barrier interval as a race, as a device would give either order.

``mma`` is :func:`polykern.ir.matrix.reference_mma` (f32 inputs rounded to tf32, products exact,
summed in k order in f32); float
results stored from an mma carry the inexact tag ``("mma", acc)``, so a comparison does not hold a
device to that order (``numerics.mma_error_bound`` is what it may differ by).
"""
from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from ..errors import UninitializedReadError
from ..ir import nodes as ir
from ..ir.matrix import reference_mma
from ..ir.types import ArrayType, bf16
from .copies import read_check
from .memory import mark
from .taint import location
from .values import OracleError

__all__ = ["FragmentRequest", "MatrixCompiler", "resolve_fragments"]


class FragmentRequest:
    """One work-item's arrival at a fragment operation: its state and operand values."""

    __slots__ = ("where", "node", "st", "values")

    def __init__(self, where: str, node: ir.MatrixOp, st, values):
        self.where, self.node, self.st, self.values = where, node, st, values


class MatrixCompiler:
    """Mixin of ``program.Program``: ``_g_MatrixOp`` (a generator statement, like a barrier)."""

    def _g_MatrixOp(self, s: ir.MatrixOp):
        where = location(s, self.fn)
        args = [self._expr(a) for a in s.args]

        def op(st):
            yield FragmentRequest(where, s, st, tuple(a(st) for a in args))
            return None

        return op


# (group's first work-item id, subgroup index, fragment name) -> (matrix, inexact)
Fragments = Dict[Tuple[int, int, str], Tuple[np.ndarray, bool]]


def resolve_fragments(prog, requests: List[FragmentRequest], size: int, frags: Fragments) -> None:
    """Do ``requests``' operation (one per work-item of the group, in linear order) per subgroup."""
    first = requests[0]
    for r in requests:
        if r.node is not first.node:
            raise OracleError(f"{r.where}: work-items of one group reached different matrix-fragment "
                              f"operations ({first.where}): an operation in divergent control flow")
    s = first.node
    for sg, base in enumerate(range(0, len(requests), size)):
        lanes = requests[base:base + size]
        for r in lanes[1:]:
            if r.values != lanes[0].values:
                raise OracleError(f"{r.where}: the operands of this matrix-fragment operation differ between "
                                  f"work-items of one subgroup ({lanes[0].values} and {r.values}): they must "
                                  "be the same in the whole subgroup")
        _run(prog, s, lanes[0], (lanes[0].st[1] - base, sg), frags)


def _read_check(st, mem, i: int, where: str) -> None:
    """A read of ``mem[i]`` by the subgroup (as its first work-item ``st``): a race with a write by another
    work-item in the same barrier interval is refused, as a plain load's is."""
    ep, me = st[2][0], st[1]
    read_check(mem, i, me, ep, where, f"read by frag_load of the subgroup of work-item {me}",
               f"frag_load by the subgroup of work-item {me}")


def _get(frags: Fragments, key, name: str, where: str):
    got = frags.get(key + (name,))
    if got is None:
        raise OracleError(f"{where}: fragment '{name}' is read before it was filled, loaded or computed")
    return got


def _run(prog, s: ir.MatrixOp, r: FragmentRequest, key, frags: Fragments) -> None:
    ft, where = s.ftype, r.where
    st = r.st
    elem = ft.elem
    held = np.dtype(np.float32) if elem == bf16 else elem.numpy  # bf16 fragments: their f32 values
    if s.op == "fill":
        frags[key + (s.frag,)] = (np.full((ft.rows, ft.cols), r.values[0], dtype=held), False)
    elif s.op == "scale":
        m, inexact = _get(frags, key, s.frag, where)
        frags[key + (s.frag,)] = ((m * elem.numpy.type(r.values[0])).astype(elem.numpy), inexact)
    elif s.op == "mma":
        (a, _), (b, _), (c, _) = (_get(frags, key, n, where) for n in s.srcs)
        inputs = prog.fn.fragments[s.srcs[0]].elem  # f32 inputs: rounded to tf32 by reference_mma
        frags[key + (s.frag,)] = (reference_mma(a, b, c, elem, inputs), elem.is_float)
    else:
        mem = st[prog.slot[s.base.name]]
        offset, ld = r.values
        rows, cols = ft.rows, ft.cols
        idx = [[offset + (i * ld + j if s.layout == "row" else j * ld + i) for j in range(cols)] for i in range(rows)]
        n = len(mem.data)
        for row in idx:
            for i in row:
                if not 0 <= i < n:
                    raise OracleError(f"{where}: frag_{s.op} touches {s.base.name}[{i}], out of bounds "
                                      f"({n} elements; offset {offset}, ld {ld}, {rows}x{cols} {s.layout}-major)")
        if s.op == "load":
            vals = []
            for row in idx:
                for i in row:
                    _read_check(st, mem, i, where)  # first: a pending copy's element holds no value yet
                    v = mem.data[i]
                    if v is None and isinstance(s.base.type, ArrayType):
                        raise UninitializedReadError(f"{where}: frag_load reads {s.base.name}[{i}], which no "
                                                     "work-item has written (shared memory starts uninitialized)")
                    vals.append(v)
            frags[key + (s.frag,)] = (np.array(vals, dtype=held).reshape(rows, cols), False)
        else:
            m, inexact = _get(frags, key, s.frag, where)
            tags = frozenset({("mma", elem.name)}) if inexact else None
            for i_row, row in enumerate(idx):
                for j, i in enumerate(row):
                    prog._write_check(st, mem, i, where, None)
                    v = m[i_row, j]
                    mem.data[i] = float(v) if elem.is_float else int(v)
                    if tags is not None or mem.taint is not None:
                        mark(mem, i, (None, tags, ()) if tags else None)
