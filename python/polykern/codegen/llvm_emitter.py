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

The statements are :mod:`.llvm_stmts`', the memory accesses and expressions :mod:`.llvm_exprs`' (mixins of
:class:`LLVMKernelEmitter`); the types are :mod:`.llvm_types`', the storage of values :mod:`.llvm_storage`'.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional

from llvmlite import ir as ll

from ..errors import CompileError
from ..ir import nodes as N
from ..ir.types import ArrayType, BufferType, ScalarType
from .llvm_exprs import ExpressionEmitter
from .llvm_f16 import f16_libcall_ir
from .llvm_stmts import StatementEmitter
from .llvm_storage import AllocaInAS, ArrayStorage, LoopTarget, Slot
from .llvm_target import MODULE_NAME
from .llvm_types import I1, I8, I32, I64, VOID, mem_type, type_suffix, value_type

__all__ = ["LLVMKernelEmitter"]

_HALF_RE = re.compile(r"\bhalf\b")
_FLOAT_INTRINSIC = {"sqrt": "llvm.sqrt", "exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log",
                    "log2": "llvm.log2", "sin": "llvm.sin", "cos": "llvm.cos", "tanh": "llvm.tanh",
                    "floor": "llvm.floor", "ceil": "llvm.ceil", "abs": "llvm.fabs", "pow": "llvm.pow",
                    "min": "llvm.minnum", "max": "llvm.maxnum", "fma": "llvm.fma"}


class LLVMKernelEmitter(StatementEmitter, ExpressionEmitter):
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
            instr = AllocaInAS(self.abuilder.block, ty, count, name, self.PRIVATE_AS, align)
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
