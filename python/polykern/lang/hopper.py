"""Translation of the Hopper builtins (docs/language.md "Hopper: warpgroup MMA, tensor copies,
transaction barriers") into ``ir.HopperOp`` statements and the kernel's ``ir.hopper.HopperFacts``.

Declarations (``pk.warpgroups``, ``pk.mbarriers``, ``pk.tensor_map``, ``pk.wg_acc``, ``pk.wg_vec``) are per
kernel; every operation names declared objects and takes integer operands. A ``@pk.func`` device function
takes the kernel's objects as parameters (``pk.WgAcc`` ..., lang/annotations.py) and uses the operations on
them; what its operations record for the kernel (swizzled arrays, a buffer's alignment) goes through its
``BodyFacts`` (lang/body_facts.py), and its warpgroup operations need the kernel's ``pk.warpgroups`` declared
before the call (``InlineCall.warpgroups``). The rules that do not
depend on run-time values are checked here, with the user's source location; ``ir.hopper`` holds
them all. The translator ``tr`` is the frontend's FunctionTranslator.
"""
from __future__ import annotations

import ast
from typing import List, Tuple

from ..errors import KernelTypeError
from ..ir import hopper as H
from ..ir import nodes as ir
from ..passes.unroll import own_exit, unroll
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
    "wg_vec": "m = pk.wg_vec(f32)  # one value per accumulator row",
    "wgmma_kn": "pk.wgmma_kn(acc, a_tile, a_offset, b_tile, b_offset, panel)  # B a K x N tile",
    "wg_row_max": "pk.wg_row_max(m, acc)  # m[i] = max over j of acc[i, j]",
    "wg_row_sum": "pk.wg_row_sum(l, acc)  # l[i] = sum over j of acc[i, j]",
    "wg_elements": "for i, j in pk.wg_elements(acc):",
    "wg_rows": "for i in pk.wg_rows():",
    "named_barrier": "pk.named_barrier(1, 256)  # wait until 256 work-items (2 warpgroups) arrived at barrier 1",
    "named_arrive": "pk.named_arrive(1, 256)  # arrive at barrier 1 (of 256 work-items) without waiting",
}
DECLARE = ("mbarriers", "tensor_map", "wg_acc", "wg_vec")
STATEMENTS = ("warpgroups", "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_tx", "mbarrier_wait", "tma_load",
              "wg_fill", "wgmma", "wgmma_kn", "wgmma_commit", "wgmma_wait", "wg_store", "setmaxnreg", "wg_row_max",
              "wg_row_sum", "named_barrier", "named_arrive")
#: The loops over a warpgroup's registers (``for i, j in pk.wg_elements(acc)``, ``for i in pk.wg_rows()``).
LOOPS = ("wg_elements", "wg_rows")
_OP = {b: op for op, b in H.BUILTIN_OF.items() if b.startswith("mbarrier_")}  # the barrier operations


#: Declaration -> the device function parameter annotation that takes what it declares.
_PARAM_OF = {"mbarriers": "pk.MBarriers", "tensor_map": "pk.TensorMap", "wg_acc": "pk.WgAcc", "wg_vec": "pk.WgVec"}


def _kernel_only(tr, name: str, node) -> None:
    if tr.inline is None:
        return
    if name == "warpgroups":
        how = "declare the block's warpgroups in the kernel, before it calls functions with warpgroup operations"
    else:
        how = f"declare it in the kernel and pass it to the function as a {_PARAM_OF[name]} parameter"
    raise tr.type_error(f"pk.{name}() is a kernel's declaration, not allowed in a @pk.func device function: {how}",
                        node)


def _warpgroups(tr) -> int:
    """The block's warpgroups the kernel has declared so far (0: none), in a device function at its call."""
    return tr.inline.warpgroups if tr.inline is not None else H.facts(tr.fn).warpgroups


def _needs_warpgroups(tr, what: str, node) -> None:
    if _warpgroups(tr):
        return
    if tr.inline is None:
        raise tr.type_error(f"{what}: declare the block's warpgroups first ({USAGE['warpgroups']})", node)
    raise tr.type_error(f"{what}: the kernel declares the block's warpgroups ({USAGE['warpgroups']}) before it "
                        f"calls a device function that uses one, and kernel '{tr.inline.kernel}' has not", node)


def _nargs(tr, name: str, call: ast.Call, n: int) -> None:
    if call.keywords:
        raise tr.syntax_error(f"keyword arguments are not supported in kernel calls: {USAGE[name]}", call)
    if len(call.args) != n:
        raise tr.type_error(f"pk.{name}() takes {n} argument{'s' if n != 1 else ''}: {USAGE[name]}", call)


def _obj(tr, node, cls, what: str, name: str):
    t = tr.vars.get(node.id) if isinstance(node, ast.Name) else None
    if not isinstance(t, cls):
        how = f"declare one with {USAGE[name]}" if tr.inline is None else \
            f"a device function takes the kernel's as a {_PARAM_OF[name]} parameter"
        raise tr.type_error(f"'{ast.unparse(node)}' is not {what} ({how})", node)
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
    tr.facts.swizzle(v.name, H.SWIZZLE_BYTES)


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
    elif name == "wg_vec":
        _nargs(tr, name, call, 1)
        elem = tr.static_value(call.args[0]) if isinstance(call.args[0], (ast.Name, ast.Attribute)) else None
        if elem is not f32:
            raise tr.type_error(f"a warpgroup row vector holds f32: {USAGE[name]}", call.args[0])
        t = H.WgVecType(elem)
        hf.vecs[target.id] = t
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
    out: List[ir.Stmt] = []
    if name == "warpgroups":
        _kernel_only(tr, name, call)
        hf = H.facts(tr.fn)
        _nargs(tr, name, call, 1)
        n = tr.const_int(call.args[0], "the count of pk.warpgroups()")
        if not 1 <= n <= H.WARPGROUPS_MAX:
            raise tr.type_error(f"pk.warpgroups() takes 1 to {H.WARPGROUPS_MAX} (blocks of {H.WARPGROUP} to "
                                f"{H.WARPGROUP * H.WARPGROUPS_MAX} work-items), got {n}", call)
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
    elif name in H.WGMMA_OPS:
        op = _wgmma(tr, name, call, out)
    elif name in ("wg_row_max", "wg_row_sum"):
        _nargs(tr, name, call, 2)
        vec, _ = _obj(tr, call.args[0], H.WgVecType, "a warpgroup row vector", "wg_vec")
        acc, _ = _obj(tr, call.args[1], H.WgAccType, "a warpgroup accumulator", "wg_acc")
        op = ir.HopperOp(name, [vec, acc], [])
    elif name in H.NAMED_OPS:
        op = _named(tr, name, call, out)
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
    if op.op in H.WARPGROUP_OPS:
        _needs_warpgroups(tr, f"pk.{name}() is a warpgroup operation", call)
    op.loc = tr.loc(node)
    out.append(op)
    return out


def _named(tr, name: str, call: ast.Call, out: List[ir.Stmt]) -> ir.HopperOp:
    """``pk.named_barrier(id, count)`` / ``pk.named_arrive(id, count)``: ``id`` an integer (a constant is
    checked here, another value by the IR interpreter), ``count`` a constant number of work-items."""
    _nargs(tr, name, call, 2)
    warpgroups = H.facts(tr.fn).warpgroups
    if not warpgroups:
        raise tr.type_error(f"pk.{name}() synchronizes whole warpgroups: declare the block's warpgroups first "
                            f"({USAGE['warpgroups']})", call)
    bar_id = _int(tr, call.args[0], out)
    _const_rule(tr, bar_id, H.check_named_id, call.args[0])
    count = tr.const_int(call.args[1], f"the count of pk.{name}()")
    why = H.check_named_count(count, warpgroups)
    if why:
        raise tr.type_error(why, call.args[1])
    return ir.HopperOp(name, [], [bar_id, ir.Const(count, i32)])


def _wgmma(tr, name: str, call: ast.Call, out: List[ir.Stmt]) -> ir.HopperOp:
    """``pk.wgmma(acc, a, a_off, b, b_off)`` / ``pk.wgmma_kn(acc, a, a_off, b, b_off, panel)``; ``a`` is a
    swizzled shared tile or an accumulator (A from registers: its columns a_off .. a_off + 15, rounded to
    B's element type)."""
    kn = name == "wgmma_kn"
    _nargs(tr, name, call, 6 if kn else 5)
    acc, t = _obj(tr, call.args[0], H.WgAccType, "a warpgroup accumulator", "wg_acc")
    a_node = call.args[1]
    a_regs = isinstance(a_node, ast.Name) and isinstance(tr.vars.get(a_node.id), H.WgAccType)
    b = _shared(tr, call.args[3], name)
    if b.type.elem.name not in H.WG_INPUTS:
        raise tr.type_error(f"wgmma multiplies tiles of f16 or of bf16; '{b.name}' holds {b.type.elem}", call.args[3])
    if a_regs:
        a_name, src = a_node.id, tr.vars[a_node.id]
        if a_name == acc:
            raise tr.type_error(f"pk.{name}() reads A from accumulator '{a_name}' while adding into it: use another "
                                "accumulator", a_node)
    else:
        a = _shared(tr, a_node, name)
        if a.type.elem != b.type.elem:
            raise tr.type_error(f"wgmma multiplies two tiles of f16 or of bf16; '{a.name}' holds {a.type.elem} and "
                                f"'{b.name}' {b.type.elem}", call)
        _swizzled(tr, a, a_node)
        a_name = a.name
    _swizzled(tr, b, call.args[3])
    args = [_int(tr, call.args[i], out) for i in ((2, 4, 5) if kn else (2, 4))]
    if a_regs:
        _const_rule(tr, args[0], lambda v: H.check_a_registers(v, src.n), call.args[2])
    else:
        _const_rule(tr, args[0], lambda v: H.check_operand_offset(v, "A"), call.args[2])
    if kn:
        if not isinstance(args[2], ir.Const):
            raise tr.type_error("the panel stride of pk.wgmma_kn() is a compile-time constant", call.args[5])
        _const_rule(tr, args[1], lambda v: H.check_kn_operand(v, int(args[2].value), t.n), call.args[4])
        why = H.check_kn_operand(0, int(args[2].value), t.n)
        if why:
            raise tr.type_error(why, call.args[5])
    else:
        _const_rule(tr, args[1], lambda v: H.check_operand_offset(v, "B"), call.args[4])
    return ir.HopperOp(name, [acc, a_name, b.name], args)


def check_call(tr, body: List[ir.Stmt], fname: str, node) -> None:
    """The rule on names of an inlined call's operations (``body``, renamed to the caller's names): two
    parameters distinct in the device function may be one object of the caller."""
    for s in ir.walk_stmts(body):
        if isinstance(s, ir.HopperOp) and s.op in H.WGMMA_OPS and s.names[0] == s.names[1]:
            raise tr.type_error(f"this call passes accumulator '{s.names[0]}' to two parameters of device function "
                                f"'{fname}', whose pk.{s.op}() at {s.loc} then reads A from the accumulator it adds "
                                "into: pass another accumulator", node)


def _const_rule(tr, e: ir.Expr, rule, node) -> None:
    if isinstance(e, ir.Const):
        why = rule(int(e.value))
        if why:
            raise tr.type_error(why, node)


def warpgroup_id(tr, node) -> ir.Expr:
    """``pk.warpgroup_id()``: the linear local index // 128 (an i32)."""
    if node.args or node.keywords:
        raise tr.type_error(f"pk.warpgroup_id() takes no arguments: {USAGE['warpgroup_id']}", node)
    return ir.BinOp("floordiv", _linear_local(), ir.Const(H.WARPGROUP, i32))


def _linear_local() -> ir.Expr:
    """The work-item's linear local index (``local_id(0)`` fastest), as IR."""
    lid = [ir.SpecialReg("local_id", d) for d in range(3)]
    size = [ir.SpecialReg("local_size", d) for d in range(2)]
    return ir.BinOp("add", lid[0], ir.BinOp("mul", size[0], ir.BinOp("add", lid[1], ir.BinOp("mul", size[1], lid[2]))))


__all__ = ["DECLARE", "LOOPS", "STATEMENTS", "USAGE", "check_call", "declare", "element", "element_store", "in_wg_loop",
           "is_element", "statement", "warpgroup_id", "wg_loop", "f32"]


# ---------------------------------------------------------------- loops over a warpgroup's registers


class _WgLoop:
    """The ``pk.wg_elements`` / ``pk.wg_rows`` loop being translated: its row (and column) variables and
    the hidden register index."""

    def __init__(self, kind: str, acc, n: int, i: str, j, reg: str):
        self.kind, self.acc, self.n, self.i, self.j, self.reg = kind, acc, n, i, j, reg


def _lane_terms():
    """(warp within the warpgroup, lane) of this work-item, as IR."""
    t = ir.BinOp("mod", _linear_local(), ir.Const(H.WARPGROUP, i32))
    return ir.BinOp("floordiv", t, ir.Const(32, i32)), ir.BinOp("mod", t, ir.Const(32, i32))


def _c(v: int) -> ir.Expr:
    return ir.Const(v, i32)


def _bin(op, a, b) -> ir.Expr:
    return ir.BinOp(op, a, b)


def _lane_temps(tr, node) -> Tuple[List[ir.Stmt], ir.Var, ir.Var]:
    """Statements computing, once before a warpgroup loop, this work-item's first row (16 warp + lane // 4)
    and first column (2 (lane % 4)) in ``ir.hopper.element_row_col``'s layout, and the two variables."""
    w, lane = _lane_terms()
    out, vs = [], []
    for base, value in (("_wgrow", _bin("add", _bin("mul", _c(16), w), _bin("floordiv", lane, _c(4)))),
                        ("_wgcol", _bin("mul", _c(2), _bin("mod", lane, _c(4))))):
        name = tr._fresh(base)
        tr._declare_scalar(name, i32, node)
        out.append(ir.Assign(name, value))
        vs.append(ir.Var(name, i32))
    return out, vs[0], vs[1]


def _row_expr(row0: ir.Var, slot: ir.Expr) -> ir.Expr:
    """``ir.hopper.element_row_col``'s row of register slot ``slot`` (0/1)."""
    return _bin("add", row0, _bin("mul", _c(8), slot))


def _col_expr(col0: ir.Var, e: ir.Expr) -> ir.Expr:
    return _bin("add", _bin("add", _bin("mul", _c(8), _bin("shr", e, _c(2))), col0), _bin("and", e, _c(1)))


def _slot_of(e: ir.Expr) -> ir.Expr:
    return _bin("and", _bin("shr", e, _c(1)), _c(1))


def _loop_var(tr, node) -> str:
    if not isinstance(node, ast.Name):
        raise tr.syntax_error("the variables of a warpgroup loop are plain names", node)
    t = tr.vars.get(node.id)
    if t is None:
        tr._declare_scalar(node.id, i32, node)
    elif t != i32:
        raise tr.type_error(f"'{node.id}' is a {t}; a warpgroup loop's row and column are i32", node)
    return node.id


def wg_loop(tr, node: ast.For, name: str) -> List[ir.Stmt]:
    """``for i, j in pk.wg_elements(acc):`` (the body runs for every element (i, j) of ``acc``, each by the
    work-item holding it) or ``for i in pk.wg_rows():`` (for every row i of the warpgroup's accumulators,
    by each work-item holding it). The body is unrolled over the work-item's registers (passes/unroll.py: a
    loop whose variable indexes registers, up to REGISTER_TRIPS)."""
    call = node.iter
    if node.orelse:
        raise tr.syntax_error("'for ... else' is not supported in kernels", node)
    if call.keywords:
        raise tr.syntax_error(f"keyword arguments are not supported in kernel calls: {USAGE[name]}", call)
    _needs_warpgroups(tr, f"pk.{name}() loops over a warpgroup's registers", call)
    if in_wg_loop(tr):
        inside = " (this one is in a device function called in the body of one)" if tr.inline is not None else ""
        raise tr.type_error(f"pk.{name}() loops do not nest{inside}", node)
    reg = tr._fresh("_wgr")
    tr._declare_scalar(reg, i32, node)
    e = ir.Var(reg, i32)
    lanes, row0, col0 = _lane_temps(tr, node)
    if name == "wg_elements":
        _nargs(tr, name, call, 1)
        acc, t = _obj(tr, call.args[0], H.WgAccType, "a warpgroup accumulator", "wg_acc")
        if not (isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2):
            raise tr.syntax_error(f"pk.wg_elements() gives a row and a column: {USAGE[name]}", node.target)
        i, j = (_loop_var(tr, x) for x in node.target.elts)
        regs, pre = t.n // 2, [ir.Assign(i, _row_expr(row0, _slot_of(e))), ir.Assign(j, _col_expr(col0, e))]
        ctx = _WgLoop("elements", acc, t.n, i, j, reg)
    else:
        _nargs(tr, name, call, 0)
        i = _loop_var(tr, node.target)
        regs, pre = H.VEC_SLOTS, [ir.Assign(i, _row_expr(row0, e))]
        ctx = _WgLoop("rows", None, 0, i, None, reg)
    for s in pre + lanes:
        s.loc = tr.loc(node)
    tr.wg_loop = ctx
    tr.loop_depth += 1
    try:
        body = tr.block(node.body)
    finally:
        tr.loop_depth -= 1
        tr.wg_loop = None
    _check_body(tr, body, name)
    loop = ir.For(reg, _c(0), _c(regs), 1, pre + body)
    loop.loc = tr.loc(node)
    return lanes + (unroll(loop) or [loop])  # acc[i, j] / vec[i] index registers by it (unroll.indexes_registers)


def in_wg_loop(tr) -> bool:
    """Whether ``tr`` is translating the body of a warpgroup loop (its own, or one around the call it inlines)."""
    return getattr(tr, "wg_loop", None) is not None or (tr.inline is not None and tr.inline.in_wg_loop)


def _check_body(tr, body: List[ir.Stmt], name: str) -> None:
    """A warpgroup loop's body computes per element (or row): it writes only its element, row vectors at its
    row (pk.wg_rows), locals and private arrays; it reads memory but does not write it or synchronize."""
    from ..errors import KernelTypeError

    from ..passes.unroll import own_exit

    if own_exit(body):
        raise KernelTypeError(f"the body of a pk.{name}() loop runs for each register: it has no break or continue "
                              "of its own", tr.fn.loc)
    for s in ir.walk_stmts(body):
        bad = None
        if isinstance(s, ir.Store) and not (isinstance(s.base.type, ArrayType) and s.base.type.scope == "local"):
            bad = f"a store to '{s.base.name}'"
        elif isinstance(s, (ir.Barrier, ir.MatrixOp, ir.CopyAsync, ir.Return)) or \
                (isinstance(s, ir.HopperOp) and s.op != "wg_set"):
            bad = {ir.Return: "return"}.get(type(s), "a synchronizing operation")
        else:
            for e in ir.stmt_exprs(s):
                for x in ir.walk_expr(e):
                    if isinstance(x, (ir.Atomic, ir.Subgroup)):
                        bad = "an atomic or subgroup operation"
        if bad:
            raise KernelTypeError(f"the body of a pk.{name}() loop computes per element: {bad} is not allowed in it "
                                  "(its work-item differs per target)", getattr(s, "loc", None) or tr.fn.loc)


def is_element(tr, node) -> bool:
    """Whether ``node`` is ``acc[i, j]`` / ``vec[i]`` (a Subscript of a warpgroup accumulator or row vector)."""
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
        and isinstance(tr.vars.get(node.value.id), (H.WgAccType, H.WgVecType))


def _element_index(tr, node: ast.Subscript, write: bool) -> ir.Expr:
    name = node.value.id
    t = tr.vars[name]
    ctx = getattr(tr, "wg_loop", None)
    e = ir.Var(ctx.reg, i32) if ctx is not None else None
    if isinstance(t, H.WgAccType):
        form = f"{name}[i, j] inside 'for i, j in pk.wg_elements({name})'"
        ok = (ctx is not None and ctx.kind == "elements" and t.n == ctx.n and isinstance(node.slice, ast.Tuple)
              and len(node.slice.elts) == 2 and all(isinstance(x, ast.Name) for x in node.slice.elts)
              and (node.slice.elts[0].id, node.slice.elts[1].id) == (ctx.i, ctx.j))
        if not ok:
            raise tr.type_error(f"a warpgroup accumulator's element is read and written as {form} (or of another "
                                f"accumulator of its shape), with the loop's own row and column", node)
        return e
    form = "vec[i] inside 'for i in pk.wg_rows()' or 'for i, j in pk.wg_elements(acc)'"
    ok = ctx is not None and isinstance(node.slice, ast.Name) and node.slice.id == ctx.i
    if not ok:
        raise tr.type_error(f"a warpgroup row vector is read and written as {form}, with the loop's own row", node)
    if ctx.kind == "elements":
        if write:
            raise tr.type_error(f"row vector '{name}' is written in a pk.wg_rows() loop (in pk.wg_elements(...) the "
                                "work-items holding a row would each write it)", node)
        return _slot_of(e)
    return e


def element(tr, node: ast.Subscript) -> ir.Expr:
    """The value of ``acc[i, j]`` / ``vec[i]``."""
    x = ir.WgReg(node.value.id, _element_index(tr, node, False))
    x.loc = tr.loc(node)
    return x


def element_store(tr, target: ast.Subscript, value: ir.Expr, node) -> ir.Stmt:
    """``acc[i, j] = value`` / ``vec[i] = value``."""
    idx = _element_index(tr, target, True)
    if not isinstance(value.type, ScalarType) or (value.type != f32 and not is_weak(value)):
        raise tr.type_error(f"'{target.value.id}' holds f32, not {value.type}", node)
    s = ir.HopperOp("wg_set", [target.value.id], [idx, coerce(value, f32, f"store to '{target.value.id}'")])
    s.loc = tr.loc(node)
    return s
