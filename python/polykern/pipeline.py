"""The compile pipeline: kernels -> IR -> verify -> passes -> per-target codegen -> root module.

Each target's code generator is reached only through the registry key ``target.build.<target kind>``;
it returns a device Module (real or fallback, via ``create_with_fallback``), which the root imports in
the order the targets were given.
"""
from __future__ import annotations

import os
import types as _pytypes
from typing import Iterable, List, Optional, Sequence, Union

from . import capabilities, hooks, registry
from .build_cache import cached_codegen
from .codegen_result import run_codegen
from .errors import CompileError, PolykernError, TargetError
from .interpret import KIND as INTERPRET_KIND
from .interpret import ensure_registered as ensure_interpret_registered
from .interpret import interpret_requested
from .ir.debug_print import check_target as check_print_target
from .ir.hopper import check_target as check_hopper_target
from .ir.matrix import check_target as check_matrix_target
from .ir.verifier import verify
from .lang.kernel import Kernel
from .passes import run_default_passes
from .passes.fast_math import fast_math as apply_fast_math
from .passes.fast_math import uses_fast_math
from .passes.legalize_target import legalize_for_target
from .passes.async_copy import lower_async_copies
from .passes.bounds_check import bounds_check as add_bounds_checks
from .passes.bounds_proof import SAFE_KEY, SAFE_VARIANT_KEY, all_proven
from .passes.bounds_proof import attach as attach_proof
from .passes.clone import clone_function

BOUNDS_CHECK_ENV = "POLYKERN_BOUNDS_CHECK"
KernelsLike = Union[Kernel, Sequence[Kernel], _pytypes.ModuleType, dict]


def collect_kernels(kernels: KernelsLike) -> List[Kernel]:
    """Kernels from a Kernel, a list of them, a Python module, or a namespace dict (sorted by name)."""
    templates = []  # kernels of a module or dict still needing .specialize(): skipped, not built
    if isinstance(kernels, Kernel):
        out = [kernels]
    elif isinstance(kernels, (_pytypes.ModuleType, dict)):
        found = [v for v in (vars(kernels) if isinstance(kernels, _pytypes.ModuleType) else kernels).values()
                 if isinstance(v, Kernel)]
        templates = [k for k in found if k.missing]
        out = sorted((k for k in found if not k.missing), key=lambda k: k.name)
    else:
        out = list(kernels)
        bad = [k for k in out if not isinstance(k, Kernel)]
        if bad:
            raise PolykernError(f"build() takes @pk.kernel functions, got {bad[0]!r}")
    if not out:
        skipped = "".join(f"; {k.name} needs .specialize({', '.join(k.missing)})" for k in templates)
        raise PolykernError(f"build() got no kernels{skipped}")
    names = [k.name for k in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PolykernError(f"two kernels are named {dup[0]!r}; kernel names must be unique in one build")
    return out


def bounds_check_requested(flag: Optional[bool] = None) -> Optional[bool]:
    """``bounds_check=`` of :func:`build`, or when it is None the environment variable
    ``POLYKERN_BOUNDS_CHECK`` (read on every build): True (checked mode everywhere), False ("", unset
    aside: "0" or "false" in any case; the raw kernels everywhere) or None (unset or "": the default,
    the CPU runtimes' safe build, :data:`SAFE_KEY`)."""
    if flag is not None:
        if not isinstance(flag, bool):
            raise PolykernError(f"build(): bounds_check must be True, False or None, got {flag!r}")
        return flag
    env = os.environ.get(BOUNDS_CHECK_ENV, "").strip().lower()
    return None if env == "" else env not in ("0", "false")


def _safe_build(f):
    """The default build of a kernel for a target kind that runs in the caller's process (the CPU
    runtimes): accesses proven in bounds under launch-time conditions (passes/bounds_proof.py) stay as
    they are, the others get checked mode's guards; no guards at all, no hidden parameters, when
    every access is proven."""
    f = attach_proof(clone_function(f))
    if all_proven(f):
        return f
    try:
        return verify(lower_async_copies(add_bounds_checks(f)))
    except CompileError as e:  # what checked mode cannot guard (an atomic in a loop condition's index)
        raise CompileError(f"{e} (the default build for the CPU runtimes checks every access it cannot prove "
                           "in bounds; bounds_check=False builds the raw kernel)") from None


def build(kernels: KernelsLike, targets: Union[str, Iterable[str]] = ("llvm",), *,
          bounds_check: Optional[bool] = None, fast_math: bool = False):
    """Compile ``kernels`` for every target; return the root module (export it with ``.export(path)``).

    ``fast_math=True``: every f32 ``exp exp2 log log2 rsqrt`` and ``/`` may be computed by the target's
    faster instruction, within ``polykern.numerics``' fast-math promise (passes/fast_math.py); the
    artifact's metadata then says ``fast-math: true``.

    ``bounds_check=True`` (or ``POLYKERN_BOUNDS_CHECK=1``) builds the checked mode
    (:mod:`polykern.passes.bounds_check`): every buffer and array access is checked at run time.
    ``None`` (the default): the CPU runtimes' targets get the safe build (:func:`_safe_build`), the
    others the raw kernels; ``False`` (or ``POLYKERN_BOUNDS_CHECK=0``): the raw kernels everywhere."""
    from .backends import load_all
    from .module import FunctionInfo, RootModule
    from .target import Target

    if not isinstance(fast_math, bool):
        raise PolykernError(f"build(): fast_math must be True or False, got {fast_math!r}")
    load_all()
    ensure_interpret_registered()  # the built-in target kind 'interpret' (polykern/interpret.py)
    if isinstance(targets, (str, Target)):
        targets = [targets]
    elif isinstance(targets, (dict, bytes)) or not isinstance(targets, Iterable):
        raise TargetError("targets must be a target string or a list of them, e.g. targets=['llvm'] or "
                          f"targets=['cuda -arch=sm_90', 'llvm'], got {targets!r}")
    parsed = [t if isinstance(t, Target) else Target.parse(t) for t in targets]
    if not parsed:
        raise TargetError("build() needs at least one target, e.g. targets=['llvm']")
    if interpret_requested():  # POLYKERN_INTERPRET=1: every launch on the interpreter, no code generator
        parsed = [Target.parse(INTERPRET_KIND)]
    # Passes run on a copy: a kernel's IR is shared (other builds, other threads) and never changes.
    funcs = [run_default_passes(clone_function(verify(k.ir))) for k in collect_kernels(kernels)]
    mode = bounds_check_requested(bounds_check)
    fast = fast_math or any(uses_fast_math(f) for f in funcs)  # else the pass would change nothing
    for f in funcs:  # Hopper operations: sm_90a targets only, not in checked mode (ir/hopper.py)
        for t in parsed:
            check_hopper_target(f, t.kind, t, capabilities.of(t.kind).hopper, bool(mode))
    if mode:
        # checked mode checks plain copies (a valid meaning of pk.copy_async on every target): the pass
        # replaces each copy by its guarded plain copy; lowering then drops the commits and waits
        funcs = [verify(lower_async_copies(add_bounds_checks(f))) for f in funcs]
    safe = None
    if mode is None and any(registry.get(SAFE_KEY + t.kind) or registry.get(SAFE_VARIANT_KEY + t.kind)
                            for t in parsed):
        safe = [_safe_build(f) for f in funcs]
    # the root lists what the caller passes (a safe build's hidden arguments are its CPU modules' own)
    root = RootModule({f.name: FunctionInfo.from_ir(f) for f in funcs}, targets=[str(t) for t in parsed])
    if fast_math:
        root.build_options["fast-math"] = "true"
    for t in parsed:
        builder = registry.get(f"target.build.{t.kind}")
        if builder is None:
            raise TargetError(f"no code generator is registered for target kind '{t.kind}' "
                              f"(registered: {', '.join(_target_kinds()) or 'none'})")
        caps = capabilities.of(t.kind)  # what the target kind declares it compiles
        for f in funcs:  # matrix fragments (ir/matrix.py), pk.debug_print (ir/debug_print.py)
            check_matrix_target(f, t.kind, t, caps.matrix, caps.no_matrix)
            if not caps.debug_print:
                check_print_target(f, t.kind, False, [k for k in _target_kinds() if capabilities.of(k).debug_print])
        # Each backend gets its own copy: lowering passes of one target must not leak into another.
        copies = [clone_function(f) for f in (safe if safe is not None and registry.get(SAFE_KEY + t.kind)
                                              else funcs)]
        if caps.async_copy is None or not caps.async_copy(t):  # asynchronous copies: passes/async_copy.py
            copies = [verify(lower_async_copies(f)) for f in copies]
        if fast:  # fast_<op> where the target compiles it, the precise op elsewhere (passes/fast_math.py)
            copies = [verify(apply_fast_math(f, t, fast_math)) for f in copies]
        if t.kind != INTERPRET_KIND:  # what its instructions do not keep, on the IR (passes/legalize_target.py)
            copies = [legalize_for_target(f, t) for f in copies]
        variant = registry.get(SAFE_VARIANT_KEY + t.kind) if safe is not None else None
        if variant is not None:  # a runtime that may find a CPU device: both forms (passes/bounds_proof.py)
            safe_copies = [verify(lower_async_copies(clone_function(f))) for f in safe]
            if fast:
                safe_copies = [verify(apply_fast_math(f, t, fast_math)) for f in safe_copies]
            if t.kind != INTERPRET_KIND:
                safe_copies = [legalize_for_target(f, t) for f in safe_copies]
            root.import_module(cached_codegen(lambda: run_codegen(lambda c, tt: variant(c, safe_copies, tt), copies, t),
                                              variant, copies, t, also=safe_copies))
            continue
        # checked: the plugin is named if it misbehaves; the compile cache (build_cache.py) may answer instead
        root.import_module(cached_codegen(lambda: run_codegen(builder, copies, t), builder, copies, t))
    hooks.record_on_root(root)  # the kernel list says which build hooks ran (docs/backends.md "Hooks")
    return root


def _target_kinds():
    prefix = "target.build."
    return [n[len(prefix):] for n in registry.names(prefix)]
