"""The shared IR -> LLVM IR (llvmlite.ir) emitter of every LLVM-based backend.

:class:`LLVMKernelEmitter` turns verified ``ir.Function``s into one ``llvmlite.ir.Module``.
It owns everything that is the same on every LLVM target — scalar types, expressions,
integer arithmetic (division by 0 and MIN / -1 guarded, shift amounts masked on the IR before:
passes/legalize_numerics.py), casts between every pair of scalar types, short-circuit
``land``/``lor``, structured control flow with break/continue/early return, loads, stores,
atomics — and asks its subclass, through small hook methods, for what differs:

=============================  ===============================================================
hook                           what a backend decides
=============================  ===============================================================
``GLOBAL_AS/SHARED_AS/...``    address spaces of buffers, workgroup memory and private memory
``declare_kernel``             the kernel's symbol, signature and calling convention
``hidden_param_types``         parameters after the user's (nvptx: Hopper tensor maps)
``finish_kernel``              kernel metadata (``nvvm.annotations``, attributes, ...)
``param_type/param_value``     how a parameter is passed (bool as i8, buffers as pointers)
``read_special_reg``           local_id / group_id / local_size / num_groups (``global_id`` is
                               derived from them unless ``special_reg`` is overridden)
``emit_barrier``               workgroup barrier (``llvm.nvvm.barrier0``, ``s_barrier``, ...)
``emit_return``                early return (``ret void`` on a GPU)
``alloc_shared/alloc_local``   where shared and private arrays live
``mark_access``                metadata on element loads/stores (CPU: parallel access groups)
``zero_locals``                how locals and private arrays start at zero (GPU style: stores)
``math_call``                  math functions: LLVM intrinsics by default, or libdevice/ocml
``ATOMIC_ORDERING``            ordering of atomicrmw/cmpxchg (relaxed, as on GPUs)
``ATOMIC_SCOPES``              address space -> LLVM syncscope of atomics on it (none: system scope)
``F16_LIBCALLS``               append soft f16 conversion routines (x86 without F16C) to
                               modules that use f16
``emit_print``                 ``pk.debug_print``: C's ``printf`` by default (the CPU), ``vprintf`` on
                               NVPTX; ``PRINT_FORMAT_AS`` is the format strings' address space
=============================  ===============================================================

Value conventions: ``bool`` is ``i1`` in registers and ``i8`` in memory and in kernel
parameters; ``f16`` is LLVM ``half``. Scalar locals live in allocas (mem2reg promotes
them); a subclass may give a variable other storage (``Slot``), which is how the CPU
work-item loops keep per-work-item values alive across barriers.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional

from llvmlite import ir as ll

from ..errors import CompileError, KernelTypeError
from ..ir import debug_print
from ..ir import nodes as N
from ..ir.bfloat16 import f32_to_bits
from ..ir.types import ArrayType, BufferType, ScalarType, bf16, f32
from ..ir.vector import MAX_VECTOR_BYTES, VecGroup, iter_groups
from .llvm_f16 import f16_libcall_ir
from .llvm_target import MODULE_NAME

__all__ = ["LLVMKernelEmitter", "Slot", "ArrayStorage", "LoopTarget", "value_type", "mem_type",
           "I1", "I8", "I16", "I32", "I64"]

I1, I8, I16, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(16), ll.IntType(32), ll.IntType(64)
VOID = ll.VoidType()
_HALF_RE = re.compile(r"\bhalf\b")
_FLOAT_TYPES = {16: ll.HalfType(), 32: ll.FloatType(), 64: ll.DoubleType()}
_ICMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_FLOAT_INTRINSIC = {"sqrt": "llvm.sqrt", "exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log",
                    "log2": "llvm.log2", "sin": "llvm.sin", "cos": "llvm.cos", "tanh": "llvm.tanh",
                    "floor": "llvm.floor", "ceil": "llvm.ceil", "abs": "llvm.fabs", "pow": "llvm.pow",
                    "min": "llvm.minnum", "max": "llvm.maxnum", "fma": "llvm.fma"}


def value_type(st: ScalarType) -> ll.Type:
    """The LLVM type of a value of scalar type ``st`` in registers."""
    if st.is_bool:
        return I1
    if st == bf16:  # bits (passes/legalize_f16.py converts them)
        return ll.IntType(16)
    if st.is_float:
        return _FLOAT_TYPES[st.bits]
    return ll.IntType(st.bits)


def mem_type(st: ScalarType) -> ll.Type:
    """The LLVM type of ``st`` in memory (bool is a byte)."""
    return I8 if st.is_bool else value_type(st)


def type_suffix(st: ScalarType) -> str:
    """Overload suffix of an intrinsic: f16/f32/f64, i1/i8/.../i64."""
    if st.is_float:
        return f"f{st.bits}"
    return "i1" if st.is_bool else f"i{st.bits}"


class Slot:
    """Storage of one scalar variable.

    ``ptr`` is an alloca (one value) or, when ``per_item`` is true, the base of an array with one
    value per work-item that is indexed by the emitter's current ``item`` index. ``value`` (with
    ``ptr`` None) is an immutable value: a scalar parameter.
    """

    __slots__ = ("ptr", "ty", "per_item", "value", "name")

    def __init__(self, name: str, ty: ll.Type, ptr=None, per_item: bool = False, value=None):
        self.name, self.ty, self.ptr, self.per_item, self.value = name, ty, ptr, per_item, value

    def address(self, em: "LLVMKernelEmitter"):
        if not self.per_item:
            return self.ptr
        return em.builder.gep(self.ptr, [em.item], inbounds=True, source_etype=self.ty)

    def load(self, em: "LLVMKernelEmitter"):
        if self.ptr is None:
            return self.value
        return em.builder.load(self.address(em), typ=self.ty)

    def store(self, em: "LLVMKernelEmitter", value) -> None:
        if self.ptr is None:
            raise CompileError(f"cannot assign to kernel parameter {self.name!r}")
        em.builder.store(value, self.address(em))


class ArrayStorage:
    """A shared or private array: base pointer, element type, and (private arrays of the CPU
    work-item loops) whether each work-item owns a copy at ``item * size``."""

    __slots__ = ("ptr", "st", "size", "per_item")

    def __init__(self, ptr, st: ScalarType, size: int, per_item: bool = False):
        self.ptr, self.st, self.size, self.per_item = ptr, st, size, per_item


class LoopTarget:
    """Where ``break`` and ``continue`` go inside a loop."""

    def __init__(self, brk, cont):
        self.brk, self.cont = brk, cont

    def do_break(self, em: "LLVMKernelEmitter") -> None:
        em.builder.branch(self.brk)

    def do_continue(self, em: "LLVMKernelEmitter") -> None:
        em.builder.branch(self.cont)


class _AllocaInAS(ll.instructions.Instruction):
    """``alloca`` in a non-zero address space (AMDGPU private memory is addrspace(5))."""

    def __init__(self, parent, typ, count, name, addrspace, align):
        super().__init__(parent, ll.PointerType(addrspace=addrspace), "alloca", [count] if count else (), name)
        self.allocated_type, self.addrspace, self.align = typ, addrspace, align

    def descr(self, buf):
        buf.append(f"alloca {self.allocated_type}")
        if self.operands:
            op, = self.operands
            buf.append(f", {op.type} {op.get_reference()}")
        if self.align:
            buf.append(f", align {self.align}")
        buf.append(f", addrspace({self.addrspace})\n")


class LLVMKernelEmitter:
    """IR -> llvmlite.ir for one module. The base class emits GPU-style kernels (one work-item
    per invocation); a backend subclasses it and fills in the hooks listed in the module doc."""

    GLOBAL_AS = 0
    SHARED_AS = 0
    PRIVATE_AS = 0
    ATOMIC_ORDERING = "monotonic"
    ATOMIC_SCOPES: dict = {}
    F16_LIBCALLS = False
    ARRAY_ALIGN = 16
    PRINT_FORMAT_AS = 0

    def __init__(self, triple: str = "", data_layout: str = "", module_name: str = MODULE_NAME):
        self.module = ll.Module(name=module_name)
        self.module.triple = triple
        self.module.data_layout = data_layout
        self.extra_ir: List[str] = []
        self._reset_function_state()

    # ------------------------------------------------------------------ driver
    def emit(self, funcs: List[N.Function]) -> "LLVMKernelEmitter":
        for fn in funcs:
            self.emit_function(fn)
        return self

    def render(self) -> str:
        """The module as LLVM IR text (plus any appended support routines). The f16 conversion
        routines (``F16_LIBCALLS``) are appended only to modules that use ``half``: optimizing and
        compiling them costs as much as a small kernel."""
        text = str(self.module)
        extra = list(self.extra_ir)
        if self.F16_LIBCALLS and _HALF_RE.search(text):
            extra.insert(0, f16_libcall_ir())
        return text + "".join(extra)

    def _reset_function_state(self) -> None:
        self.fn: Optional[N.Function] = None
        self.llfn: Optional[ll.Function] = None
        self.builder: Optional[ll.IRBuilder] = None
        self.abuilder: Optional[ll.IRBuilder] = None
        self.slots: Dict[str, Slot] = {}
        self.arrays: Dict[str, ArrayStorage] = {}
        self.buffers: Dict[str, tuple] = {}
        self.loops: List[LoopTarget] = []
        self.item = None  # i64 index of the current work-item (per-work-item storage)
        self._sreg_cache: Dict[tuple, ll.Value] = {}

    def emit_function(self, fn: N.Function) -> ll.Function:
        """GPU-style: one invocation is one work-item."""
        self._reset_function_state()
        self.fn = fn
        llfn = self.declare_kernel(fn)
        self.open_body(llfn)
        self.bind_params(fn, llfn.args)
        for name, at in fn.arrays.items():
            self.arrays[name] = ArrayStorage(self.alloc_shared(name, at) if at.scope == "shared"
                                             else self.alloc_local(name, at), at.elem, at.size)
        for name, st in fn.locals.items():
            self.slots[name] = Slot(name, value_type(st), self.alloca(value_type(st), name=name))
        self.zero_locals(fn)
        self.emit_block(fn.body)
        if not self.builder.block.is_terminated:
            self.builder.ret_void()
        self.close_body()
        self.finish_kernel(fn, llfn)
        return llfn

    def zero_locals(self, fn: N.Function) -> None:
        """Scalar locals and private arrays start at zero (the IR's contract; a local assigned on
        one branch only reads as zero on the other). Stores that a later assignment overwrites
        before any read are removed by LLVM, so kernels that never read an unassigned local are
        unchanged. Shared arrays stay uninitialized."""
        for name in fn.locals:
            slot = self.slots[name]
            slot.store(self, ll.Constant(slot.ty, None))
        for name, at in fn.arrays.items():
            if at.scope == "shared":
                continue
            ptr = self.arrays[name].ptr
            space = getattr(ptr.type, "addrspace", 0)
            fn_ = self.declare(f"llvm.memset.p{space}.i64", ll.VoidType(),
                               [ll.PointerType(addrspace=space), I8, I64, I1])
            self.builder.call(fn_, [ptr, ll.Constant(I8, 0), ll.Constant(I64, at.size * at.elem.nbytes),
                                    ll.Constant(I1, 0)])

    # ------------------------------------------------------------------ hooks
    def kernel_symbol(self, fn: N.Function) -> str:
        return fn.name

    def param_type(self, p: N.Param) -> ll.Type:
        if isinstance(p.type, BufferType):
            return ll.PointerType(addrspace=self.GLOBAL_AS)
        return mem_type(p.type)

    def param_value(self, p: N.Param, raw: ll.Value) -> ll.Value:
        """Turn the raw parameter into the value the body uses (bool byte -> i1)."""
        if isinstance(p.type, ScalarType) and p.type.is_bool:
            return self.builder.icmp_unsigned("!=", raw, ll.Constant(I8, 0))
        return raw

    def hidden_param_types(self, fn: N.Function) -> List[ll.Type]:
        """Types of the parameters the kernel takes after the user's (none by default)."""
        return []

    def declare_kernel(self, fn: N.Function) -> ll.Function:
        fty = ll.FunctionType(VOID, [self.param_type(p) for p in fn.params] + self.hidden_param_types(fn))
        llfn = ll.Function(self.module, fty, name=self.kernel_symbol(fn))
        for arg, p in zip(llfn.args, fn.params):
            arg.name = p.name
        return llfn

    def finish_kernel(self, fn: N.Function, llfn: ll.Function) -> None:
        """Add calling-convention attributes and metadata after the body exists."""

    def read_special_reg(self, kind: str, dim: int) -> ll.Value:
        """An i32: local_id, group_id, local_size or num_groups of dimension ``dim``."""
        raise CompileError(f"{type(self).__name__} does not implement special register {kind}.{dim}")

    def special_reg(self, kind: str, dim: int) -> ll.Value:
        if kind == "global_id":
            g = self.read_special_reg("group_id", dim)
            s = self.read_special_reg("local_size", dim)
            lid = self.read_special_reg("local_id", dim)
            return self.builder.add(self.builder.mul(g, s), lid, name=f"gid{dim}")
        return self.read_special_reg(kind, dim)

    def emit_barrier(self) -> None:
        raise CompileError(f"{type(self).__name__} does not implement barrier()")

    def mark_access(self, instr, base: str) -> None:
        """Called with every load/store of a buffer or array element (``base`` names it), e.g. to
        attach alias or access-group metadata. Default: nothing."""

    def emit_return(self) -> None:
        self.builder.ret_void()

    def alloc_shared(self, name: str, at: ArrayType):
        """Workgroup memory: a module-level variable in the shared address space by default."""
        if at.dynamic:
            return self.alloc_dynamic_shared(f"{self.fn.name}.{name}", at)
        ty = ll.ArrayType(mem_type(at.elem), at.size)
        gv = ll.GlobalVariable(self.module, ty, name=f"{self.fn.name}.{name}", addrspace=self.SHARED_AS)
        gv.linkage = "internal"
        gv.initializer = ll.Constant(ty, ll.Undefined)
        gv.align = self.ARRAY_ALIGN
        zero = ll.Constant(I32, 0)
        return gv.gep([zero, zero])  # a pointer to the first element, like every other array base

    def alloc_dynamic_shared(self, gname: str, at: ArrayType):
        """The pk.shared_dynamic array (ir/dynamic_shared.py): an external ``[0 x T]`` in the shared
        address space, which the GPU's loader places at the launch's dynamic shared memory (PTX:
        ``.extern .shared``)."""
        ty = ll.ArrayType(mem_type(at.elem), 0)
        gv = ll.GlobalVariable(self.module, ty, name=gname, addrspace=self.SHARED_AS)
        gv.linkage = "external"
        gv.align = 16
        zero = ll.Constant(I32, 0)
        return gv.gep([zero, zero])

    def alloc_local(self, name: str, at: ArrayType):
        return self.alloca(mem_type(at.elem), ll.Constant(I64, at.size), name=name, align=self.ARRAY_ALIGN)

    def math_call(self, func: str, st: ScalarType, args: List[ll.Value]) -> ll.Value:
        """Math builtins. Floats use LLVM intrinsics (the backend lowers them to instructions or
        libm calls); override to call a device library instead."""
        b = self.builder
        if func in N.FAST_MATH:  # only those numerics.FAST_MATH lists for the target (passes/fast_math.py)
            return self.fast_math_call(N.FAST_MATH[func], st, args)
        if st.is_float:
            if func == "rsqrt":
                return b.fdiv(ll.Constant(value_type(st), 1.0), self.math_call("sqrt", st, args))
            return self.call_intrinsic(f"{_FLOAT_INTRINSIC[func]}.{type_suffix(st)}", value_type(st), args)
        signed = st.code == 0
        if func == "abs":
            if not signed:
                return args[0]
            return self.call_intrinsic(f"llvm.abs.{type_suffix(st)}", value_type(st),
                                       [args[0], ll.Constant(I1, 0)])
        if func in ("min", "max"):
            name = ("s" if signed else "u") + func
            return self.call_intrinsic(f"llvm.{name}.{type_suffix(st)}", value_type(st), args)
        raise CompileError(f"math function {func}() is not defined for {st}")

    def fast_math_call(self, op: str, st: ScalarType, args: List[ll.Value]) -> ll.Value:
        """``fast_<op>`` of f32 (``op`` is ``div`` or a math builtin), for a target whose entry in
        ``polykern.numerics.FAST_MATH`` lists ``op``; an emitter with such an entry overrides this."""
        raise CompileError(f"{type(self).__name__} has no fast-math lowering of {op}() on {st} "
                           "(polykern.numerics.FAST_MATH)")

    # ------------------------------------------------------------------ function scaffolding
    def open_body(self, llfn: ll.Function) -> None:
        """An ``allocas`` block (left open for :meth:`alloca`) and the first body block."""
        self.llfn = llfn
        ablock = llfn.append_basic_block("allocas")
        body = llfn.append_basic_block("body")
        self.abuilder = ll.IRBuilder(ablock)
        self.builder = ll.IRBuilder(body)
        self._body_entry = body

    def close_body(self) -> None:
        self.abuilder.branch(self._body_entry)

    def bind_params(self, fn: N.Function, args) -> None:
        saved = self.builder
        self.builder = self.abuilder
        try:
            for p, raw in zip(fn.params, args):
                if isinstance(p.type, BufferType):
                    self.buffers[p.name] = (raw, p.type.elem)
                else:
                    self.slots[p.name] = Slot(p.name, value_type(p.type), value=self.param_value(p, raw))
        finally:
            self.builder = saved

    def alloca(self, ty: ll.Type, count=None, name: str = "", align: Optional[int] = None):
        """An alloca in the entry block (in ``PRIVATE_AS``)."""
        if self.PRIVATE_AS:
            instr = _AllocaInAS(self.abuilder.block, ty, count, name, self.PRIVATE_AS, align)
            self.abuilder._insert(instr)
            return instr
        instr = self.abuilder.alloca(ty, size=count, name=name)
        if align:
            instr.align = align
        return instr

    def new_block(self, name: str) -> ll.Block:
        return self.llfn.append_basic_block(name)

    def declare(self, name: str, ret: ll.Type, arg_types: List[ll.Type]) -> ll.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ll.Function(self.module, ll.FunctionType(ret, arg_types), name=name)
        return fn

    def call_intrinsic(self, name: str, ret: ll.Type, args: List[ll.Value]) -> ll.Value:
        return self.builder.call(self.declare(name, ret, [a.type for a in args]), args)

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

    # ------------------------------------------------------------------ memory
    def index64(self, index: N.Expr) -> ll.Value:
        v = self.expr(index)
        st = index.type
        if v.type.width == 64:
            return v
        return self.builder.sext(v, I64) if st.code == 0 else self.builder.zext(v, I64)

    def element_ptr(self, base: N.Var, index: N.Expr):
        """(pointer to ``base[index]``, element scalar type)."""
        name = base.name
        idx = self.index64(index)
        if name in self.buffers:
            ptr, st = self.buffers[name]
        elif name in self.arrays:
            arr = self.arrays[name]
            ptr, st = arr.ptr, arr.st
            if arr.per_item:
                idx = self.builder.add(self.builder.mul(self.item, ll.Constant(I64, arr.size)), idx)
        else:
            raise CompileError(f"{name!r} is not a buffer or array")
        return self.builder.gep(ptr, [idx], inbounds=True, source_etype=mem_type(st)), st

    def to_mem(self, v: ll.Value, st: ScalarType) -> ll.Value:
        return self.builder.zext(v, I8) if st.is_bool else v

    def from_mem(self, v: ll.Value, st: ScalarType) -> ll.Value:
        return self.builder.icmp_unsigned("!=", v, ll.Constant(I8, 0)) if st.is_bool else v

    # ------------------------------------------------------------------ expressions
    def expr(self, e: N.Expr) -> ll.Value:
        meth = getattr(self, f"expr_{type(e).__name__}", None)
        if meth is None:
            raise CompileError(f"{type(self).__name__}: unsupported expression {type(e).__name__}")
        return meth(e)

    def const(self, value, st: ScalarType) -> ll.Constant:
        t = value_type(st)
        if st.is_bool:
            return ll.Constant(I1, 1 if value else 0)
        if st == bf16:
            return ll.Constant(t, int(f32_to_bits(value)))
        if st.is_float:
            return ll.Constant(t, float(st.numpy.type(value)))
        v = int(value) & ((1 << st.bits) - 1)
        if v >= 1 << (st.bits - 1):
            v -= 1 << st.bits
        return ll.Constant(t, v)

    def expr_Const(self, e: N.Const) -> ll.Value:
        return self.const(e.value, e.ctype)

    def expr_Var(self, e: N.Var) -> ll.Value:
        slot = self.slots.get(e.name)
        if slot is None:
            raise CompileError(f"{e.name!r} is not a scalar variable")
        return slot.load(self)

    def expr_SpecialReg(self, e: N.SpecialReg) -> ll.Value:
        return self.special_reg(e.kind, e.dim)

    def expr_Subgroup(self, e: N.Subgroup) -> ll.Value:
        return self.subgroup(e)

    def subgroup(self, e: N.Subgroup) -> ll.Value:
        """``pk.subgroup_<op>`` (a collective is the whole value of an Assign: ir.Subgroup)."""
        raise KernelTypeError(f"{type(self).__name__}: subgroup_{e.op}() is not supported by this backend", e.loc)

    def expr_Load(self, e: N.Load) -> ll.Value:
        ptr, st = self.element_ptr(e.base, e.index)
        v = self.builder.load(ptr, typ=mem_type(st))
        self.mark_access(v, e.base.name)
        return self.from_mem(v, st)

    def expr_Select(self, e: N.Select) -> ll.Value:
        return self.builder.select(self.expr(e.cond), self.expr(e.a), self.expr(e.b))

    def expr_UnaryOp(self, e: N.UnaryOp) -> ll.Value:
        v = self.expr(e.a)
        st = e.a.type
        if e.op == "neg":
            return self.builder.fneg(v) if st.is_float else self.builder.neg(v)
        if e.op in ("not", "invert"):
            if st.is_float:
                raise CompileError(f"'{e.op}' is not defined for {st}")
            return self.builder.not_(v)
        raise CompileError(f"unknown unary operator {e.op!r}")

    def expr_BinOp(self, e: N.BinOp) -> ll.Value:
        if e.op in ("land", "lor"):
            return self._short_circuit(e)
        a, b = self.expr(e.a), self.expr(e.b)
        st = e.a.type
        bld = self.builder
        if e.op in _ICMP:
            if st.is_float:
                if e.op == "ne":  # C: NaN != x is true
                    return bld.fcmp_unordered("!=", a, b)
                return bld.fcmp_ordered(_ICMP[e.op], a, b)
            if st.code == 0:
                return bld.icmp_signed(_ICMP[e.op], a, b)
            return bld.icmp_unsigned(_ICMP[e.op], a, b)
        if st.is_float:
            if e.op == "add":
                return bld.fadd(a, b)
            if e.op == "sub":
                return bld.fsub(a, b)
            if e.op == "mul":
                return bld.fmul(a, b)
            if e.op == "div":
                return bld.fdiv(a, b)
            if e.op == "floordiv":
                return self.math_call("floor", st, [bld.fdiv(a, b)])
            if e.op == "mod":
                return bld.frem(a, b)
            raise CompileError(f"operator {e.op!r} is not defined for {st}")
        simple = {"add": bld.add, "sub": bld.sub, "mul": bld.mul, "and": bld.and_, "or": bld.or_,
                  "xor": bld.xor}
        if e.op in simple:
            return simple[e.op](a, b)
        # the divisor is never 0 nor -1 under MIN, the amount below the width (passes/legalize_numerics.py)
        if e.op == "mod":
            return bld.srem(a, b) if st.code == 0 else bld.urem(a, b)
        if e.op in ("div", "floordiv"):
            return bld.sdiv(a, b) if st.code == 0 else bld.udiv(a, b)
        if e.op == "shl":
            return bld.shl(a, b)
        if e.op == "shr":
            return bld.ashr(a, b) if st.code == 0 else bld.lshr(a, b)
        raise CompileError(f"unknown binary operator {e.op!r}")

    def _short_circuit(self, e: N.BinOp) -> ll.Value:
        bld = self.builder
        a = self.expr(e.a)
        start = bld.block
        rhs_bb, end_bb = self.new_block(f"{e.op}.rhs"), self.new_block(f"{e.op}.end")
        if e.op == "land":
            bld.cbranch(a, rhs_bb, end_bb)
        else:
            bld.cbranch(a, end_bb, rhs_bb)
        bld.position_at_end(rhs_bb)
        b = self.expr(e.b)
        rhs_end = bld.block
        bld.branch(end_bb)
        bld.position_at_end(end_bb)
        phi = bld.phi(I1)
        phi.add_incoming(ll.Constant(I1, 0 if e.op == "land" else 1), start)
        phi.add_incoming(b, rhs_end)
        return phi

    def expr_Cast(self, e: N.Cast) -> ll.Value:
        return self.cast(self.expr(e.a), e.a.type, e.to)

    def expr_Bitcast(self, e: N.Bitcast) -> ll.Value:
        """``ir.Bitcast``: a float and the integer of its width; a 16-bit float (half, or bf16's i16 bits) and
        the low half of an i32."""
        b, v = self.builder, self.expr(e.a)
        src, dst = e.a.type, e.to
        if src.bits == 16:  # -> u32, zero-extended
            return b.zext(v if src == bf16 else b.bitcast(v, ll.IntType(16)), I32)
        if dst.bits == 16:  # the u32's low half
            low = b.trunc(v, ll.IntType(16))
            return low if dst == bf16 else b.bitcast(low, value_type(dst))
        return b.bitcast(v, value_type(dst))

    def cast(self, v: ll.Value, src: ScalarType, dst: ScalarType) -> ll.Value:
        """C conversions between every pair of scalar types; float -> int saturates (NaN -> 0)."""
        b = self.builder
        if src == dst:
            return v
        if src == bf16 or dst == bf16:  # on the bits before the backend (passes/legalize_f16.py)
            raise CompileError(f"{type(self).__name__}: a {src} -> {dst} conversion reached the backend "
                               "(passes/legalize_f16.py writes bf16 conversions on the bits)")
        dty = value_type(dst)
        if dst.is_bool:
            if src.is_float:
                return b.fcmp_unordered("!=", v, ll.Constant(v.type, 0.0))
            return b.icmp_unsigned("!=", v, ll.Constant(v.type, 0))
        if src.is_bool:
            return b.uitofp(v, dty) if dst.is_float else b.zext(v, dty)
        if src.is_float and dst.is_float:
            if src.bits < dst.bits:
                return b.fpext(v, dty)
            return self.round_to_f16(v, dty) if dst.bits == 16 else b.fptrunc(v, dty)
        if src.is_float:  # -> int
            if src.bits == 16:  # exact, and avoids half -> int libcalls
                v, src = b.fpext(v, ll.FloatType()), f32
            kind = "fptosi" if dst.code == 0 else "fptoui"
            return self.call_intrinsic(f"llvm.{kind}.sat.{type_suffix(dst)}.{type_suffix(src)}", dty, [v])
        if dst.is_float:  # int -> float
            if dst.bits == 16:
                return self._int_to_f16(v, src, dty)
            return b.sitofp(v, dty) if src.code == 0 else b.uitofp(v, dty)
        if src.bits > dst.bits:
            return b.trunc(v, dty)
        if src.bits < dst.bits:
            return b.sext(v, dty) if src.code == 0 else b.zext(v, dty)
        return v  # same width, signedness only

    def _int_to_f16(self, v: ll.Value, src: ScalarType, dty: ll.Type) -> ll.Value:
        """An integer to f16 through f32: exact up to 65520, and every larger magnitude is inf in f16 either
        way (and no int -> half libcall). An integer that can reach 65520 arrives converted to f32 and clamped
        (passes/legalize_f16.py "clamp": LLVM's instcombine folds ``fpext(fptrunc(sitofp x))``)."""
        b = self.builder
        r = b.sitofp(v, ll.FloatType()) if src.code == 0 else b.uitofp(v, ll.FloatType())
        return self.round_to_f16(r, dty)

    def round_to_f16(self, v: ll.Value, dty: ll.Type) -> ll.Value:
        """An f32/f64 rounded once to f16 (``dty``): ``fptrunc``. Target kinds declaring the "clamp" f16
        rounding (passes/legalize_f16.py) get the value clamped to +-65520 in their IR first, so LLVM cannot
        fold a round trip past f16's range. A backend with its own instruction may override it (nvptx:
        ``cvt.rn.f16.f32`` as inline PTX, which LLVM cannot see through)."""
        return self.builder.fptrunc(v, dty)

    def expr_Call(self, e: N.Call) -> ll.Value:
        if e.func not in N.MATH_FUNCS:
            raise CompileError(f"unknown math function {e.func!r}")
        return self.math_call(e.func, e.type, [self.expr(a) for a in e.args])

    def expr_Atomic(self, e: N.Atomic) -> ll.Value:
        ptr, st = self.element_ptr(e.base, e.index)
        value = self.expr(e.value)
        compare = self.expr(e.compare) if e.compare is not None else None
        return self.atomic(e.op, ptr, st, value, compare)

    def atomic(self, op: str, ptr, st: ScalarType, value, compare=None) -> ll.Value:
        """Real LLVM atomics on ``ptr``; returns the old value."""
        b = self.builder
        order = self.ATOMIC_ORDERING
        scope = self.ATOMIC_SCOPES.get(ptr.type.addrspace)
        if scope:
            # llvmlite prints the ordering verbatim after the operands, where LLVM's syntax puts
            # [syncscope("...")] <ordering>, so the scope rides along with the ordering.
            order = f'syncscope("{scope}") {order}'
        mty = mem_type(st)
        if op == "cas":
            if st.is_float:  # cmpxchg needs integers: compare bit patterns
                ity = ll.IntType(st.bits)
                cmp_i, val_i = b.bitcast(compare, ity), b.bitcast(value, ity)
                res = b.cmpxchg(ptr, cmp_i, val_i, order, "monotonic")
                return b.bitcast(b.extract_value(res, 0), value_type(st))
            res = b.cmpxchg(ptr, self.to_mem(compare, st), self.to_mem(value, st), order, "monotonic")
            return self.from_mem(b.extract_value(res, 0), st)
        if op == "add":
            name = "fadd" if st.is_float else "add"
        elif op in ("min", "max"):
            name = ("f" if st.is_float else "" if st.code == 0 else "u") + op
        elif op == "xchg":
            name = "xchg"
        else:
            raise CompileError(f"unknown atomic operation {op!r}")
        old = b.atomic_rmw(name, ptr, self.to_mem(value, st), order)
        return self.from_mem(old, st) if old.type == mty else old
