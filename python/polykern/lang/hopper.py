"""Translation of the Hopper builtins (docs/language.md "Hopper: warpgroup MMA, tensor copies,
transaction barriers") into ``ir.HopperOp`` statements and the kernel's ``ir.hopper.HopperFacts``.

Declarations (``pk.warpgroups``, ``pk.mbarriers``, ``pk.tensor_map``, ``pk.wg_acc``) are per kernel,
like arrays; every operation names declared objects and takes integer operands. The rules that do not
depend on run-time values are checked here, with the user's source location; ``ir.hopper`` holds
them all. The translator ``tr`` is the frontend's FunctionTranslator.
"""
from __future__ import annotations

import ast
from typing import List

from ..ir import hopper as H
from ..ir import nodes as ir
from ..ir.types import ArrayType, BufferType, ScalarType, f32, i32
from .typing_rules import coerce, default_type, is_weak
from .vector_access import record_alignment

USAGE = {
    "warpgroups": "pk.warpgroups(3)  # blocks of exactly 3 warpgroups (384 work-items)",
    "mbarriers": "full = pk.mbarriers(4)",
    "tensor_map": "ta = pk.tensor_map(A, (M, K), (128, 64), \"128B\")  # Buffer, (rows, cols), box, swizzle",
    "wg_acc": "acc = pk.wg_acc(f32, 64, 256)",
    "warpgroup_id": "wg = pk.warpgroup_id()",
    "mbarrier_init": "pk.mbarrier_init(full, i, count)",
    "mbarrier_arrive": "pk.mbarrier_arrive(full, i)",
    "mbarrier_arrive_tx": "pk.mbarrier_arrive_tx(full, i, nbytes)",
    "mbarrier_wait": "pk.mbarrier_wait(full, i, parity)",
    "tma_load": "pk.tma_load(tile, offset, ta, row, col, full, i)",
    "wg_fill": "pk.wg_fill(acc, 0.0)",
    "wgmma": "pk.wgmma(acc, a_tile, a_offset, b_tile, b_offset)",
    "wgmma_commit": "pk.wgmma_commit()",
    "wgmma_wait": "pk.wgmma_wait(0)",
    "wg_store": "pk.wg_store(C, offset, ld, acc)",
    "setmaxnreg": "pk.setmaxnreg(232, \"inc\")  # or (40, \"dec\")",
}
DECLARE = ("mbarriers", "tensor_map", "wg_acc")
STATEMENTS = ("warpgroups", "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_tx", "mbarrier_wait", "tma_load",
              "wg_fill", "wgmma", "wgmma_commit", "wgmma_wait", "wg_store", "setmaxnreg")
_OP = {b: op for op, b in H.BUILTIN_OF.items() if b.startswith("mbarrier_")}  # the barrier operations


def _kernel_only(tr, name: str, node) -> None:
    if tr.inline is not None:
        raise tr.type_error(f"pk.{name}() is used in a kernel's own body, not in a @pk.func device function "
                            "(Hopper objects and operations are per kernel)", node)


def _nargs(tr, name: str, call: ast.Call, n: int) -> None:
    if call.keywords:
        raise tr.syntax_error(f"keyword arguments are not supported in kernel calls: {USAGE[name]}", call)
    if len(call.args) != n:
        raise tr.type_error(f"pk.{name}() takes {n} argument{'s' if n != 1 else ''}: {USAGE[name]}", call)


def _obj(tr, node, cls, what: str, name: str):
    t = tr.vars.get(node.id) if isinstance(node, ast.Name) else None
    if not isinstance(t, cls):
        raise tr.type_error(f"'{ast.unparse(node)}' is not {what} (declare one with {USAGE[name]})", node)
    return node.id, t


def _int(tr, node, out: List[ir.Stmt]) -> ir.Expr:
    e = tr.index_expr(node)
    out.extend(tr.pending)
    tr.pending = []
    if e.type == i32 or is_weak(e):
        return e
    if e.type.bits > 32:
        raise tr.type_error(f"'{ast.unparse(node)}' is {e.type}: this operand of a Hopper operation is an i32 "
                            "(convert with i32(...))", node)
    return ir.Cast(i32, e)


def _shared(tr, node, name: str) -> ir.Var:
    v = tr.array_ref(node)
    if not (isinstance(v.type, ArrayType) and v.type.scope == "shared"):
        raise tr.type_error(f"pk.{name}() reads and writes pk.shared / pk.shared_dynamic arrays; '{v.name}' is "
                            f"{v.type}", node)
    return v


def _swizzled(tr, v: ir.Var, node) -> None:
    """``v`` holds swizzled tiles from now on: it must not be indexed as well."""
    H.facts(tr.fn).swizzled[v.name] = H.SWIZZLE_BYTES


def declare(tr, target: ast.Name, call: ast.Call, name: str) -> List[ir.Stmt]:
    _kernel_only(tr, name, call)
    hf = H.facts(tr.fn)
    if target.id in tr.vars:
        raise tr.type_error(f"'{target.id}' is already defined; a {name} needs a name of its own", target)
    if name == "mbarriers":
        _nargs(tr, name, call, 1)
        n = tr.const_int(call.args[0], "the count of pk.mbarriers()")
        if not 1 <= n <= 64:
            raise tr.type_error(f"pk.mbarriers() declares 1 to 64 barriers, got {n}", call.args[0])
        t = H.MBarrierSetType(n)
        hf.mbarriers[target.id] = n
    elif name == "wg_acc":
        _nargs(tr, name, call, 3)
        elem = tr.static_value(call.args[0]) if isinstance(call.args[0], (ast.Name, ast.Attribute)) else None
        if not isinstance(elem, ScalarType):
            raise tr.type_error(f"the first argument of pk.wg_acc() is an element type: {USAGE[name]}", call.args[0])
        m = tr.const_int(call.args[1], "the M of pk.wg_acc()")
        if m != H.WG_M:
            raise tr.type_error(f"a warpgroup accumulator has M = 64 rows (wgmma's m64), got {m}", call.args[1])
        n = tr.const_int(call.args[2], "the N of pk.wg_acc()")
        why = H.check_acc(elem, n)
        if why:
            raise tr.type_error(f"pk.wg_acc({elem}, 64, {n}): {why}", call)
        t = H.WgAccType(elem, n)
        hf.accs[target.id] = t
    else:
        t = _tensor_map(tr, call)
        hf.tensor_maps[target.id] = t
    tr.vars[target.id] = t
    return []


def _tensor_map(tr, call: ast.Call) -> H.TensorMap:
    _nargs(tr, "tensor_map", call, 4)
    buf_node, shape_node, box_node, swz_node = call.args
    buf = tr.array_ref(buf_node)
    if not isinstance(buf.type, BufferType) or buf.name not in tr.params:
        raise tr.type_error(f"pk.tensor_map() views a Buffer parameter; '{buf.name}' is not one", buf_node)
    elem = buf.type.elem
    if elem.name not in H.TMAP_TYPES:
        raise tr.type_error(f"pk.tensor_map() views {', '.join(H.TMAP_TYPES)} buffers, not {elem}", buf_node)
    if not (isinstance(shape_node, ast.Tuple) and len(shape_node.elts) == 2):
        raise tr.type_error(f"the shape of pk.tensor_map() is (rows, cols): {USAGE['tensor_map']}", shape_node)
    shape = []
    for d in shape_node.elts:
        if isinstance(d, ast.Name) and d.id in tr.params and isinstance(tr.vars[d.id], ScalarType) \
                and tr.vars[d.id].is_int:
            shape.append(d.id)
            continue
        try:
            v = tr.const_int(d, "a dimension of pk.tensor_map()")
        except Exception:  # noqa: BLE001 - re-raised with the rule
            v = None
        if v is None or not 0 < v < 2 ** 32:
            raise tr.type_error("a dimension of pk.tensor_map() is an integer scalar parameter of the kernel or "
                                "a positive constant (the runtime reads it at launch)", d)
        shape.append(v)
    if not (isinstance(box_node, ast.Tuple) and len(box_node.elts) == 2):
        raise tr.type_error(f"the box of pk.tensor_map() is (rows, cols): {USAGE['tensor_map']}", box_node)
    box = tuple(tr.const_int(d, "a box dimension of pk.tensor_map()") for d in box_node.elts)
    if not all(0 < d <= H.BOX_MAX for d in box):
        raise tr.type_error(f"box dimensions are 1 to {H.BOX_MAX}, got {box}", box_node)
    if not (isinstance(swz_node, ast.Constant) and swz_node.value in (*H.SWIZZLES, "none")):
        raise tr.type_error(f"the swizzle of pk.tensor_map() is a string literal: {', '.join(H.SWIZZLES)} or "
                            "\"none\"", swz_node)
    swizzle = H.SWIZZLES.get(swz_node.value, 0)
    row_bytes = box[1] * elem.nbytes
    if swizzle and row_bytes != swizzle:
        raise tr.type_error(f"a {swz_node.value} swizzled box has rows of {swizzle} bytes: {swizzle // elem.nbytes} "
                            f"{elem} columns, got {box[1]}", box_node)
    if not swizzle and row_bytes % 16:
        raise tr.type_error(f"a box row is a multiple of 16 bytes, got {row_bytes}", box_node)
    return H.TensorMap(buf.name, elem, tuple(shape), box, swizzle)


def statement(tr, name: str, call: ast.Call, node) -> List[ir.Stmt]:
    _kernel_only(tr, name, call)
    out: List[ir.Stmt] = []
    hf = H.facts(tr.fn)
    if name == "warpgroups":
        _nargs(tr, name, call, 1)
        n = tr.const_int(call.args[0], "the count of pk.warpgroups()")
        if not 1 <= n <= 8:
            raise tr.type_error(f"pk.warpgroups() takes 1 to 8 (blocks of 128 to 1024 work-items), got {n}", call)
        if hf.warpgroups and hf.warpgroups != n:
            raise tr.type_error(f"pk.warpgroups() was already given {hf.warpgroups}", call)
        hf.warpgroups = n
        return []
    if name in _OP:
        nargs = {"mbarrier_init": 3, "mbarrier_arrive": 2, "mbarrier_arrive_tx": 3, "mbarrier_wait": 3}[name]
        _nargs(tr, name, call, nargs)
        bars, _ = _obj(tr, call.args[0], H.MBarrierSetType, "a barrier set", "mbarriers")
        op = ir.HopperOp(_OP[name], [bars], [_int(tr, a, out) for a in call.args[1:]])
    elif name == "tma_load":
        _nargs(tr, name, call, 7)
        dst = _shared(tr, call.args[0], name)
        tmap, tm = _obj(tr, call.args[2], H.TensorMap, "a tensor map", "tensor_map")
        bars, _ = _obj(tr, call.args[5], H.MBarrierSetType, "a barrier set", "mbarriers")
        if dst.type.elem != tm.elem:
            raise tr.type_error(f"pk.tma_load() copies without conversion: '{tmap}' views {tm.elem} but "
                                f"'{dst.name}' holds {dst.type.elem}", call.args[0])
        if tm.swizzle:
            _swizzled(tr, dst, call.args[0])
        args = [_int(tr, call.args[i], out) for i in (1, 3, 4, 6)]
        _const_rule(tr, args[0], lambda v: H.check_tma_dst(v, tm.swizzle, tm.elem), call.args[1])
        op = ir.HopperOp("tma_load", [dst.name, tmap, bars], args)
    elif name == "wg_fill":
        _nargs(tr, name, call, 2)
        acc, t = _obj(tr, call.args[0], H.WgAccType, "a warpgroup accumulator", "wg_acc")
        v = tr.scalar_expr(call.args[1])
        out.extend(tr.pending)
        tr.pending = []
        op = ir.HopperOp("wg_fill", [acc], [coerce(v if not is_weak(v) else default_type(v), t.elem,
                                                   "pk.wg_fill()")])
    elif name == "wgmma":
        _nargs(tr, name, call, 5)
        acc, t = _obj(tr, call.args[0], H.WgAccType, "a warpgroup accumulator", "wg_acc")
        a, b = _shared(tr, call.args[1], name), _shared(tr, call.args[3], name)
        if a.type.elem != b.type.elem or a.type.elem.name not in H.WG_INPUTS:
            raise tr.type_error(f"wgmma multiplies two tiles of f16 or of bf16; '{a.name}' holds {a.type.elem} and "
                                f"'{b.name}' {b.type.elem}", call)
        _swizzled(tr, a, call.args[1])
        _swizzled(tr, b, call.args[3])
        args = [_int(tr, call.args[2], out), _int(tr, call.args[4], out)]
        _const_rule(tr, args[0], lambda v: H.check_operand_offset(v, "A"), call.args[2])
        _const_rule(tr, args[1], lambda v: H.check_operand_offset(v, "B"), call.args[4])
        op = ir.HopperOp("wgmma", [acc, a.name, b.name], args)
    elif name in ("wgmma_commit", "wgmma_wait"):
        _nargs(tr, name, call, 0 if name == "wgmma_commit" else 1)
        args = []
        if name == "wgmma_wait":
            n = tr.const_int(call.args[0], "the argument of pk.wgmma_wait()")
            if not 0 <= n <= 7:
                raise tr.type_error(f"pk.wgmma_wait() leaves 0 to 7 groups pending, got {n}", call.args[0])
            args = [ir.Const(n, i32)]
        op = ir.HopperOp(name, [], args)
    elif name == "wg_store":
        _nargs(tr, name, call, 4)
        buf = tr.array_ref(call.args[0])
        acc, t = _obj(tr, call.args[3], H.WgAccType, "a warpgroup accumulator", "wg_acc")
        if not isinstance(buf.type, BufferType) or buf.type.readonly or buf.type.elem.name not in ("f32", "f16"):
            raise tr.type_error(f"pk.wg_store() writes a writable Buffer of f32 or f16; '{buf.name}' is {buf.type}",
                                call.args[0])
        op = ir.HopperOp("wg_store", [buf.name, acc], [_int(tr, call.args[1], out), _int(tr, call.args[2], out)])
        record_alignment(tr, buf, 2)  # column pairs are stored together where off and ld are even
    else:  # setmaxnreg
        _nargs(tr, name, call, 2)
        n = tr.const_int(call.args[0], "the register count of pk.setmaxnreg()")
        lo, hi = H.NREG_RANGE
        if not (lo <= n <= hi and n % 8 == 0):
            raise tr.type_error(f"pk.setmaxnreg() takes {lo} to {hi} registers in steps of 8, got {n}", call.args[0])
        d = call.args[1]
        if not (isinstance(d, ast.Constant) and d.value in ("inc", "dec")):
            raise tr.type_error("the second argument of pk.setmaxnreg() is the string literal \"inc\" or \"dec\"", d)
        op = ir.HopperOp(f"setmaxnreg_{d.value}", [], [ir.Const(n, i32)])
    if op.op in H.WARPGROUP_OPS and not hf.warpgroups:
        raise tr.type_error(f"pk.{name}() is a warpgroup operation: declare the block's warpgroups first "
                            f"({USAGE['warpgroups']})", call)
    op.loc = tr.loc(node)
    out.append(op)
    return out


def _const_rule(tr, e: ir.Expr, rule, node) -> None:
    if isinstance(e, ir.Const):
        why = rule(int(e.value))
        if why:
            raise tr.type_error(why, node)


def warpgroup_id(tr, node) -> ir.Expr:
    """``pk.warpgroup_id()``: the linear local index // 128 (an i32)."""
    if node.args or node.keywords:
        raise tr.type_error(f"pk.warpgroup_id() takes no arguments: {USAGE['warpgroup_id']}", node)
    lid = [ir.SpecialReg("local_id", d) for d in range(3)]
    size = [ir.SpecialReg("local_size", d) for d in range(2)]
    linear = ir.BinOp("add", lid[0], ir.BinOp("mul", size[0], ir.BinOp("add", lid[1],
                                                                         ir.BinOp("mul", size[1], lid[2]))))
    return ir.BinOp("floordiv", linear, ir.Const(H.WARPGROUP, i32))


__all__ = ["DECLARE", "STATEMENTS", "USAGE", "declare", "statement", "warpgroup_id", "f32"]
