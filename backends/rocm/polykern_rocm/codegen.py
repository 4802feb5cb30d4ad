"""ROCm codegen: IR -> LLVM IR (shared emitter, GPU style) -> AMDGPU object -> hsaco (ld.lld).

Target ``rocm -mcpu=gfxNNN -code_object=4|5|6`` (defaults gfx90a, 4). Triple ``amdgcn-amd-amdhsa``.
The payload (fmt ``hsaco``) is the linked ELF shared object the HIP runtime loads with
``hipModuleLoadData``; every kernel has its symbol and its kernel descriptor ``<name>.kd``.
Embedded sources: ``asm`` (the AMDGPU assembly with the ``amdhsa.kernels`` metadata; default for
inspect) and ``llvm`` (optimized LLVM IR). FunctionInfo attrs: ``entry`` (the kernel symbol),
``mcpu``, ``code_object``.

Code object version: LLVM 22 would emit v6; ``-code_object`` pins it (module flag
``amdhsa_code_object_version``). The default 4 is what Debian 12's ld.lld 14 links and what every
ROCm release loads; 5 and 6 need a newer ld.lld (``lld-19``). The hsaco bytes come from ld.lld, so
hosts with different ld.lld versions may produce different (equally valid) bytes.

Lowering: ``amdgpu_kernel`` calling convention (flat work-group size 1..1024, CUDA's limit);
buffers in addrspace 1, shared arrays addrspace 3, private arrays addrspace 5; local/group ids
from ``llvm.amdgcn.workitem.id.*``/``workgroup.id.*``; the block size and grid size from the HSA
dispatch packet (``llvm.amdgcn.dispatch.ptr``; its grid size counts work-items, so num_groups is
the rounded-up quotient); ``barrier()`` = workgroup release fence, ``s_barrier``, acquire fence;
relaxed atomics with ``syncscope("agent")`` (global) or ``("workgroup")`` (shared). Math: f32/f16
``exp exp2 log log2`` are LLVM intrinsics (the AMDGPU backend's full-precision lowering); ``sin cos
tanh pow`` and every f64 transcendental come from :mod:`polykern.codegen.llvm_devmath` (no device library
is linked). Nothing is refused: every kernel the frontend accepts compiles for rocm.
"""
from __future__ import annotations

from typing import Dict, List

from llvmlite import ir as ll

from polykern import registry
from polykern.kbin import payload_formats
from polykern.capabilities import GPU_LLVM_FLOATS, LLVM_INTS, Capabilities, F16Rounding
from polykern.build_cache import TOOLCHAIN_KEY
from polykern.codegen.llvm_attributes import StringFunctionAttributes
from polykern.codegen.llvm_emitter import LLVMKernelEmitter
from polykern.codegen.llvm_types import I16, I32, VOID
from polykern.codegen.llvm_target import compile_ir, data_layout, target_machine
from polykern.ir import nodes as N
from polykern.ir.types import ScalarType
from polykern.module import FunctionInfo, create_with_fallback
from polykern.target import Attr, Target, TargetKind

from polykern.codegen.llvm_devmath import PortableMath
from .amdgpu_matrix import AMDGPUMatrix
from .amdgpu_matrix import supported as matrix_supported
from .amdgpu_subgroups import AMDGPUSubgroups, wave_size
from .fallback import ROCmFallbackModule
from .hsaco import check_hsaco
from .lld import identity, link_hsaco

__all__ = ["ROCM_KIND", "AMDGPUEmitter", "TRIPLE", "build", "generate", "register"]

TRIPLE = "amdgcn-amd-amdhsa"
MCPUS = ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx950", "gfx1010", "gfx1030", "gfx1031",
         "gfx1032", "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201")

ROCM_KIND = TargetKind("rocm", "rocm", {
    "mcpu": Attr("str", "gfx90a", MCPUS, "AMD GPU architecture (LLVM AMDGPU processor)"),
    "code_object": Attr("int", 4, (4, 5, 6), "AMDHSA code object version (5 and 6 need ld.lld >= 19)"),
}, doc="AMD GPUs through LLVM's AMDGPU backend: an hsaco code object for the HIP runtime",
   capabilities=Capabilities(matrix=matrix_supported, f16=F16Rounding("clamp"), ints=LLVM_INTS,
                             floats=GPU_LLVM_FLOATS))

# Offsets in hsa_kernel_dispatch_packet_t: workgroup_size_x/y/z (u16), grid_size_x/y/z (u32).
_WG_SIZE_OFFSET, _GRID_SIZE_OFFSET = 4, 12


class AMDGPUEmitter(AMDGPUMatrix, AMDGPUSubgroups, PortableMath, LLVMKernelEmitter):
    """IR -> LLVM IR for AMDGPU (GPU style: one invocation per work-item)."""

    GLOBAL_AS, SHARED_AS, PRIVATE_AS, CONST_AS = 1, 3, 5, 4
    ATOMIC_SCOPES = {1: "agent", 3: "workgroup"}
    NATIVE_MATH = ("exp", "exp2", "log", "log2")  # f16/f32: the AMDGPU backend lowers these fully

    def __init__(self, triple: str, layout: str, code_object: int):
        super().__init__(triple, layout)
        flag = self.module.add_metadata([ll.Constant(I32, 1), ll.MetaDataString(self.module,
                                         "amdhsa_code_object_version"), ll.Constant(I32, code_object * 100)])
        self.module.add_named_metadata("llvm.module.flags", flag)

    def declare_kernel(self, fn: N.Function) -> ll.Function:
        llfn = super().declare_kernel(fn)
        llfn.calling_convention = "amdgpu_kernel"
        llfn.attributes = StringFunctionAttributes(llfn.attributes, {"amdgpu-flat-work-group-size": "1,1024"})
        llfn.attributes.add("nounwind")
        return llfn

    def _in_entry(self, key, make):
        """Compute a special-register value once, in the entry block."""
        if key not in self._sreg_cache:
            saved, self.builder = self.builder, self.abuilder
            try:
                self._sreg_cache[key] = make()
            finally:
                self.builder = saved
        return self._sreg_cache[key]

    def _packet_field(self, offset: int, ty: ll.IntType, align: int):
        def make():
            b = self.builder
            base = self._in_entry("dispatch", lambda: self.call_intrinsic(
                "llvm.amdgcn.dispatch.ptr", ll.PointerType(addrspace=self.CONST_AS), []))
            ptr = b.gep(base, [ll.Constant(I32, offset)], inbounds=True, source_etype=ll.IntType(8))
            v = b.load(ptr, typ=ty, align=align)
            return v if ty.width == 32 else b.zext(v, I32)

        return self._in_entry(("packet", offset), make)

    def read_special_reg(self, kind: str, dim: int) -> ll.Value:
        axis = "xyz"[dim]
        if kind == "local_id":
            return self._in_entry((kind, dim), lambda: self.call_intrinsic(f"llvm.amdgcn.workitem.id.{axis}", I32, []))
        if kind == "group_id":
            return self._in_entry((kind, dim), lambda: self.call_intrinsic(f"llvm.amdgcn.workgroup.id.{axis}", I32, []))
        size = self._packet_field(_WG_SIZE_OFFSET + 2 * dim, I16, 2)
        if kind == "local_size":
            return size
        if kind == "num_groups":
            def make():
                b = self.builder
                grid = self._packet_field(_GRID_SIZE_OFFSET + 4 * dim, I32, 4)  # in work-items
                return b.udiv(b.add(grid, b.sub(size, ll.Constant(I32, 1))), size)

            return self._in_entry((kind, dim), make)
        return super().read_special_reg(kind, dim)

    def emit_barrier(self) -> None:
        b = self.builder
        b.fence("release", "workgroup")
        self.call_intrinsic("llvm.amdgcn.s.barrier", VOID, [])
        b.fence("acquire", "workgroup")


    def math_call(self, func: str, st: ScalarType, args: List[ll.Value]) -> ll.Value:
        if st.is_float and st.bits in (16, 32) and func in self.NATIVE_MATH:
            return LLVMKernelEmitter.math_call(self, func, st, args)
        return super().math_call(func, st, args)


def function_map(funcs, mcpu: str, code_object: int) -> Dict[str, FunctionInfo]:
    out = {}
    for fn in funcs:
        info = FunctionInfo.from_ir(fn)
        attrs = dict(info.attrs, entry=fn.name, mcpu=mcpu, code_object=str(code_object))
        out[fn.name] = FunctionInfo(info.name, info.args, info.launch_tags, info.shared_bytes, attrs)
    return out


def generate(funcs: List, target: Target):
    """(hsaco, "hsaco", fmap, sources) for ``funcs`` on a ``rocm`` target."""
    mcpu, cov = target.attrs["mcpu"], int(target.attrs["code_object"])
    tm = target_machine(TRIPLE, mcpu, "", 3)
    emitter = AMDGPUEmitter(TRIPLE, data_layout(tm), cov)
    emitter.WAVE = wave_size(mcpu)  # subgroups are wavefronts
    emitter.emit(funcs)
    compiled = compile_ir(emitter.render(), TRIPLE, mcpu, "", 3, tm=tm)
    hsaco, _ = link_hsaco(compiled.obj)
    check_hsaco(hsaco, [fn.name for fn in funcs])
    return hsaco, "hsaco", function_map(funcs, mcpu, cov), {"asm": compiled.asm, "llvm": compiled.ll}


def build(funcs: List, target: Target):
    payload, fmt, fmap, sources = generate(funcs, target)
    return create_with_fallback("rocm", payload, fmt, fmap, sources, fallback_cls=ROCmFallbackModule)


def register() -> None:
    ROCM_KIND.register()
    registry.register("target.build.rocm", build)
    registry.register(TOOLCHAIN_KEY + "rocm", identity)  # ld.lld, for the compile cache
    registry.register(payload_formats.registry_key("rocm"), ROCmFallbackModule.payload_formats)
