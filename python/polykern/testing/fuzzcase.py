"""One differential check: a kernel's source, its launch, the oracle's answer, and every target's.

Shared by ``tools/fuzz.py`` (the runner) and ``tests/fuzz_regressions`` (replaying saved cases), so a
saved case is judged exactly as the fuzzer judged it.

A target may refuse a kernel only for a feature its target kind declares (``Capabilities.refuses``, and
``matrix`` without ``Capabilities.matrix``: polykern/capabilities.py) or its device lacks (the optional
``device_skips(target_kind)`` of the backend's ``polykern_<x>.conformance`` module); any other refusal, a
crash, or a result the numerics promises do not allow is a disagreement.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..errors import KernelSyntaxError, KernelTypeError, PolykernError, RuntimeNotLinkedError
from .compare import compare
from ..ir.dynamic_shared import size_param
from .interp import OracleError, Result, prepare


@dataclass
class Outcome:
    target: str
    status: str  # "ok" | "refused" (declared) | "skipped" (no runtime) | "unchecked" | "disagree"
    detail: str = ""
    kind: str = ""  # for "disagree": "mismatch" | "crash" | "refusal" | "build"

    @property
    def bad(self) -> bool:
        return self.status == "disagree"


@dataclass
class Case:
    """A kernel (by its source) with its launch; ``features`` are what it uses that a backend may refuse."""

    name: str
    source: str
    grid: tuple
    block: tuple
    args: List
    features: frozenset = frozenset()
    shared_size: Optional[int] = None  # the launch's shared_size= (a kernel with a pk.shared_dynamic array)
    #: buffer -> bytes its vector groups and copies need (kernelgen); the build must record at least that
    vector_align: Dict[str, int] = field(default_factory=dict)
    #: built with pk.build(..., fast_math=True) and compared against the fast-math promises
    fast_math: bool = False
    _kernel: object = field(default=None, repr=False)
    _program: object = field(default=None, repr=False)

    def kernel(self, workdir: Optional[str] = None):
        if self._kernel is None:
            self._kernel = load_kernel(self.source, self.name, workdir)
        return self._kernel

    def oracle(self) -> Result:
        if self._program is None:
            self._program = prepare(self.kernel())
        hidden = [] if self.shared_size is None else [np.int32(self.shared_size)]  # its size parameter
        if hidden and size_param(self.kernel().ir) is None:
            raise OracleError(f"kernel '{self.name}' declares a pk.shared_dynamic array (here or in a device "
                              f"function it calls) but has no hidden shared_size parameter to size it")
        return self._program.run(_copy(self.args) + hidden, self.grid, self.block)

    def launch_options(self) -> dict:
        return {} if self.shared_size is None else {"shared_size": self.shared_size}


def _copy(args: Sequence) -> List:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


_counter = [0]


def load_kernel(source: str, name: str, workdir: Optional[str] = None):
    """Import ``source`` (a module defining the @pk.kernel ``name``) from a file, as the frontend
    needs the source on disk for its locations."""
    d = workdir or os.path.join(tempfile.gettempdir(), f"polykern-fuzz-{os.getpid()}")
    os.makedirs(d, exist_ok=True)
    _counter[0] += 1
    modname = f"_pkfuzz_{name}_{_counter[0]}"
    path = os.path.join(d, modname + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(modname, None)
    try:
        return getattr(mod, name)
    except AttributeError:
        raise PolykernError(f"{path} defines no kernel named '{name}'") from None


def declared_refusals(target_kind: str) -> Dict[str, str]:
    """``{feature: reason}`` that ``target_kind`` declares its codegen refuses (``Capabilities.refuses``)."""
    from .. import backends, capabilities

    backends.load_all()
    return dict(capabilities.of(target_kind).refuses)


def target_skips(target_kind: str) -> Dict[str, str]:
    """``{feature: reason}`` that ``target_kind`` does not run here: what it declares it refuses or lacks
    (``capabilities.conformance_skips``) and what the selected device lacks (the backend's
    ``conformance.device_skips(target_kind)``, where it has one). The conformance suite skips these."""
    from .. import backends, capabilities

    backends.load_all()
    conf = _conformance(target_kind)
    device = getattr(conf, "device_skips", None) if conf is not None else None
    return {**capabilities.conformance_skips(target_kind), **(device(target_kind) if device else {})}


def device_refusals(target_kind: str) -> Dict[str, str]:
    """``{feature: reason}`` that ``target_kind`` or the selected device lacks beyond its codegen's
    declared refusals (e.g. ``matrix`` on OpenCL and WebGPU, which refuse fragments at build, and on a
    Vulkan device without cooperative matrices, which refuses them at load)."""
    declared = declared_refusals(target_kind)
    return {f: why for f, why in target_skips(target_kind).items() if f not in declared}


def matrix_refusal(kernel, target: str) -> str:
    """Why ``target`` does not compile ``kernel``'s matrix fragments by what its kind declares
    (``Capabilities.matrix``: the combinations a backend compiles; none for a kind without a matrix
    engine), or "" when it declares them all: a refusal of a fragment combination is declared there."""
    from .. import backends, capabilities
    from ..ir.matrix import check_target as check_matrix
    from ..target import Target

    backends.load_all()
    t = Target.parse(target)
    caps = capabilities.of(t.kind)
    try:
        check_matrix(kernel.ir, t.kind, t, caps.matrix, caps.no_matrix)
    except KernelTypeError as e:
        return str(e).splitlines()[0]
    return ""


def _build_refusal(case: Case, target: str, kind: str, e: Exception) -> Outcome:
    """A build's refusal of ``case``: declared (its target skips name a feature the program
    uses, or the kind's matrix support leaves out a fragment combination it uses), or a disagreement."""
    declared = target_skips(kind)
    hit = sorted(f for f in case.features if f in declared)
    if hit:
        return Outcome(target, "refused", f"declared refusal of {', '.join(hit)}: {str(e).splitlines()[0]}")
    if "matrix" in case.features:
        why = matrix_refusal(case.kernel(), target)
        if why:
            return Outcome(target, "refused", f"declared matrix support: {why}")
    return Outcome(target, "disagree", f"refused a feature it does not declare: {e}", "refusal")


def _conformance(target_kind: str):
    from .. import backends, registry

    backends.load_all()
    tk = registry.get(f"target.kind.{target_kind}")
    rec = backends.record_for_kind(tk.module_kind) if tk is not None else None
    if rec is None:
        return None
    try:
        return importlib.import_module(f"polykern_{rec.name}.conformance")
    except ModuleNotFoundError:
        return None


def numerics_backend(target_kind: str) -> str:
    """The backend whose numeric promises (``polykern.numerics``) ``target_kind`` keeps:
    ``Capabilities.numerics`` (its own name, unless it names the profile of the kind whose code generator
    or promises it shares, as an out-of-tree kind does)."""
    from .. import backends, capabilities, numerics

    backends.load_all()
    like = capabilities.of(target_kind).numerics
    if like not in numerics.BACKENDS:
        raise ValueError(f"target kind {target_kind!r} declares no numeric promises: its Capabilities.numerics "
                         f"must name one of {', '.join(numerics.BACKENDS)} (docs/backends.md), it names {like!r}")
    return like


def runtime_present(target: str) -> bool:
    from .. import backends, registry
    from ..target import Target

    backends.load_all()
    tk = registry.get(f"target.kind.{Target.parse(target).kind}")
    rec = backends.record_for_kind(tk.module_kind) if tk is not None else None
    return bool(rec is not None and rec.runtime_available)


@functools.lru_cache(maxsize=None)
def selected_device(kind: str) -> str:
    """The description of the device the runtime of target kind ``kind`` launches on ("" when unknown):
    the numeric promises can depend on the driver (numerics.specials_promised)."""
    from .. import backends, registry

    backends.load_all()
    tk = registry.get(f"target.kind.{kind}")
    rec = backends.record_for_kind(tk.module_kind) if tk is not None else None
    if rec is None or not rec.runtime_available:
        return ""
    devices = rec.devices().get("devices") or [""]
    return next((d for d in devices if "[selected]" in d), devices[0])


def check_target(case: Case, oracle: Result, target: str, bounds_check: bool = False) -> Outcome:
    """Build ``case`` for ``target``, run it where its runtime exists, and judge it against ``oracle``."""
    import polykern as pk
    from ..target import Target

    kind = Target.parse(target).kind
    kernel = case.kernel()
    try:
        mod = pk.build([kernel], [target], **({"bounds_check": True} if bounds_check else {}),
                       **({"fast_math": True} if case.fast_math else {}))
    except (KernelTypeError, KernelSyntaxError) as e:
        return _build_refusal(case, target, kind, e)
    except Exception as e:  # noqa: BLE001 - any other build failure is a compiler bug to report
        return Outcome(target, "disagree", f"build failed: {type(e).__name__}: {e}", "build")
    lost = _lost_alignment(case, mod)
    if lost:
        return Outcome(target, "disagree", lost, "alignment")
    if not runtime_present(target):
        return Outcome(target, "skipped", "no runtime here")
    args = _copy(case.args)
    try:
        # a specialized kernel's name has its values
        mod[kernel.name](*args, grid=case.grid, block=case.block, **case.launch_options())
    except RuntimeNotLinkedError as e:  # e.g. a cross triple this host cannot execute: compiled only
        return Outcome(target, "skipped", f"not runnable here: {str(e).splitlines()[-1].strip()[:300]}")
    except Exception as e:  # noqa: BLE001
        lacks = sorted(f for f in case.features if f in device_refusals(kind))
        if lacks:  # what the device lacks, refused when the kernel is loaded (target_skips)
            return Outcome(target, "refused", f"device lacks {', '.join(lacks)}: {str(e).splitlines()[0][:300]}")
        return Outcome(target, "disagree", f"launch failed: {type(e).__name__}: {e}", "crash")
    names = [p.name for p in kernel.ir.params if p.is_buffer]
    got = {n: a for n, a in zip([p.name for p in kernel.ir.params], args) if n in names}
    cmp_ = compare(oracle, got, numerics_backend(kind), device=selected_device(kind), fast_math=case.fast_math)
    if cmp_.mismatches:
        more = f" (+{cmp_.extra} more)" if cmp_.extra else ""
        return Outcome(target, "disagree", "; ".join(str(m) for m in cmp_.mismatches[:6]) + more, "mismatch")
    if cmp_.unchecked and cmp_.unchecked >= sum(len(v) for v in oracle.buffers.values()):
        return Outcome(target, "unchecked", "subnormal results on a backend that may flush them, an a*b+c "
                                            "or an add/sub chain on a backend that may contract or reassociate "
                                            "it, or NaN/inf where the device does not promise IEEE specials")
    return Outcome(target, "ok")


def _lost_alignment(case: Case, mod) -> str:
    """"" or what the built kernel's ``vector_align`` (docs/language.md 6.1: every runtime refuses a less
    aligned buffer at launch by it) leaves out of what the program's vector groups and copies need."""
    from ..ir.vector import ALIGN_ATTR, parse_alignment

    if not case.vector_align:
        return ""
    info = mod.functions[case.kernel().name]
    have = parse_alignment(info.attrs.get(ALIGN_ATTR, ""))
    short = {b: n for b, n in case.vector_align.items() if have.get(b, 0) < n}
    if not short:
        return ""
    return (f"the kernel records {ALIGN_ATTR}={info.attrs.get(ALIGN_ATTR, '')!r}, but its vector groups and "
            f"copies need " + ", ".join(f"{b}={n}" for b, n in sorted(short.items())) + " (a misaligned buffer "
            f"would not be refused at launch)")


def check_violation(case: Case, target: str) -> Outcome:
    """A checked program that accesses out of bounds (``kernelgen.generate(checked=True)``, its
    ``violation``): built with ``bounds_check=True`` for ``target`` and launched where its runtime exists,
    the launch must end in a ``LaunchError`` that names the out-of-bounds access (docs/language.md 7.4);
    no error, another error or a dead process is a disagreement."""
    import polykern as pk
    from ..errors import LaunchError
    from ..target import Target

    kind = Target.parse(target).kind
    kernel = case.kernel()
    try:
        mod = pk.build([kernel], [target], bounds_check=True, **({"fast_math": True} if case.fast_math else {}))
    except (KernelTypeError, KernelSyntaxError) as e:
        return _build_refusal(case, target, kind, e)
    except Exception as e:  # noqa: BLE001
        return Outcome(target, "disagree", f"build failed: {type(e).__name__}: {e}", "build")
    if not runtime_present(target):
        return Outcome(target, "skipped", "no runtime here")
    try:
        mod[kernel.name](*_copy(case.args), grid=case.grid, block=case.block, **case.launch_options())
    except RuntimeNotLinkedError as e:
        return Outcome(target, "skipped", f"not runnable here: {str(e).splitlines()[-1].strip()[:300]}")
    except LaunchError as e:
        if "out-of-bounds" in str(e):
            return Outcome(target, "ok", str(e).splitlines()[0][:300])
        lacks = sorted(f for f in case.features if f in device_refusals(kind))
        if lacks:
            return Outcome(target, "refused", f"device lacks {', '.join(lacks)}: {str(e).splitlines()[0][:300]}")
        return Outcome(target, "disagree", f"checked launch failed without naming the out-of-bounds access: "
                                           f"{e}", "crash")
    except Exception as e:  # noqa: BLE001
        lacks = sorted(f for f in case.features if f in device_refusals(kind))
        if lacks:
            return Outcome(target, "refused", f"device lacks {', '.join(lacks)}: {str(e).splitlines()[0][:300]}")
        return Outcome(target, "disagree", f"checked launch raised {type(e).__name__}, not a LaunchError: {e}",
                       "crash")
    return Outcome(target, "disagree", "a checked launch with an out-of-bounds access ran to the end "
                                       "without a LaunchError", "missed-violation")


__all__ = ["Case", "Outcome", "OracleError", "check_target", "check_violation", "declared_refusals",
           "device_refusals", "load_kernel", "matrix_refusal", "runtime_present"]
