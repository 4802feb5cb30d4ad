"""Target ``nvptx``: CUDA modules through LLVM's NVPTX backend (no CUDA toolkit needed).

``build(funcs, target)`` emits LLVM IR with the shared emitter (:class:`NVPTXEmitter`), lets LLVM's
NVPTX backend (``nvptx64-nvidia-cuda``, cpu = ``-arch``, ``+ptxNN`` = the lowest PTX ISA version the
arch needs, never below 7.8, all accepted by ptxas 13.0) turn it into PTX, and returns
``create_with_fallback("cuda", ptx_bytes, "ptx", fmap, {"ptx": ptx, "llvm": optimized_ir},
fallback_cls=CUDAFallbackModule)``. ``fmap`` comes from ``functions.function_map`` (``entry`` = the PTX
``.entry`` name, ``arch``), so the CUDA runtime loads this PTX exactly like the CUDA C path's.

Lowering: kernels use the ``ptx_kernel`` calling convention; buffers are ``addrspace(1)`` pointers,
shared arrays ``addrspace(3)`` globals, private arrays allocas (NVPTX puts them in local memory);
special registers are ``llvm.nvvm.read.ptx.sreg.*``; ``barrier()`` is ``llvm.nvvm.barrier0``
(``bar.sync 0``); atomics are relaxed (``monotonic``) with ``syncscope("device")`` on global memory
and ``syncscope("block")`` on shared memory, like CUDA's ``atomicAdd`` (f32 add is native).

Math: there is no libdevice here, so the transcendental functions LLVM cannot lower for NVPTX
(``exp log log2 sin cos tanh pow``; ``exp2`` too, for uniform accuracy) are expanded in IR from
IEEE operations only (fma, rint, division, integer and bit operations) by :class:`PortableMath`, in
f32 and f64 (f16 computes in f32). Measured against correctly rounded references by
``tests/test_nvptx_math.py`` (the same IR on the CPU) and ``tests/test_nvptx_device.py`` (on a GPU):
within 2 ulp everywhere, including huge ``sin``/``cos`` arguments, which are reduced exactly with a
table of 2/pi (Payne-Hanek); f32 ``pow`` is computed in f64, f64 ``pow`` with a double-f64
logarithm. ``sqrt rsqrt fma abs min max floor ceil`` are NVPTX instructions in every type. Nothing
is refused: every kernel the frontend accepts compiles for nvptx, except that Hopper operations need
``-arch=sm_90a`` (``nvptx_hopper.py``: the CUDA C path's scheme, the same launch facts).
"""
from __future__ import annotations

import re
from typing import Dict, List, Tuple

from llvmlite import ir as ll

from polykern.codegen.c_names import ascii_ident
from polykern.codegen.llvm_emitter import LLVMKernelEmitter
from polykern.codegen.llvm_types import I32, I64, VOID, mem_type
from polykern.codegen.llvm_devmath import F32, LN2, PortableMath
from polykern.codegen.llvm_target import compile_ir, data_layout, target_machine
from polykern.ir import nodes as N
from polykern.ir.types import f32
from polykern.module import create_with_fallback
from polykern.numerics import fast_math as fast_math_entry

from .fallback import CUDAFallbackModule
from .functions import function_map
from .cp_async import NVPTXCopies
from .nvptx_hopper import NVPTXHopper
from .nvptx_matrix import NVPTXMatrix
from .nvptx_subgroups import NVPTXSubgroups, has_redux

TRIPLE = "nvptx64-nvidia-cuda"
# The lowest PTX ISA version LLVM accepts for each arch, raised to 7.8 (CUDA 11.8) everywhere.
_MIN_PTX = {"sm_88": 90, "sm_90a": 80, "sm_100": 86, "sm_100a": 86, "sm_103": 88, "sm_103a": 88,
            "sm_110": 90, "sm_110a": 90, "sm_120": 87, "sm_120a": 87, "sm_121": 88, "sm_121a": 88}
BASE_PTX = 78
_PTX_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_$]*|[_$][A-Za-z0-9_$]+")
_PTX_PREDEFINED = frozenset({"WARP_SZ"})
_LOG2E = float(F32.round(1 / LN2))  # fast exp: ex2.approx of x * log2(e)
_LN2 = float(F32.round(LN2))  # fast log: lg2.approx(x) * ln 2
_SREG = {"local_id": "tid", "group_id": "ctaid", "local_size": "ntid", "num_groups": "nctaid"}


def ptx_feature(arch: str) -> str:
    """The ``+ptxNN`` feature string for ``arch``."""
    return f"+ptx{max(BASE_PTX, _MIN_PTX.get(arch, BASE_PTX))}"


class NVPTXEmitter(NVPTXHopper, NVPTXMatrix, NVPTXSubgroups, NVPTXCopies, PortableMath, LLVMKernelEmitter):
    """IR -> LLVM IR for the NVPTX backend (GPU style: one invocation per thread)."""

    GLOBAL_AS, SHARED_AS, PRIVATE_AS, CONST_AS = 1, 3, 0, 4
    PRINT_FORMAT_AS = 1  # as clang puts a CUDA printf's format: a global constant, passed generic
    ATOMIC_SCOPES = {1: "device", 3: "block"}

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.symbols: Dict[str, str] = {}  # kernel name -> PTX .entry name

    # ptxas (driver 580, H100) mis-handles two PTX instructions that LLVM emits for wrapping integer
    # negation: it takes abs.s32/abs.s64 as never negative (abs(INT_MIN) < 0 was false, and
    # abs(INT_MIN) % 25 was 23) and loses the 16-bit wrap of neg.s16 (-(-32768) % 25 gave 18). The
    # same PTX with neg.s32/neg.s64 + selp, and a 16/8-bit negation done as neg.s32 on the
    # sign-extended value, is right (tools/gpu/neg_probe2.py). The negation goes through inline PTX
    # so LLVM cannot turn it back into abs or a narrow neg.
    def _asm_neg(self, v: ll.Value) -> ll.Value:
        wide = v.type.width == 64
        ty = I64 if wide else I32
        fnty = ll.FunctionType(ty, [ty])
        return self.builder.asm(fnty, "neg.s64 $0, $1;" if wide else "neg.s32 $0, $1;",
                                "=l,l" if wide else "=r,r", [v], False)

    def _wrapping_neg(self, v: ll.Value) -> ll.Value:
        b = self.builder
        if v.type.width >= 32:
            return self._asm_neg(v)
        return b.trunc(self._asm_neg(b.sext(v, I32)), v.type)

    def round_to_f16(self, v: ll.Value, dty: ll.Type) -> ll.Value:
        """f32/f64 -> f16 as one inline ``cvt.rn.f16.f32`` / ``cvt.rn.f16.f64`` (round to nearest even, as
        CUDA C's does): LLVM cannot fold an ``fpext`` of it back past f16's range (tests/test_int_to_f16.py),
        so the portable clamp and its compares and selects are not needed in inner loops."""
        wide = isinstance(v.type, ll.DoubleType)
        fnty = ll.FunctionType(ll.IntType(16), [v.type])
        bits = self.builder.asm(fnty, f"cvt.rn.f16.{'f64' if wide else 'f32'} $0, $1;",
                                "=h,d" if wide else "=h,f", [v], False)
        return self.builder.bitcast(bits, dty)

    def expr_UnaryOp(self, e: N.UnaryOp) -> ll.Value:
        st = e.a.type
        if e.op == "neg" and st.is_int and st.is_signed:
            return self._wrapping_neg(self.expr(e.a))
        return super().expr_UnaryOp(e)

    def math_call(self, func, st, args):
        if func == "abs" and st.is_int and st.is_signed:
            x = args[0]
            b = self.builder
            return b.select(b.icmp_signed("<", x, ll.Constant(x.type, 0)), self._wrapping_neg(x), x)
        return super().math_call(func, st, args)

    def fast_math_call(self, op, st, args):
        """``fast_<op>`` of f32: the NVVM intrinsic ``numerics.FAST_MATH["nvptx"][op]`` names (PTX's
        ``*.approx.ftz.f32``); exp is ex2 of ``x * log2 e``, log is lg2 times ``ln 2``."""
        entry = fast_math_entry("nvptx", op)
        if entry is None or st != f32:
            return super().fast_math_call(op, st, args)
        b = self.builder
        if op == "exp":
            args = [b.fmul(args[0], ll.Constant(F32.ty, _LOG2E))]
        out = self.call_intrinsic(entry.lowering, F32.ty, args)
        return b.fmul(out, ll.Constant(F32.ty, _LN2)) if op == "log" else out

    def kernel_symbol(self, fn: N.Function) -> str:
        """An ASCII PTX identifier (LLVM aborts on others; Python allows Unicode kernel names),
        unique in the module and not PTX's predefined ``WARP_SZ``."""
        sym = ascii_ident(fn.name)
        if not _PTX_IDENT.fullmatch(sym) or sym in _PTX_PREDEFINED:
            sym = "k_" + sym
        while sym in self.symbols.values():
            sym += "_"
        self.symbols[fn.name] = sym
        return sym

    def declare_kernel(self, fn: N.Function) -> ll.Function:
        llfn = super().declare_kernel(fn)
        llfn.calling_convention = "ptx_kernel"
        llfn.attributes.add("nounwind")
        return llfn

    def alloc_shared(self, name: str, at):
        """A shared array: an addrspace(3) global with an ASCII name (it becomes a PTX symbol)."""
        ty = ll.ArrayType(mem_type(at.elem), at.size)
        gname = self.module.get_unique_name(f"{self.symbols[self.fn.name]}.{ascii_ident(name)}")
        if at.dynamic:  # an external symbol keeps its name: only PTX identifier characters
            ptr = self.alloc_dynamic_shared(f"pk_dynamic_shared_{self.symbols[self.fn.name]}", at)
            return self.hopper_tile(name, at, ptr)  # a swizzled tile starts at a 1024-byte boundary
        self.hopper_tile(name, at, None)  # a swizzled tile must be the dynamic array
        gv = ll.GlobalVariable(self.module, ty, name=gname, addrspace=self.SHARED_AS)
        gv.linkage = "internal"
        gv.initializer = ll.Constant(ty, ll.Undefined)
        gv.align = self.ARRAY_ALIGN
        zero = ll.Constant(I32, 0)
        return gv.gep([zero, zero])

    def read_special_reg(self, kind: str, dim: int) -> ll.Value:
        key = (kind, dim)
        if key not in self._sreg_cache:  # read once, in the entry block
            saved, self.builder = self.builder, self.abuilder
            try:
                self._sreg_cache[key] = self.call_intrinsic(
                    f"llvm.nvvm.read.ptx.sreg.{_SREG[kind]}.{'xyz'[dim]}", I32, [])
            finally:
                self.builder = saved
        return self._sreg_cache[key]

    def emit_barrier(self) -> None:
        self.call_intrinsic("llvm.nvvm.barrier0", VOID, [])

    def emit_print(self, fmt: ll.Value, values) -> None:
        """``pk.debug_print``: CUDA's device ``vprintf(fmt, args)``, ``args`` a local buffer holding the
        values as C passes them to printf (floats as doubles), each at its natural alignment."""
        b = self.builder
        vals = self.print_values(b, values)
        ptr = ll.PointerType()
        argp = ll.Constant(ptr, None)
        if vals:  # a struct lays the values out at their natural alignment, as vprintf reads them
            sty = ll.LiteralStructType([v.type for v in vals])
            argp = self.alloca(sty, align=8)
            for k, v in enumerate(vals):
                b.store(v, b.gep(argp, [ll.Constant(I32, 0), ll.Constant(I32, k)], inbounds=True))
        b.call(self.declare("vprintf", I32, [ptr, ptr]), [fmt, argp])


def generate(funcs: List, target) -> Tuple[bytes, str, Dict, Dict[str, str]]:
    """(ptx bytes, "ptx", fmap, sources) for ``funcs`` on an ``nvptx`` target."""
    arch = target.attrs["arch"]
    features = ptx_feature(arch)
    tm = target_machine(TRIPLE, arch, features, 3)
    emitter = NVPTXEmitter(TRIPLE, data_layout(tm))
    emitter.REDUX = has_redux(arch)  # subgroup reductions: redux.sync on sm_80+
    emitter.emit(funcs)
    compiled = compile_ir(emitter.render(), TRIPLE, arch, features, 3, emit_object=False, tm=tm)
    ptx = compiled.asm
    fmap = function_map(funcs, emitter.symbols, arch)
    return ptx.encode("utf-8"), "ptx", fmap, {"ptx": ptx, "llvm": compiled.ll}


def build(funcs, target):
    payload, fmt, fmap, sources = generate(funcs, target)
    return create_with_fallback("cuda", payload, fmt, fmap, sources, fallback_cls=CUDAFallbackModule)
