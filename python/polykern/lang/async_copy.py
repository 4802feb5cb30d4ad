"""Translation of ``pk.copy_async`` / ``pk.copy_commit`` / ``pk.copy_wait`` (docs/language.md
"Asynchronous copies") into ``ir.CopyAsync`` / ``ir.CopyCommit`` / ``ir.CopyWait``.

The translator ``tr`` is the frontend's FunctionTranslator.
"""
from __future__ import annotations

import ast
from typing import List

from ..ir import nodes as ir
from ..ir.types import ArrayType, BufferType, i64
from .vector_access import record_alignment

USAGE = {
    "copy_async": "pk.copy_async(tile, k_tile, buf, k_buf, 8)  # buf[8k_buf .. +8] -> tile[8k_tile .. +8]",
    "copy_commit": "pk.copy_commit()",
    "copy_wait": "pk.copy_wait(1)  # until at most 1 committed group is pending",
}
STATEMENTS = tuple(USAGE)


def counts_for(elem) -> List[int]:
    """The element counts one copy of ``elem`` may move (4, 8 or 16 bytes)."""
    return [b // elem.nbytes for b in ir.COPY_BYTES if b % elem.nbytes == 0]


def statement(tr, name: str, call: ast.Call, node) -> List[ir.Stmt]:
    if call.keywords:
        raise tr.syntax_error(f"keyword arguments are not supported in kernel calls: {USAGE[name]}", call)
    if name == "copy_commit":
        if call.args:
            raise tr.type_error(f"pk.copy_commit() takes no arguments: {USAGE[name]}", call)
        out: List[ir.Stmt] = [ir.CopyCommit()]
    elif name == "copy_wait":
        if len(call.args) != 1:
            raise tr.type_error(f"pk.copy_wait() takes one constant, the committed groups that may stay "
                                f"pending: {USAGE[name]}", call)
        n = tr.const_int(call.args[0], "the argument of pk.copy_wait()")
        if n < 0:
            raise tr.type_error(f"pk.copy_wait() takes a count of groups >= 0, got {n}", call.args[0])
        out = [ir.CopyWait(n)]
    else:
        out = _copy(tr, call)
    for s in out:
        if s.loc is None:
            s.loc = tr.loc(node)
    return out


def _copy(tr, call: ast.Call) -> List[ir.Stmt]:
    if len(call.args) != 5:
        raise tr.type_error("pk.copy_async() takes (shared array, its group index, Buffer, its group index, "
                            f"count): {USAGE['copy_async']}", call)
    dst_node, dk_node, src_node, sk_node, n_node = call.args
    dst, src = tr.array_ref(dst_node), tr.array_ref(src_node)
    if not (isinstance(dst.type, ArrayType) and dst.type.scope == "shared"):
        what = "a Buffer" if isinstance(dst.type, BufferType) else "a pk.local array"
        raise tr.type_error(f"pk.copy_async() copies into a pk.shared (or pk.shared_dynamic) array; "
                            f"'{dst.name}' is {what}", dst_node)
    if not isinstance(src.type, BufferType):
        raise tr.type_error(f"pk.copy_async() copies from a Buffer parameter; '{src.name}' is a "
                            f"pk.{src.type.scope} array", src_node)
    elem = dst.type.elem
    if src.type.elem != elem:
        raise tr.type_error(f"pk.copy_async() copies without conversion: '{src.name}' holds {src.type.elem} "
                            f"but '{dst.name}' holds {elem}", src_node)
    if elem.is_bool:
        raise tr.type_error(f"pk.copy_async() is not defined for bool elements ('{dst.name}')", dst_node)
    n = tr.const_int(n_node, "the count of pk.copy_async()")
    ok = counts_for(elem)
    if n not in ok:
        raise tr.type_error(f"pk.copy_async() moves 4, 8 or 16 bytes: a count of {' or '.join(map(str, ok))} "
                            f"{elem} elements, got {n}", n_node)
    out: List[ir.Stmt] = []
    dk = tr.index_expr(dk_node)
    out.extend(tr.pending)
    tr.pending = []
    sk = tr.index_expr(sk_node)
    out.extend(tr.pending)
    tr.pending = []
    if dk.type != sk.type:  # one index type for both sides (the wider one: i64)
        dk, sk = (k if k.type == i64 else ir.Cast(i64, k) for k in (dk, sk))
    s = ir.CopyAsync(dst, dk, src, sk, n)
    s.loc = tr.loc(call)
    out.append(s)
    record_alignment(tr, src, n)
    return out
