"""IR verifier: structural and type invariants every pass and backend may rely on.

A failure here is a compiler bug (the frontend reports user mistakes itself), so it raises
``CompileError`` naming the function, the node and, when known, the user's source line.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError
from . import debug_print
from . import nodes as ir
from .types import ArrayType, BufferType, ScalarType, bool_, f32, i32


class _Verifier:
    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.collective_ok = False  # set by an Assign whose value is a subgroup collective
        self.scope = {p.name: p.type for p in fn.params}
        for name, t in fn.locals.items():
            self._declare(name, t)
        for name, t in fn.arrays.items():
            self._declare(name, t)

    def _declare(self, name, t):
        if name in self.scope:
            self.fail(f"name '{name}' declared twice", None)
        self.scope[name] = t

    def fail(self, msg, node):
        where = f" at {node.loc}" if node is not None and getattr(node, "loc", None) else ""
        raise CompileError(f"internal error: invalid IR in kernel '{self.fn.name}'{where}: {msg}")

    def run(self):
        self.block(self.fn.body, 0)

    def block(self, stmts, depth):
        for s in stmts:
            self.stmt(s, depth)

    def stmt(self, s, depth):
        if isinstance(s, ir.Assign):
            t = self.fn.locals.get(s.name)
            if t is None:
                self.fail(f"assignment to undeclared local '{s.name}'", s)
            if ir.subgroup_collective(s) is not None:
                self.collective_ok = True  # the one place a collective may stand
            self.expect(s.value, t, s)
        elif isinstance(s, ir.Store):
            self.memory(s.base, s.index, s)
            if isinstance(s.base.type, BufferType) and s.base.type.readonly:
                self.fail(f"store to readonly buffer '{s.base.name}'", s)
            self.expect(s.value, s.base.type.elem, s)
        elif isinstance(s, ir.ExprStmt):
            self.expr(s.expr)
        elif isinstance(s, ir.If):
            self.expect(s.cond, bool_, s)
            self.block(s.then, depth)
            self.block(s.orelse, depth)
        elif isinstance(s, ir.For):
            t = self.fn.locals.get(s.var)
            if t is None or not t.is_int:
                self.fail(f"loop variable '{s.var}' must be an integer local", s)
            self.expect(s.start, t, s)
            self.expect(s.stop, t, s)
            if not isinstance(s.step, int) or s.step == 0:
                self.fail("for-loop step must be a nonzero int", s)
            self.block(s.body, depth + 1)
        elif isinstance(s, ir.While):
            self.expect(s.cond, bool_, s)
            self.block(s.body, depth + 1)
        elif isinstance(s, (ir.Break, ir.Continue)):
            if depth == 0:
                self.fail(f"{type(s).__name__.lower()} outside a loop", s)
        elif isinstance(s, (ir.Return, ir.Barrier)):
            pass
        elif isinstance(s, ir.MatrixOp):
            self.matrix(s)
        elif isinstance(s, ir.CopyAsync):
            self.copy(s)
        elif isinstance(s, ir.CopyWait):
            if not isinstance(s.pending, int) or isinstance(s.pending, bool) or s.pending < 0:
                self.fail(f"copy_wait needs a constant count of groups >= 0, got {s.pending!r}", s)
        elif isinstance(s, ir.CopyCommit):
            pass
        elif isinstance(s, ir.HopperOp):
            self.hopper(s)
        elif isinstance(s, ir.Print):
            self.print_(s)
        else:
            self.fail(f"unknown statement {type(s).__name__}", s)

    def print_(self, s):
        try:
            specs = debug_print.specs(debug_print.parse(s.fmt))
        except debug_print.FormatError as e:
            self.fail(f"debug_print format {s.fmt!r}: {e}", s)
        if len(specs) != len(s.args) or len(s.args) > debug_print.MAX_ARGS:
            self.fail(f"debug_print format {s.fmt!r} has {len(specs)} conversions but {len(s.args)} arguments", s)
        for spec, a in zip(specs, s.args):
            self.expr(a)
            if not isinstance(a, (ir.Var, ir.Const)) or not isinstance(a.type, ScalarType) \
                    or debug_print.arg_type(spec, a.type) != a.type:
                self.fail(f"debug_print argument {a!r} for {spec.text} must be a variable or constant of the "
                          "conversion's type", s)

    def matrix(self, s):
        ft = self.fn.fragments.get(s.frag)
        if ft is None or ft != s.ftype or any(n not in self.fn.fragments for n in s.srcs):
            self.fail(f"matrix operation on undeclared or mistyped fragment '{s.frag}'", s)
        if s.op not in ir.MATRIX_OPS or s.layout not in ir.MATRIX_LAYOUTS:
            self.fail(f"unknown matrix operation {s.op} ({s.layout})", s)
        for e in s.args:
            self.expr(e)
        if s.op in ("load", "store"):
            if s.base is None or len(s.args) != 2 or not all(e.type.is_int for e in s.args):
                self.fail(f"frag_{s.op} needs a memory base and integer offset and ld", s)
            if s.base.type.elem != ft.elem:
                self.fail(f"frag_{s.op} of {ft} on '{s.base.name}' ({s.base.type})", s)
        elif s.op in ("fill", "scale"):
            if len(s.args) != 1:
                self.fail(f"frag_{s.op} takes one value", s)
            self.expect(s.args[0], ft.elem, s)
        elif len(s.srcs) != 3:
            self.fail("mma takes three fragments", s)

    def hopper(self, s):
        from . import hopper as H

        hf = self.fn.hopper
        spec = H.OPS.get(s.op)
        if spec is None or hf is None or len(s.names) != len(spec[0]) or len(s.args) != len(spec[1]):
            self.fail(f"malformed Hopper operation {s.op}", s)
        kinds = {"bars": hf.mbarriers, "tmap": hf.tensor_maps, "acc": hf.accs, "vec": hf.vecs,
                 "reg": {**hf.accs, **hf.vecs}}
        for k, (role, name) in enumerate(zip(spec[0], s.names)):
            regs_a = s.op in H.WGMMA_OPS and k == 1 and name in hf.accs  # A from an accumulator's registers
            ok = regs_a or (name in kinds[role] if role in kinds else (
                name in self.fn.arrays or self.fn.param(name) is not None))
            if not ok:
                self.fail(f"{s.op} names undeclared {role} '{name}'", s)
        for e in s.args:
            self.expr(e)
        ints = s.args[:1] if s.op == "wg_set" else [] if s.op == "wg_fill" else s.args
        if not all(e.type.is_int for e in ints) or (s.op == "wg_set" and s.args[1].type != f32):
            self.fail(f"{s.op} takes integer operands", s)
        if s.op in H.WARPGROUP_OPS and not hf.warpgroups:
            self.fail(f"{s.op} in a kernel that declares no warpgroups", s)
        if s.op in H.NAMED_OPS:  # the count is an immediate of bar.sync / bar.arrive
            count = s.args[1]
            if not isinstance(count, ir.Const) or H.check_named_count(int(count.value), hf.warpgroups):
                self.fail(f"{s.op} needs a constant count of whole warpgroups within the block, got {count}", s)

    def copy(self, s):
        self.memory(s.dst, s.dst_k, s)
        self.memory(s.src, s.src_k, s)
        if not (isinstance(s.dst.type, ArrayType) and s.dst.type.scope == "shared"):
            self.fail(f"copy_async into '{s.dst.name}', which is not a shared array", s)
        if not isinstance(s.src.type, BufferType):
            self.fail(f"copy_async from '{s.src.name}', which is not a buffer", s)
        if s.dst.type.elem != s.src.type.elem or s.dst_k.type != s.src_k.type:
            self.fail(f"copy_async between {s.src.type} and {s.dst.type} (indices {s.src_k.type}, "
                      f"{s.dst_k.type})", s)
        if not isinstance(s.count, int) or s.count * s.dst.type.elem.nbytes not in ir.COPY_BYTES:
            self.fail(f"copy_async of {s.count!r} x {s.dst.type.elem}", s)

    def memory(self, base, index, node):
        if not isinstance(base, ir.Var) or not isinstance(base.type, (BufferType, ArrayType)):
            self.fail("memory access base must be a buffer or array variable", node)
        if self.scope.get(base.name) != base.type:
            self.fail(f"'{base.name}' is not a declared buffer/array of type {base.type}", node)
        self.expr(index)
        if not isinstance(index.type, ScalarType) or not index.type.is_int:
            self.fail(f"index must be an integer, got {index.type}", node)

    def constant_value(self, e):
        """A constant holds a value of its own type: an integer in range (no silent wrap), a number for
        a float type (the frontend also rounds it to the type; simplify rounds what others build)."""
        t, v = e.type, e.value
        if t.is_bool:
            ok = isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and v in (0, 1))
        elif t.is_int:
            ok = isinstance(v, (int, np.integer)) and not isinstance(v, bool) and t.min_value() <= v <= t.max_value()
        else:
            ok = isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, bool)
        if not ok:
            self.fail(f"constant {v!r} is not a value of {t}", e)

    def expect(self, e, t, node):
        self.expr(e)
        if e.type != t:
            self.fail(f"expected {t}, got {e.type}", node)

    def expr(self, e):
        if isinstance(e, ir.Const):
            if not isinstance(e.type, ScalarType):
                self.fail("constant without scalar type", e)
            self.constant_value(e)
        elif isinstance(e, ir.Var):
            if self.scope.get(e.name) != e.type:
                self.fail(f"variable '{e.name}' used with type {e.type}, declared {self.scope.get(e.name)}", e)
        elif isinstance(e, ir.BinOp):
            self.expr(e.a)
            self.expr(e.b)
            if e.a.type != e.b.type:
                self.fail(f"operands of '{e.op}' differ: {e.a.type} vs {e.b.type}", e)
            if e.op in ir.BINOPS_LOGIC and e.a.type != bool_:
                self.fail(f"'{e.op}' needs bool operands", e)
            if e.op not in ir.BINOPS_ARITH + ir.BINOPS_BIT + ir.BINOPS_CMP + ir.BINOPS_LOGIC:
                self.fail(f"unknown binary op '{e.op}'", e)
        elif isinstance(e, ir.UnaryOp):
            self.expr(e.a)
            if e.op == "not" and e.a.type != bool_:
                self.fail("'not' needs a bool operand", e)
            if e.op not in ("neg", "not", "invert"):
                self.fail(f"unknown unary op '{e.op}'", e)
        elif isinstance(e, ir.Cast):
            self.expr(e.a)
        elif isinstance(e, ir.Bitcast):
            self.expr(e.a)
            pair = (e.a.type.name, e.to.name)
            if pair not in ir.BITCAST_PAIRS and pair[::-1] not in ir.BITCAST_PAIRS:
                self.fail(f"bitcast from {e.a.type} to {e.to}: only "
                          f"{', '.join(f'{x} <-> {y}' for x, y in ir.BITCAST_PAIRS)} reinterpret bits", e)
        elif isinstance(e, ir.Select):
            self.expect(e.cond, bool_, e)
            self.expr(e.a)
            self.expr(e.b)
            if e.a.type != e.b.type:
                self.fail("select arms differ in type", e)
        elif isinstance(e, ir.Load):
            self.memory(e.base, e.index, e)
        elif isinstance(e, ir.Call):
            if e.func not in ir.MATH_FUNCS:
                self.fail(f"unknown function '{e.func}'", e)
            for a in e.args:
                self.expect(a, e.type, e)
        elif isinstance(e, ir.SpecialReg):
            if e.kind not in ir.SPECIAL_REGS or e.dim not in (0, 1, 2):
                self.fail(f"bad special register {e.kind}({e.dim})", e)
        elif isinstance(e, ir.Atomic):
            if e.op not in ir.ATOMIC_OPS:
                self.fail(f"unknown atomic '{e.op}'", e)
            self.memory(e.base, e.index, e)
            self.expect(e.value, e.type, e)
            if (e.compare is not None) != (e.op == "cas"):
                self.fail("compare operand is required exactly for cas", e)
            if e.compare is not None:
                self.expect(e.compare, e.type, e)
        elif isinstance(e, ir.Subgroup):
            self.subgroup(e)
        elif isinstance(e, ir.WgReg):
            hf = self.fn.hopper
            if hf is None or (e.name not in hf.accs and e.name not in hf.vecs):
                self.fail(f"register of undeclared warpgroup accumulator or row vector '{e.name}'", e)
            self.expect(e.index, i32, e)
        else:
            self.fail(f"unknown expression {type(e).__name__}", e)

    def subgroup(self, e):
        if e.op not in ir.SUBGROUP_OPS:
            self.fail(f"unknown subgroup op '{e.op}'", e)
        if e.collective:
            if not self.collective_ok:
                self.fail(f"subgroup_{e.op} must be the whole right-hand side of an assignment", e)
            self.collective_ok = False
        want = {"size": 0, "local_id": 0, "id": 0, "shuffle": 2, "shuffle_xor": 2}.get(e.op, 1)
        if len(e.args) != want:
            self.fail(f"subgroup_{e.op} takes {want} operands, got {len(e.args)}", e)
        for a in e.args:
            self.expr(a)
        if e.op in ("any", "all") and e.args[0].type != bool_:
            self.fail(f"subgroup_{e.op} needs a bool operand", e)
        if e.op in ("shuffle", "shuffle_xor") and e.args[1].type != i32:
            self.fail(f"the lane of subgroup_{e.op} must be i32", e)


def verify(fn: ir.Function) -> ir.Function:
    _Verifier(fn).run()
    return fn
