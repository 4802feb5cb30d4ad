"""Translation of the matrix-fragment builtins (docs/language.md "Matrix fragments").

``a = pk.frag_a(f16, 16, 16, 16)`` declares a fragment (no statement: fragments are declared per
kernel, like arrays); ``c = pk.mma(a, b, c)``, ``pk.frag_fill(c, 0.0)``, ``pk.frag_load(a, x, off, ld)``,
``pk.frag_store(y, off, ld, c)`` and ``pk.frag_scale(c, s)`` become ``ir.MatrixOp`` statements. The
translator ``tr`` is the frontend's FunctionTranslator.
"""
from __future__ import annotations

import ast
from typing import List

from ..ir import nodes as ir
from ..ir.matrix import check_mma, check_type
from ..ir.types import ArrayType, BufferType, FragmentType, ScalarType
from .typing_rules import coerce, default_type, is_weak

DECLARE = {"frag_a": "a", "frag_b": "b", "frag_acc": "acc"}
USAGE = {
    "frag_a": "a = pk.frag_a(f16, 16, 16, 16)  (element type, M, N, K)",
    "frag_b": "b = pk.frag_b(f16, 16, 16, 16)  (element type, M, N, K)",
    "frag_acc": "c = pk.frag_acc(f32, 16, 16, 16)  (element type, M, N, K)",
    "mma": "c = pk.mma(a, b, c)",
    "frag_fill": "pk.frag_fill(c, 0.0)",
    "frag_load": "pk.frag_load(a, buf, offset, ld) or pk.frag_load(a, buf, offset, ld, \"col\")",
    "frag_store": "pk.frag_store(buf, offset, ld, c) or pk.frag_store(buf, offset, ld, c, \"col\")",
    "frag_scale": "pk.frag_scale(c, 0.5)",
}
STATEMENTS = ("frag_fill", "frag_load", "frag_store", "frag_scale")


def _fragment(tr, node) -> str:
    """The name of the fragment ``node`` names."""
    if isinstance(node, ast.Name) and isinstance(tr.vars.get(node.id), FragmentType):
        return node.id
    raise tr.type_error(f"'{ast.unparse(node)}' is not a matrix fragment (declare one with "
                        f"{USAGE['frag_acc']})", node)


def _op(tr, node, op: str, frag: str, **kw) -> ir.MatrixOp:
    s = ir.MatrixOp(op, frag, tr.vars[frag], **kw)
    s.loc = tr.loc(node)
    return s


def _flush(tr, out: List[ir.Stmt]) -> None:
    out.extend(tr.pending)
    tr.pending = []


def declare(tr, target: ast.Name, call: ast.Call, name: str) -> List[ir.Stmt]:
    """``x = pk.frag_<role>(T, M, N, K)``."""
    if len(call.args) != 4 or call.keywords:
        raise tr.type_error(f"pk.{name}() takes (element type, M, N, K): {USAGE[name]}", call)
    try:
        elem = tr.static_value(call.args[0])
    except KeyError:
        elem = None
    if not isinstance(elem, ScalarType):
        raise tr.type_error(f"the first argument of pk.{name}() must be a scalar type: {USAGE[name]}",
                            call.args[0])
    m, n, k = (tr.const_int(a, f"{d} of pk.{name}()") for a, d in zip(call.args[1:], "MNK"))
    ft = FragmentType(DECLARE[name], elem, m, n, k)
    why = check_type(ft)
    if why:
        raise tr.type_error(f"pk.{name}({elem}, {m}, {n}, {k}): {why}", call)
    var = target.id
    old = tr.vars.get(var)
    if old is not None and old != ft:
        raise tr.type_error(f"'{var}' is already {old}; a fragment needs a name of its own", target)
    if var in tr.params:
        raise tr.type_error(f"cannot assign to kernel parameter '{var}'", target)
    tr.vars[var] = ft
    tr.fn.fragments[var] = ft
    return []


def mma(tr, target: ast.Name, call: ast.Call) -> List[ir.Stmt]:
    """``d = pk.mma(a, b, c)``: d (declared, or new with c's type) = a @ b + c."""
    if len(call.args) != 3 or call.keywords:
        raise tr.type_error(f"pk.mma() takes three fragments: {USAGE['mma']}", call)
    srcs = [_fragment(tr, a) for a in call.args]
    a, b, c = (tr.vars[s] for s in srcs)
    why = check_mma(a, b, c)
    if why:
        raise tr.type_error(f"pk.mma({', '.join(srcs)}): {why}", call)
    d = target.id
    old = tr.vars.get(d)
    if old is None and d not in tr.params:
        tr.vars[d] = c
        tr.fn.fragments[d] = c
    elif old != c:
        raise tr.type_error(f"pk.mma() gives {c}, which cannot be assigned to '{d}' "
                            f"({old if old is not None else 'a parameter'})", target)
    return [_op(tr, call, "mma", d, srcs=srcs)]


def _layout(tr, call: ast.Call, nfixed: int, name: str) -> str:
    extra = list(call.args[nfixed:])
    for kw in call.keywords:
        if kw.arg != "layout":
            raise tr.type_error(f"pk.{name}() has no keyword '{kw.arg}' (only layout=\"row\"/\"col\")", kw.value)
        extra.append(kw.value)
    if not extra:
        return "row"
    where = f"argument {nfixed + 1} or layout="
    if len(extra) > 1:
        raise tr.type_error(f"pk.{name}() takes one layout ({where}), got {len(extra)}: {USAGE[name]}", extra[1])
    node = extra[0]
    if not (isinstance(node, ast.Constant) and node.value in ir.MATRIX_LAYOUTS):
        what = "a name, whose value is not read" if isinstance(node, (ast.Name, ast.Attribute)) else "not one"
        raise tr.type_error(f"the layout of pk.{name}() is \"row\" or \"col\", written as a string literal in the "
                            f"call ({where}); got {ast.unparse(node)} ({what}): {USAGE[name]}", node)
    return node.value


def _memory(tr, node, name: str, elem: ScalarType, write: bool) -> ir.Var:
    base = tr.array_ref(node)
    t = base.type
    if isinstance(t, ArrayType) and t.scope != "shared":
        raise tr.type_error(f"pk.{name}() reads and writes Buffers and pk.shared arrays, not the private "
                            f"array '{base.name}'", node)
    if write and isinstance(t, BufferType) and t.readonly:
        raise tr.type_error(f"cannot write to readonly Buffer '{base.name}'", node)
    if t.elem != elem:
        raise tr.type_error(f"pk.{name}(): '{base.name}' holds {t.elem} but the fragment holds {elem}", node)
    return base


def _int_operand(tr, node, what: str, out: List[ir.Stmt]) -> ir.Expr:
    e = tr.index_expr(node)
    _flush(tr, out)
    return e


def statement(tr, name: str, call: ast.Call, node) -> List[ir.Stmt]:
    """``pk.frag_fill/frag_load/frag_store/frag_scale(...)`` as a statement."""
    out: List[ir.Stmt] = []
    args = call.args
    if name in ("frag_fill", "frag_scale"):
        if len(args) != 2 or call.keywords:
            raise tr.type_error(f"pk.{name}() takes (fragment, value): {USAGE[name]}", call)
        frag = _fragment(tr, args[0])
        ft = tr.vars[frag]
        if name == "frag_scale" and (ft.role != "acc" or not ft.elem.is_float):
            raise tr.type_error(f"pk.frag_scale() scales a float accumulator, not {ft}", args[0])
        v = tr.scalar_expr(args[1])
        _flush(tr, out)
        if v.type != ft.elem and not is_weak(v):
            raise tr.type_error(f"pk.{name}() of {ft} takes a {ft.elem} value, got {v.type}", args[1])
        v = coerce(default_type(v) if not is_weak(v) else v, ft.elem, f"pk.{name}()")
        out.append(_op(tr, call, name[len("frag_"):], frag, args=[v]))
        return out
    if name == "frag_load":
        if len(args) < 4:
            raise tr.type_error(f"pk.frag_load() takes (fragment, memory, offset, ld): {USAGE[name]}", call)
        frag = _fragment(tr, args[0])
        ft = tr.vars[frag]
        base = _memory(tr, args[1], name, ft.elem, write=False)
        mem_args = args[2:4]
        layout = _layout(tr, call, 4, name)
    else:
        if len(args) < 4:
            raise tr.type_error(f"pk.frag_store() takes (memory, offset, ld, fragment): {USAGE[name]}", call)
        frag = _fragment(tr, args[3])
        ft = tr.vars[frag]
        if ft.role != "acc":
            raise tr.type_error(f"pk.frag_store() stores accumulators (frag_acc), not {ft}", args[3])
        base = _memory(tr, args[0], name, ft.elem, write=True)
        mem_args = args[1:3]
        layout = _layout(tr, call, 4, name)
    offset = _int_operand(tr, mem_args[0], "offset", out)
    ld = _int_operand(tr, mem_args[1], "leading dimension", out)
    out.append(_op(tr, call, name[len("frag_"):], frag, base=base, args=[offset, ld], layout=layout))
    return out
