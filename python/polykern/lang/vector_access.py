"""Translation of ``pk.vload`` / ``pk.vstore`` (docs/language.md "Wide access").

``a, b, c, d = pk.vload(x, k, 4)`` and ``pk.vstore(y, k, (a, b, c, d))`` become groups of scalar
statements marked with :class:`polykern.ir.vector.VecLane` (see that module for the IR contract).
The translator ``tr`` is the frontend's FunctionTranslator.
"""
from __future__ import annotations

import ast
from typing import List

from ..ir import nodes as ir
from ..ir.types import BufferType
from ..ir.vector import VECTOR_WIDTHS, VecLane, element_index, group_alignment
from .typing_rules import coerce, default_type, is_weak

USAGE = {"vload": "a, b, c, d = pk.vload(buf, k, 4)", "vstore": "pk.vstore(buf, k, (a, b, c, d))"}


def _buffer(tr, node, name: str) -> ir.Var:
    base = tr.array_ref(node)
    if base.type.elem.is_bool:
        raise tr.type_error(f"pk.{name}() is not defined for bool elements ('{base.name}')", node)
    return base


def _vector_index(tr, node, n: int, out: List[ir.Stmt]):
    """(name or constant of k, its type); a non-constant k is copied into a fresh temporary."""
    k = tr.index_expr(node)
    out.extend(tr.pending)  # what the index needs first, in order
    tr.pending = []
    if isinstance(k, ir.Const):
        return k.value, k.type
    tmp = tr._fresh("_vk")
    tr._declare_scalar(tmp, k.type, node)
    a = ir.Assign(tmp, k)
    a.loc = tr.loc(node)
    out.append(a)
    return tmp, k.type


def record_alignment(tr, base: ir.Var, n: int) -> None:
    """A group of ``n`` elements of ``base`` starts at a multiple of ``n``: a Buffer must be aligned to
    that (ir/vector.py), a fact of the kernel (lang/body_facts.py)."""
    if isinstance(base.type, BufferType):
        tr.facts.require_alignment(base.name, group_alignment(n, base.type.elem))


def _width(tr, node, name: str) -> int:
    n = tr.const_int(node, f"the width of pk.{name}()")
    if n not in VECTOR_WIDTHS:
        raise tr.type_error(f"pk.{name}() width must be {' or '.join(map(str, VECTOR_WIDTHS))}, got {n}", node)
    return n


def vload(tr, targets: ast.Tuple, call: ast.Call, node) -> List[ir.Stmt]:
    """``t0, .., t{n-1} = pk.vload(buf, k, n)``."""
    if len(call.args) != 3 or call.keywords:
        raise tr.type_error(f"pk.vload() takes (buffer, vector index, width): {USAGE['vload']}", call)
    base = _buffer(tr, call.args[0], "vload")
    n = _width(tr, call.args[2], "vload")
    if len(targets.elts) != n or not all(isinstance(t, ast.Name) for t in targets.elts):
        raise tr.type_error(f"pk.vload(..., {n}) gives {n} values: unpack them into {n} names, "
                            f"e.g. {USAGE['vload']}", targets)
    out: List[ir.Stmt] = []
    k, kt = _vector_index(tr, call.args[1], n, out)
    group = tr.facts.new_vector_group()
    elem = base.type.elem
    lanes = []
    for j in range(n):
        tmp = tr._fresh("_vl")
        tr._declare_scalar(tmp, elem, call)
        load = ir.Load(base, element_index(VecLane(group, n, j, k, kt)))
        load.loc = tr.loc(call)
        s = ir.Assign(tmp, load)
        s.vec = VecLane(group, n, j, k, kt)
        lanes.append(tmp)
        out.append(s)
    for tgt, tmp in zip(targets.elts, lanes):
        v = ir.Var(tmp, elem)
        v.loc = tr.loc(call)
        out.append(tr._assign_name(tgt, v, None, node))
    record_alignment(tr, base, n)
    for s in out:
        s.loc = tr.loc(node)
    return out


def vstore(tr, call: ast.Call, node) -> List[ir.Stmt]:
    """``pk.vstore(buf, k, (v0, .., v{n-1}))``: the values are evaluated first, left to right."""
    if len(call.args) != 3 or call.keywords:
        raise tr.type_error(f"pk.vstore() takes (buffer, vector index, values): {USAGE['vstore']}", call)
    base = _buffer(tr, call.args[0], "vstore")
    if isinstance(base.type, BufferType) and base.type.readonly:
        raise tr.type_error(f"cannot write to readonly Buffer '{base.name}'", call.args[0])
    vals = call.args[2]
    if not isinstance(vals, (ast.Tuple, ast.List)) or len(vals.elts) not in VECTOR_WIDTHS:
        raise tr.type_error(f"pk.vstore() takes its values as a tuple of 2 or 4, e.g. {USAGE['vstore']}", vals)
    n = len(vals.elts)
    elem = base.type.elem
    out: List[ir.Stmt] = []
    k, kt = _vector_index(tr, call.args[1], n, out)
    values: List[ir.Expr] = []
    for v_node in vals.elts:
        v = tr.scalar_expr(v_node)
        out.extend(tr.pending)
        tr.pending = []
        if v.type != elem and not is_weak(v):
            raise tr.type_error(f"cannot store {v.type} into {base.type} '{base.name}'", v_node)
        v = coerce(default_type(v) if not is_weak(v) else v, elem, f"pk.vstore() to '{base.name}'")
        if not isinstance(v, (ir.Var, ir.Const)):
            tmp = tr._fresh("_vs")
            tr._declare_scalar(tmp, elem, v_node)
            a = ir.Assign(tmp, v)
            out.append(a)
            v = ir.Var(tmp, elem)
        values.append(v)
    group = tr.facts.new_vector_group()
    for j, v in enumerate(values):
        lane = VecLane(group, n, j, k, kt)
        s = ir.Store(base, element_index(lane), v)
        s.vec = lane
        out.append(s)
    record_alignment(tr, base, n)
    for s in out:
        if s.loc is None:
            s.loc = tr.loc(node)
    return out
