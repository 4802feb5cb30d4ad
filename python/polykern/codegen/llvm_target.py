"""LLVM target machines: from an llvmlite module (or IR text) to object code and assembly.

Shared by every LLVM-based backend (CPU, NVPTX, AMDGPU, Hexagon). Everything goes
through :func:`compile_ir`, which

- parses the IR text in a fresh LLVM context (llvmlite's global context is not
  thread-safe) under one process-wide lock, verifies it,
- runs the new-pass-manager pipeline at ``-O0..3`` for the target machine,
- emits an object file and the assembly listing, and returns the optimized IR.

Output is deterministic: the module identifier and ``source_filename`` are fixed
(no paths), LLVM writes no timestamps, and nothing here depends on the host
unless the caller asks for ``cpu="native"``.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Optional

from ..errors import CompileError, TargetError

__all__ = ["LLVM_LOCK", "ensure_initialized", "host_triple", "host_cpu", "host_features", "cache_identity",
           "normalize_triple", "target_machine", "data_layout", "compile_ir", "assemble_ll", "CompiledObject",
           "MODULE_NAME"]

#: One lock for everything that touches LLVM global state (target registry, contexts, options).
LLVM_LOCK = threading.RLock()
MODULE_NAME = "polykern"
_initialized = False

# Triple components that are an OS/environment, not a vendor: "aarch64-linux-gnu" has no vendor.
_OS_WORDS = ("linux", "none", "elf", "windows", "darwin", "macos", "freebsd", "netbsd", "openbsd",
             "cuda", "amdhsa", "amdpal", "mesa3d", "unknown-elf", "eabi", "android", "wasi", "emscripten")


def ensure_initialized() -> None:
    """Initialize every LLVM target and asm printer once (never ``llvm.initialize()``: it raises)."""
    global _initialized
    if _initialized:
        return
    with LLVM_LOCK:
        if _initialized:
            return
        import llvmlite.binding as llvm

        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _initialized = True


def host_triple() -> str:
    import llvmlite.binding as llvm

    ensure_initialized()
    return normalize_triple(llvm.get_process_triple())


def host_cpu() -> str:
    import llvmlite.binding as llvm

    ensure_initialized()
    return llvm.get_host_cpu_name()


def host_features() -> str:
    """The host's CPU features as an ``-mattr`` string (``+avx2,-avx512f,...``), sorted."""
    import llvmlite.binding as llvm

    ensure_initialized()
    try:
        feats = llvm.get_host_cpu_features()
    except RuntimeError:  # LLVM cannot query features on this host
        return ""
    return ",".join(f"{'+' if on else '-'}{name}" for name, on in sorted(feats.items()))


def cache_identity(target=None) -> str:
    """LLVM's version and the host (triple, CPU, features), which decide what an LLVM-based codegen emits for a
    target that names no CPU: what its ``target.cache_key.<target kind>`` gives the compile cache."""
    import llvmlite.binding as llvm

    return (f"llvm {'.'.join(map(str, llvm.llvm_version_info))} host {host_triple()} {host_cpu()} "
            f"{host_features()}")


def normalize_triple(triple: str) -> str:
    """``aarch64-linux-gnu`` -> ``aarch64-unknown-linux-gnu`` (LLVM's four-part form); others unchanged."""
    triple = triple.strip()
    parts = triple.split("-")
    if len(parts) >= 2 and parts[1] in _OS_WORDS:
        parts.insert(1, "unknown")
    return "-".join(parts)


def target_machine(triple: str, cpu: str = "generic", features: str = "", opt: int = 3,
                   reloc: str = "pic", codemodel: str = "default"):
    """An llvmlite ``TargetMachine``; an unknown triple or CPU is a :class:`TargetError`."""
    import llvmlite.binding as llvm

    ensure_initialized()
    if not 0 <= int(opt) <= 3:
        raise TargetError(f"LLVM optimization level must be 0..3, got {opt}")
    with LLVM_LOCK:
        try:
            tgt = llvm.Target.from_triple(triple)
        except RuntimeError as e:
            raise TargetError(f"LLVM has no target for triple {triple!r}: {str(e).strip()}") from None
        return tgt.create_target_machine(cpu=cpu, features=features, opt=int(opt), reloc=reloc,
                                         codemodel=codemodel)


def data_layout(tm) -> str:
    return str(tm.target_data)


@dataclass(frozen=True)
class CompiledObject:
    obj: bytes  # relocatable object file
    asm: str  # assembly listing of the same code
    ll: str  # optimized LLVM IR text


_SOURCE_FILENAME_RE = re.compile(r'^source_filename = ".*"$', re.M)


def _clean_ll(text: str) -> str:
    text = text.replace("; ModuleID = '<string>'", f"; ModuleID = '{MODULE_NAME}'")
    return _SOURCE_FILENAME_RE.sub(f'source_filename = "{MODULE_NAME}"', text)


class _Flags:
    """LLVM boolean command-line options turned on for one optimization or code generation, set and
    reset under ``LLVM_LOCK`` (they are process-global; other LLVM users in the process see the
    defaults). Used: ``disable-lsr`` (skip Loop Strength Reduction, which costs a third of the CPU
    backend's compile time on its work-item loops and does not make them faster on x86-64,
    docs/performance.md) and ``force-ordered-reductions`` (see :func:`compile_ir`)."""

    def __init__(self, **flags: bool):
        self.names = [name.replace("_", "-") for name, on in flags.items() if on]

    def _set(self, value: str) -> None:
        import llvmlite.binding as llvm

        for name in self.names:
            llvm.set_option("polykern", f"-{name}={value}")

    def __enter__(self):
        self._set("true")

    def __exit__(self, *exc):
        self._set("false")


def assemble_ll(ll_text: str, triple: str, cpu: str = "generic", features: str = "", opt: int = 3,
                reloc: str = "pic", codemodel: str = "default", disable_lsr: bool = False) -> str:
    """The assembly listing of already optimized IR (``CompiledObject.ll``) for the target it was
    compiled for: the same text :func:`compile_ir` emits with ``emit_asm=True``."""
    import llvmlite.binding as llvm

    tm = target_machine(triple, cpu, features, opt, reloc, codemodel)
    with LLVM_LOCK:
        ctx = llvm.create_context()
        mod = llvm.parse_assembly(ll_text, context=ctx)
        mod.name = MODULE_NAME
        with _Flags(disable_lsr=disable_lsr):
            try:
                return _clean_asm(tm.emit_assembly(mod))
            except RuntimeError as e:
                raise CompileError(f"LLVM failed to emit assembly for {triple}", log=str(e)) from None


def compile_ir(ir_text, triple: str, cpu: str = "generic", features: str = "", opt: int = 3,
               reloc: str = "pic", codemodel: str = "default", emit_object: bool = True,
               emit_asm: bool = True, tm=None, disable_lsr: bool = False, slp: bool = False,
               vectorize_ordered: bool = False) -> CompiledObject:
    """Parse, verify, optimize and emit ``ir_text`` (LLVM IR text, or an ``llvmlite.ir.Module``)
    for ``triple``/``cpu``/``features``. ``slp``: run LLVM's SLP vectorizer too (off in LLVM's default
    pipeline options; clang turns it on at -O2 and up), which packs independent scalar chains (the lanes
    of a ``pk.vload`` group, per-lane accumulators) into vector instructions. ``vectorize_ordered``: the
    loop vectorizer may widen a loop holding a float reduction (``s += e``) by keeping the reduction's
    adds in their source order (an in-order ``vector.reduce.fadd``, bit-identical to the scalar loop), so
    the rest of the loop (an inline ``exp``, codegen/cpu/vector_exp.py) runs on vectors."""
    import llvmlite.binding as llvm

    ir_text = str(ir_text)
    ensure_initialized()
    if tm is None:
        tm = target_machine(triple, cpu, features, opt, reloc, codemodel)
    with LLVM_LOCK:
        ctx = llvm.create_context()
        if "source_filename" not in ir_text:
            # The ELF STT_FILE symbol comes from source_filename: keep it fixed, never a path.
            ir_text = f'source_filename = "{MODULE_NAME}"\n' + ir_text
        try:
            mod = llvm.parse_assembly(ir_text, context=ctx)
            mod.verify()
        except RuntimeError as e:
            raise CompileError(f"LLVM rejected the generated IR for {triple}", log=f"{e}\n{ir_text}") from None
        mod.name = MODULE_NAME
        mod.triple = triple
        mod.data_layout = data_layout(tm)
        if opt > 0:
            pto = llvm.create_pipeline_tuning_options(speed_level=int(opt))
            pto.slp_vectorization = bool(slp) and int(opt) >= 2
            pb = llvm.create_pass_builder(tm, pto)
            with _Flags(force_ordered_reductions=vectorize_ordered):
                pb.getModulePassManager().run(mod, pb)
            mod.verify()
        ll_text = _clean_ll(str(mod))
        # Code generation rewrites the module in place (e.g. AMDGPU control-flow annotation), so
        # each emission gets its own copy of the optimized module.
        try:
            with _Flags(disable_lsr=disable_lsr):
                obj = tm.emit_object(mod.clone()) if emit_object else b""
                asm = tm.emit_assembly(mod.clone()) if emit_asm else ""
        except RuntimeError as e:
            raise CompileError(f"LLVM failed to emit code for {triple}", log=str(e)) from None
        return CompiledObject(bytes(obj), _clean_asm(asm), ll_text)


def _clean_asm(asm: str) -> str:
    return asm.replace('.file\t"<string>"', f'.file\t"{MODULE_NAME}"')


def parse_features(features: str) -> dict:
    """``"+avx2,-sse4a"`` -> ``{"avx2": True, "sse4a": False}``."""
    out = {}
    for item in filter(None, (f.strip() for f in (features or "").split(","))):
        if item[0] in "+-":
            out[item[1:]] = item[0] == "+"
        else:
            out[item] = True
    return out


def missing_host_features(features: str) -> Optional[list]:
    """Features ``features`` enables that this host lacks (None if LLVM cannot tell)."""
    import llvmlite.binding as llvm

    ensure_initialized()
    try:
        host = llvm.get_host_cpu_features()
    except RuntimeError:
        return None
    return sorted(f for f, on in parse_features(features).items() if on and not host.get(f, False))
