"""The statements of :class:`polykern.codegen.llvm_emitter.LLVMKernelEmitter` (a mixin of it): blocks,
pk.vload/pk.vstore groups as vector accesses, assignments and stores, ``pk.debug_print``, structured
control flow with break/continue/early return, barriers."""
from __future__ import annotations

from typing import List

from llvmlite import ir as ll

from ..errors import CompileError
from ..ir import debug_print
from ..ir import nodes as N
from ..ir.types import ScalarType
from ..ir.vector import MAX_VECTOR_BYTES, VecGroup, iter_groups
from .llvm_storage import LoopTarget
from .llvm_types import I8, I32, mem_type, value_type

__all__ = ["StatementEmitter"]


class StatementEmitter:
    """Statement emission; the state (``builder``, ``slots``, ``loops``, ...) and the hooks
    (``emit_barrier``, ``emit_return``, ``mark_access``, ...) are :class:`LLVMKernelEmitter`'s."""

    # ------------------------------------------------------------------ statements
    def emit_block(self, stmts: List[N.Stmt]) -> None:
        for group, part in iter_groups(stmts):
            if self.builder.block.is_terminated:
                return  # code after break/continue/return is dead
            if group is not None and self.vector_access(group):
                continue
            for s in part:
                if self.builder.block.is_terminated:
                    return
                self.emit_stmt(s)

    def vector_access(self, g: VecGroup) -> bool:
        """One ``<n x T>`` load/store, aligned to its size, for a pk.vload/pk.vstore group of a buffer
        (ir/vector.py; the launch checked the buffer's alignment). False: emit the scalar statements."""
        st = g.base.type.elem
        if st.is_bool or st.name == "f16" or g.n * st.nbytes > MAX_VECTOR_BYTES or g.base.name not in self.buffers:
            return False
        ptr, _ = self.buffers[g.base.name]
        vty = ll.VectorType(mem_type(st), g.n)
        vptr = self.builder.gep(ptr, [self.index64(g.index)], inbounds=True, source_etype=vty)
        align = g.n * st.nbytes
        if g.kind == "load":
            vec = self.builder.load(vptr, typ=vty, align=align)
            self.mark_access(vec, g.base.name)
            for j, dest in enumerate(g.dests):
                lane = self.builder.extract_element(vec, ll.Constant(ll.IntType(32), j))
                self.slots[dest].store(self, lane)
        else:
            vec = ll.Constant(vty, ll.Undefined)
            for j, v in enumerate(g.values):
                vec = self.builder.insert_element(vec, self.expr(v), ll.Constant(ll.IntType(32), j))
            self.mark_access(self.builder.store(vec, vptr, align=align), g.base.name)
        return True

    def emit_stmt(self, s: N.Stmt) -> None:
        meth = getattr(self, f"stmt_{type(s).__name__}", None)
        if meth is None:
            raise CompileError(f"{type(self).__name__}: unsupported statement {type(s).__name__}")
        meth(s)

    def stmt_Assign(self, s: N.Assign) -> None:
        slot = self.slots.get(s.name)
        if slot is None:
            raise CompileError(f"assignment to undeclared variable {s.name!r}")
        slot.store(self, self.expr(s.value))

    def stmt_Store(self, s: N.Store) -> None:
        ptr, st = self.element_ptr(s.base, s.index)
        self.mark_access(self.builder.store(self.to_mem(self.expr(s.value), st), ptr), s.base.name)

    def stmt_ExprStmt(self, s: N.ExprStmt) -> None:
        self.expr(s.expr)

    def stmt_Print(self, s: N.Print) -> None:
        types = [a.type for a in s.args]
        fmt = debug_print.c_format(debug_print.parse(s.fmt), types, "ll")
        self.emit_print(self.format_string(fmt), [self.expr(a) for a in s.args])

    def format_string(self, text: str) -> ll.Value:
        """A generic pointer to ``text`` as a NUL-terminated constant of the module."""
        data = bytearray(text.encode("ascii") + b"\0")
        ty = ll.ArrayType(I8, len(data))
        gv = ll.GlobalVariable(self.module, ty, name=self.module.get_unique_name("pk.fmt"),
                               addrspace=self.PRINT_FORMAT_AS)
        gv.initializer = ll.Constant(ty, data)
        gv.global_constant = True
        gv.linkage = "private"
        gv.unnamed_addr = True
        if self.PRINT_FORMAT_AS == 0:
            return gv
        return self.builder.addrspacecast(gv, ll.PointerType())

    @staticmethod
    def print_values(b: ll.IRBuilder, values: List[ll.Value]) -> List[ll.Value]:
        """The arguments as C passes them to a variadic function: floats as doubles."""
        return [b.fpext(v, ll.DoubleType()) if isinstance(v.type, ll.FloatType) else v for v in values]

    def emit_print(self, fmt: ll.Value, values: List[ll.Value]) -> None:
        """``printf(fmt, values...)`` of the C library the kernel is linked against."""
        fn = self.module.globals.get("printf")
        if fn is None:
            fn = ll.Function(self.module, ll.FunctionType(I32, [ll.PointerType()], var_arg=True), name="printf")
        self.builder.call(fn, [fmt] + self.print_values(self.builder, values))

    def stmt_If(self, s: N.If) -> None:
        cond = self.expr(s.cond)
        then_bb = self.new_block("if.then")
        else_bb = self.new_block("if.else") if s.orelse else None
        end_bb = self.new_block("if.end")
        self.builder.cbranch(cond, then_bb, else_bb or end_bb)
        self.builder.position_at_end(then_bb)
        self.emit_block(s.then)
        if not self.builder.block.is_terminated:
            self.builder.branch(end_bb)
        if else_bb is not None:
            self.builder.position_at_end(else_bb)
            self.emit_block(s.orelse)
            if not self.builder.block.is_terminated:
                self.builder.branch(end_bb)
        self.builder.position_at_end(end_bb)

    def stmt_For(self, s: N.For) -> None:
        b = self.builder
        slot = self.slots[s.var]
        st = self.fn.locals[s.var]
        start = self.expr(s.start)
        stop = self.expr(s.stop)  # evaluated once, like Python's range()
        slot.store(self, start)
        head, body, latch, end = (self.new_block(n) for n in ("for.head", "for.body", "for.latch", "for.end"))
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(self.for_cond(slot.load(self), stop, st, s.step), body, end)
        b.position_at_end(body)
        self.loops.append(LoopTarget(end, latch))
        self.emit_block(s.body)
        self.loops.pop()
        if not b.block.is_terminated:
            b.branch(latch)
        b.position_at_end(latch)
        slot.store(self, b.add(slot.load(self), ll.Constant(value_type(st), s.step)))
        b.branch(head)
        b.position_at_end(end)

    def for_cond(self, v, stop, st: ScalarType, step: int):
        op = "<" if step > 0 else ">"
        if st.code == 0:
            return self.builder.icmp_signed(op, v, stop)
        return self.builder.icmp_unsigned(op, v, stop)

    def stmt_While(self, s: N.While) -> None:
        b = self.builder
        head, body, end = self.new_block("while.head"), self.new_block("while.body"), self.new_block("while.end")
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(self.expr(s.cond), body, end)
        b.position_at_end(body)
        self.loops.append(LoopTarget(end, head))
        self.emit_block(s.body)
        self.loops.pop()
        if not b.block.is_terminated:
            b.branch(head)
        b.position_at_end(end)

    def stmt_Break(self, s: N.Break) -> None:
        if not self.loops:
            raise CompileError("'break' outside a loop")
        self.loops[-1].do_break(self)

    def stmt_Continue(self, s: N.Continue) -> None:
        if not self.loops:
            raise CompileError("'continue' outside a loop")
        self.loops[-1].do_continue(self)

    def stmt_Return(self, s: N.Return) -> None:
        self.emit_return()

    def stmt_Barrier(self, s: N.Barrier) -> None:
        self.emit_barrier()
