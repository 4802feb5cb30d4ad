"""CPU codegen: IR -> LLVM IR (shared emitter, work-item loops) -> relocatable ELF object.

Target ``llvm [-mtriple=T] [-mcpu=C] [-mattr=F] [-opt=N]``:

- ``-mtriple``: default this host's triple; any ELF triple LLVM knows (``aarch64-linux-gnu``,
  ``riscv64-linux-gnu``, ...). Three-part GNU triples are normalized (``aarch64-unknown-linux-gnu``).
- ``-mcpu``: default ``generic`` (runs on every CPU of the architecture, and the object does not
  depend on the build host); ``native`` = this host's CPU and features (not portable).
- ``-mattr``: extra features, e.g. ``+avx2,+fma``.

A triple other than the host's, a CPU other than generic/native, or any ``-mattr`` is first
checked against LLVM's own lists and compiled once in a child process (polykern/codegen/cpu/probe.py), because
LLVM aborts the process on some bad combinations; a bad value is a :class:`TargetError`.
- ``-opt``: LLVM optimization level 0-3 (default 3).

Payload fmt ``"o"`` (docs/internals.md "CPU (llvm) payload"); embedded sources ``asm`` (default
for inspect; rendered from the optimized IR when first read, see fallback.py) and ``ll`` (optimized
LLVM IR). Every FunctionInfo records ``entry`` (the range
symbol), ``triple``, ``cpu``, ``features`` and ``item_bytes`` (per-work-item stack bytes of the
work-item loops, which the runtime checks against its thread stacks).
"""
from __future__ import annotations

from typing import Dict, List

from polykern import registry
from polykern.kbin import payload_formats
from polykern.capabilities import LIBM_FLOATS, LLVM_INTS, Capabilities, F16Rounding
from polykern.build_cache import TOOLCHAIN_KEY
from polykern.codegen.cpu.lazy_asm import PendingAsm
from polykern.codegen import llvm_target
from polykern.codegen.llvm_target import (compile_ir, data_layout, host_cpu, host_features, host_triple,
                                          normalize_triple, target_machine)
from polykern.codegen.cpu.matrix import cpu_support
from polykern.codegen.cpu.vector_exp import VectorExp
from polykern.codegen.cpu.workgroup import RANGE_SUFFIX, WorkgroupLoopEmitter
from polykern.codegen.cpu.probe import check_cpu_and_features
from polykern.errors import TargetError
from polykern.module import FunctionInfo, create_with_fallback
from polykern.passes.bounds_proof import SAFE_KEY
from polykern.target import Attr, Target, TargetKind

from .fallback import LLVMFallbackModule

__all__ = ["LLVM_KIND", "CPUEmitter", "build", "resolve", "register"]

LLVM_KIND = TargetKind("llvm", "llvm", {
    "mtriple": Attr("str", "", None, "target triple, e.g. aarch64-linux-gnu (default: this host's)"),
    "mcpu": Attr("str", "generic", None, "CPU name; generic = portable, native = this host's CPU"),
    "mattr": Attr("str", "", None, "CPU features, e.g. +avx2,+fma"),
    "opt": Attr("int", 3, (0, 1, 2, 3), "LLVM optimization level"),
}, doc="CPUs through LLVM: a relocatable ELF object, run by the polykern CPU runtime (thread pool)",
   capabilities=Capabilities(matrix=cpu_support, debug_print=True, f16=F16Rounding("clamp"),  # printf: the C library's
                             ints=LLVM_INTS, floats=LIBM_FLOATS))  # frem, pow: libm

# Object formats the payload contract (ELF) excludes.
_NON_ELF = ("darwin", "macos", "ios", "windows", "msvc", "mingw", "wasm", "cuda", "amdhsa")
_X86 = ("x86_64", "i386", "i486", "i586", "i686", "x86")


class CPUEmitter(VectorExp, WorkgroupLoopEmitter):
    """The CPU flavour of the work-item-loop emitter: address space 0 everywhere, integer
    division that cannot trap, soft f16 conversions on x86 (no F16C in ``generic``), f16/f32
    ``exp``/``exp2`` inline so that their loops vectorize (codegen/cpu/vector_exp.py: already the fast
    form, so the CPU has no fast math of its own; ``fast_<op>`` compiles as ``<op>``)."""


    def __init__(self, triple: str, layout: str):
        self.F16_LIBCALLS = triple.split("-")[0] in _X86
        super().__init__(triple, layout)


def resolve(target: Target):
    """(triple, cpu, features, opt) of an ``llvm`` target on this host."""
    triple = normalize_triple(target.attrs["mtriple"] or host_triple())
    if any(w in triple.split("-")[1:] for w in _NON_ELF) or triple.split("-")[0].startswith("wasm"):
        raise TargetError(f"target '{target}': the llvm payload is an ELF object; {triple!r} does not use ELF "
                          "(use a *-linux-gnu or *-elf triple)")
    cpu, features = target.attrs["mcpu"], target.attrs["mattr"]
    given = bool(features) or cpu not in ("generic", "native") or triple != host_triple()
    if cpu == "native":
        if target.attrs["mtriple"] and triple != host_triple():
            raise TargetError(f"target '{target}': -mcpu=native needs the host triple, not {triple}")
        cpu = host_cpu()
        features = ",".join(filter(None, (host_features(), features)))
    if given:  # LLVM aborts the process on some bad values: checked in a child process first
        check_cpu_and_features(str(target), triple, cpu, features)
    return triple, cpu, features, int(target.attrs["opt"])


def function_map(funcs, facts: Dict[str, Dict[str, int]], triple: str, cpu: str, features: str
                 ) -> Dict[str, FunctionInfo]:
    out = {}
    for fn in funcs:
        info = FunctionInfo.from_ir(fn)
        private = sum(at.elem.nbytes * at.size for at in fn.local_arrays.values())
        attrs = dict(info.attrs, entry=fn.name + RANGE_SUFFIX, triple=triple, cpu=cpu, features=features,
                     item_bytes=str(facts[fn.name]["item_bytes"]), private_bytes=str(private))
        out[fn.name] = FunctionInfo(info.name, info.args, info.launch_tags, info.shared_bytes, attrs)
    return out


def build(funcs: List, target: Target):
    triple, cpu, features, opt = resolve(target)
    tm = target_machine(triple, cpu, features, opt)
    emitter = CPUEmitter(triple, data_layout(tm)).emit(funcs)
    no_lsr = triple.split("-")[0] in _X86  # measured: a third of the compile time, no speed (docs/performance.md)
    compiled = compile_ir(emitter.render(), triple, cpu, features, opt, tm=tm, emit_asm=False, disable_lsr=no_lsr,
                          slp=True, vectorize_ordered=True)  # the lanes of vload groups; loops with a sum
    fmap = function_map(funcs, emitter.kernel_facts, triple, cpu, features)
    sources = {"asm": PendingAsm(compiled.ll, triple, cpu, features, opt, no_lsr), "ll": compiled.ll}
    return create_with_fallback("llvm", compiled.obj, "o", fmap, sources, fallback_cls=LLVMFallbackModule)


def register() -> None:
    LLVM_KIND.register()
    registry.register("target.build.llvm", build)
    registry.register(TOOLCHAIN_KEY + "llvm", llvm_target.cache_identity)  # LLVM and the host, for the compile cache
    registry.register(payload_formats.registry_key("llvm"), LLVMFallbackModule.payload_formats)
    registry.register(SAFE_KEY + "llvm", True)  # runs in the caller's process: the safe default build
