"""Hexagon codegen: IR -> LLVM IR (shared emitter, CPU-style work-item loops) -> Hexagon ELF object.

Target ``hexagon -mcpu=hexagonv65..hexagonv73`` (default ``hexagonv68``); triple
``hexagon-unknown-elf``. A Hexagon DSP runs kernels as plain functions on its hardware threads, so
the code is the CPU backend's: per kernel ``K`` the object exports the range entry
``void K__range(void **args, const int32_t *launch, int64_t group_begin, int64_t group_end)``
(docs/internals.md, "CPU (llvm) payload"), built by
:class:`polykern.codegen.cpu.workgroup.WorkgroupLoopEmitter` (work-items are loops; barriers split
the kernel into loops over the work-items).

Payload fmt ``o``: one relocatable, position-independent ELF object (``e_machine`` 164,
EM_QDSP6). It references only the compiler-rt routines LLVM calls for Hexagon (``__hexagon_divsi3``,
``__hexagon_divdf3``, ``__hexagon_sqrtf``...) and a few libm/libc names (``sqrt``, ``fma``, ``floor``,
``memset``...): the transcendental functions are expanded in the object by the portable device math
(:class:`polykern.codegen.llvm_devmath.PortableMath`) and f16 conversions are defined in it. The
emulated runtime (``runtime/``) provides those routines; so does every Hexagon SDK link.
Embedded sources: ``asm`` (LLVM's Hexagon assembly; default for inspect; rendered from the
optimized IR when first read, see fallback.py) and ``llvm`` (optimized LLVM IR). FunctionInfo attrs: ``entry`` (the range symbol), ``triple``, ``cpu``,
``item_bytes`` (per-work-item stack bytes of the work-item loops).
"""
from __future__ import annotations

from typing import Dict, List

from polykern import registry
from polykern.kbin import payload_formats
from polykern.capabilities import LIBM_FLOATS, LLVM_INTS, Capabilities, F16Rounding
from polykern.build_cache import TOOLCHAIN_KEY
from polykern.codegen import llvm_target
from polykern.codegen.cpu.lazy_asm import PendingAsm
from polykern.codegen.llvm_devmath import PortableMath
from polykern.codegen.llvm_target import compile_ir, data_layout, target_machine
from polykern.codegen.cpu.matrix import cpu_support
from polykern.codegen.cpu.workgroup import RANGE_SUFFIX, WorkgroupLoopEmitter
from polykern.ir import nodes as N
from polykern.module import FunctionInfo, create_with_fallback
from polykern.target import Attr, Target, TargetKind

from . import variable_shifts
from .fallback import HexagonFallbackModule

__all__ = ["HEXAGON_KIND", "HexagonEmitter", "TRIPLE", "build", "generate", "register"]

TRIPLE = "hexagon-unknown-elf"
MCPUS = ("hexagonv65", "hexagonv66", "hexagonv67", "hexagonv68", "hexagonv69", "hexagonv71", "hexagonv73")

HEXAGON_KIND = TargetKind("hexagon", "hexagon", {
    "mcpu": Attr("str", "hexagonv68", MCPUS, "Hexagon DSP version (LLVM Hexagon processor)"),
}, doc="Qualcomm Hexagon DSPs through LLVM: an ELF object of range entry points for the Hexagon SDK",
   capabilities=Capabilities(matrix=cpu_support, f16=F16Rounding("clamp"), ints=LLVM_INTS,
                             floats=LIBM_FLOATS))  # frem: fmod in runtime/builtins.c


class HexagonEmitter(PortableMath, WorkgroupLoopEmitter):
    """The work-item-loop emitter for Hexagon: address space 0 everywhere, division that cannot
    fault (x/0 goes through a runtime routine), f16 conversions defined in the object (scalar
    Hexagon cores have no half-precision conversion instructions), and the transcendental
    functions expanded in the object by polykern's portable device math (there is no libm on a
    bare DSP), as on nvptx and rocm."""

    F16_LIBCALLS = True
    #: The Hexagon ABI aligns the stack to 8 bytes. Over-aligned stack arrays make LLVM realign the
    #: frame through a base register (r16), and with the dynamic per-work-item allocas of the
    #: work-item loops its Hexagon backend (LLVM 22 in llvmlite 0.4x, -O1 and up) stores through r16 before setting
    #: it, corrupting the caller's frame (found running kernels with barriers under qemu-hexagon).
    #: So no stack object is aligned beyond the ABI's 8 bytes.
    STACK_ALIGN = 8
    ARRAY_ALIGN = STACK_ALIGN
    SHARED_ALIGN = STACK_ALIGN

    def alloca(self, ty, count=None, name: str = "", align=None):
        return super().alloca(ty, count, name=name, align=min(align, self.STACK_ALIGN) if align else align)

    def _clamp(self, fp, x, lo: float, hi: float):
        """The portable math's NaN-keeping clamp, with NaN kept explicitly: LLVM's Hexagon backend
        turns the compare-and-select clamp into sfmin/sfmax, which return the other operand for a
        NaN (exp(nan) came out 0; found by tests/test_numerics.py under the emulator)."""
        b = self.builder
        return b.select(b.fcmp_unordered("uno", x, x), x, super()._clamp(fp, x, lo, hi))


def function_map(funcs, facts: Dict[str, Dict[str, int]], cpu: str) -> Dict[str, FunctionInfo]:
    out = {}
    for fn in funcs:
        info = FunctionInfo.from_ir(fn)
        attrs = dict(info.attrs, entry=fn.name + RANGE_SUFFIX, triple=TRIPLE, cpu=cpu,
                     item_bytes=str(facts[fn.name]["item_bytes"]))
        out[fn.name] = FunctionInfo(info.name, info.args, info.launch_tags, info.shared_bytes, attrs)
    return out


def generate(funcs: List, target: Target):
    """(object, "o", fmap, sources) for ``funcs`` on a ``hexagon`` target; ``sources["asm"]`` is a
    :class:`polykern.codegen.cpu.lazy_asm.PendingAsm` (``.render()`` gives the text; the module renders it on
    first read)."""
    cpu = target.attrs["mcpu"]
    # LLVM 22's Hexagon code generation at -O2/-O3 gave the last two work-items of every work-group a
    # wrong subgroup_max when several float collectives meet in one expression (tests/test_issue15_redteam.py;
    # the optimized IR is right, and code generation at -O1 is right): kernels with subgroup collectives
    # are code-generated at -O1.
    cg_opt = 1 if any(N.subgroup_collective(st) for fn in funcs for st in N.walk_stmts(fn.body)) else 3
    tm = target_machine(TRIPLE, cpu, "", cg_opt)
    emitter = HexagonEmitter(TRIPLE, data_layout(tm)).emit(funcs)
    # Optimize, then turn the variable shifts and funnel shifts (rotates) of the optimized IR into
    # Hexagon shift intrinsics with the amount reduced (LLVM's Hexagon rotate lowering shifts by an
    # unreduced amount: variable_shifts.py), then generate code from that IR: the object only, the
    # asm listing is rendered from the same IR when first read (it costs as much as the object).
    # Reparsing the optimized IR costs ~5% of code generation. LSR stays on: on Hexagon it is ~3%
    # of code generation, and turning it off changes the code (docs/performance.md).
    optimized = compile_ir(emitter.render(), TRIPLE, cpu, "", 3, tm=tm, emit_object=False, emit_asm=False).ll
    ll = variable_shifts.inline_helpers(variable_shifts.opaque_shifts(optimized), tm)
    compiled = compile_ir(ll, TRIPLE, cpu, "", 0, tm=tm, emit_asm=False)
    fmap = function_map(funcs, emitter.kernel_facts, cpu)
    return compiled.obj, "o", fmap, {"asm": PendingAsm(compiled.ll, TRIPLE, cpu, "", cg_opt), "llvm": compiled.ll}


def build(funcs: List, target: Target):
    payload, fmt, fmap, sources = generate(funcs, target)
    return create_with_fallback("hexagon", payload, fmt, fmap, sources, fallback_cls=HexagonFallbackModule)


def register() -> None:
    HEXAGON_KIND.register()
    registry.register("target.build.hexagon", build)
    registry.register(TOOLCHAIN_KEY + "hexagon", llvm_target.cache_identity)  # LLVM and the host, for the compile cache
    registry.register(payload_formats.registry_key("hexagon"), HexagonFallbackModule.payload_formats)
    # No safe default build (passes/bounds_proof.py) on hexagon: its kernels run in qemu's process, not the
    # caller's, so an out-of-bounds access cannot reach the host's memory (bounds_check=True checks each access);
    # and LLVM 22's Hexagon code generation of the safe build's checked loops was not reproducible (the same IR gave
    # another object in 2 of 12 processes that had compiled before: docs/correctness.md, open).
