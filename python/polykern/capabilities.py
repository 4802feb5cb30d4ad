"""What a target kind can compile: one typed record per target kind, declared once with its backend.

A backend passes a :class:`Capabilities` to its ``TargetKind(..., capabilities=...)`` (the codegen's
``register()``); the record travels with the target kind in the registry, so it is registered, and
undone, with it. Everything that used to be a hand-kept list per backend reads it through :func:`of`:
the pipeline's refusals (matrix fragments, Hopper operations, ``pk.debug_print``, native asynchronous
copies), the conformance suite's skips (tests/runtimes.py), the fuzzer's declared refusals and profiles
(``polykern.testing.fuzzcase`` / ``fuzzprofile``), the "types and features per backend" and atomics tables
of docs/language.md (``polykern.testing.support_table``) and the numeric promises a kind keeps
(``polykern.numerics``). tests/test_capabilities.py checks the derived lists against the declarations.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Dict, Mapping, Optional, Tuple

from . import registry
from .errors import TargetError

__all__ = ["F16Rounding", "Capabilities", "of", "conformance_skips", "atomic_support", "ATOMIC_TYPES"]

_FEATURE_RE = re.compile(r"^[a-z][a-z0-9_]*$")
#: the element types pk.atomic_* may update (docs/language.md section 5)
ATOMIC_TYPES = ("i32", "u32", "f32", "i64", "u64", "f64", "i16", "u16", "f16", "i8", "u8")
_ATOMIC_CELL_RE = re.compile(r"^(no|yes \(.+\)|with `-[a-z0-9_]+=[^`]+`)$")


@dataclass(frozen=True)
class F16Rounding:
    """How a target kind's conversions to f16 are legalized by ``passes/legalize_f16.py``: ``how`` is "bits"
    (rounded by that pass on the integer bits: the target has no conversion that keeps the promise) or
    "clamp" (the target's ``fptrunc`` rounds correctly, but its LLVM folds ``fpext(fptrunc(sitofp n))`` to
    ``sitofp n`` past f16's range: the value is clamped to +-65520 first, keeping NaN, which changes no
    result). ``ops_in_f32``: f16 operations (BinOp ops or Call functions) computed in f32 and rounded once."""

    how: str
    ops_in_f32: Tuple[str, ...] = ()

    def __post_init__(self):
        if self.how not in ("bits", "clamp"):
            raise ValueError(f"F16Rounding.how is 'bits' or 'clamp', got {self.how!r}")
        object.__setattr__(self, "ops_in_f32", tuple(self.ops_in_f32))


@dataclass(frozen=True)
class Capabilities:
    """What one target kind compiles with its default attributes.

    ``numerics``: the name of the numeric promises it keeps (a ``polykern.numerics.BACKENDS`` profile);
    empty means the target kind's own name and is filled in by ``TargetKind``. A kind that reuses another's
    code generator, or an out-of-tree kind, names that one.
    ``refuses``: ``{feature: reason}`` for every generator feature (``polykern.testing.kernelgen.FEATURES``:
    element types such as ``f64``/``i8``/``bf16``, ``bool_buffer``, ``math_f64``, ``subgroups``,
    ``barrier``) its codegen refuses at build with a ``KernelTypeError``; what is not named compiles.
    ``matrix``: ``support(target, fn, stmt) -> None or why not`` for the matrix-fragment operations it
    compiles (docs/language.md 5.2), or None: it has no matrix fragments, and ``no_matrix`` says why
    (shown in the refusal). ``async_copy``: ``native(target) -> bool``, where the kind compiles
    ``pk.copy_async`` itself (elsewhere the pipeline lowers it to a plain copy, passes/async_copy.py).
    ``hopper``: ``support(target) -> "" or why not`` for Hopper operations (ir/hopper.py), or None.
    ``debug_print``: whether it compiles ``pk.debug_print``.
    ``f16``: an :class:`F16Rounding` where the kind's conversions to f16 need the IR pass
    (``passes/legalize_f16.py``), None where its own instruction keeps the promise (NVPTX ``cvt.rn``,
    OpenCL ``vstore_half_rte``, CUDA C ``__float2half_rn``).
    ``fast_math``: whether its codegen compiles the ``fast_<op>`` calls that ``polykern.numerics.FAST_MATH``
    lists for its numerics profile (passes/fast_math.py turns every other one into the precise operation).
    ``atomics``: ``{element type: what pk.atomic_* on it does}`` for the types whose atomics are not simply
    compiled: ``"no"`` (a ``KernelTypeError``), ``"with `-attr=value`"`` (refused unless the target sets
    that), ``"yes (note)"`` (compiled, with a note). A type the kind ``refuses`` is "no" without saying so.
    The atomics table of docs/language.md is generated from it (``polykern.testing.support_table``).
    """

    numerics: str = ""
    refuses: Mapping[str, str] = field(default_factory=dict)
    matrix: Optional[Callable] = None
    no_matrix: str = ""
    async_copy: Optional[Callable] = None
    hopper: Optional[Callable] = None
    debug_print: bool = False
    f16: Optional[F16Rounding] = None
    fast_math: bool = False
    atomics: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        refuses = dict(self.refuses)
        for feature, why in refuses.items():
            if not (isinstance(feature, str) and _FEATURE_RE.match(feature)) or not (isinstance(why, str) and why):
                raise ValueError(f"Capabilities.refuses: each entry is a feature name and the reason it is "
                                 f"refused, got {feature!r}: {why!r}")
        object.__setattr__(self, "refuses", MappingProxyType(dict(sorted(refuses.items()))))
        atomics = dict(self.atomics)
        for t, cell in atomics.items():
            if t not in ATOMIC_TYPES or not (isinstance(cell, str) and _ATOMIC_CELL_RE.match(cell)):
                raise ValueError(f"Capabilities.atomics: each entry is an element type ({', '.join(ATOMIC_TYPES)}) "
                                 f"and 'no', 'with `-attr=value`' or 'yes (note)', got {t!r}: {cell!r}")
        object.__setattr__(self, "atomics", MappingProxyType(atomics))
        for name in ("matrix", "async_copy", "hopper"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise ValueError(f"Capabilities.{name} is a function or None, got {value!r}")
        if self.matrix is not None and self.no_matrix:
            raise ValueError("Capabilities.no_matrix says why a kind has no matrix fragments; this one has "
                             "a matrix support function")
        if self.f16 is not None and not isinstance(self.f16, F16Rounding):
            raise ValueError(f"Capabilities.f16 is an F16Rounding or None, got {self.f16!r}")
        if not isinstance(self.debug_print, bool) or not isinstance(self.numerics, str):
            raise ValueError(f"Capabilities: debug_print is a bool and numerics a string, got "
                             f"{self.debug_print!r} and {self.numerics!r}")
        if not isinstance(self.fast_math, bool):
            raise ValueError(f"Capabilities.fast_math is a bool, got {self.fast_math!r}")


def of(kind: str) -> Capabilities:
    """The capabilities that target kind ``kind`` declared (TargetError for an unregistered kind)."""
    tk = registry.get(f"target.kind.{kind}")
    if tk is None:
        raise TargetError(f"unknown target kind '{kind}': it has no declared capabilities (registered: "
                          f"{', '.join(n[len('target.kind.'):] for n in registry.names('target.kind.')) or 'none'})")
    return tk.capabilities


def atomic_support(kind: str) -> Dict[str, str]:
    """``{element type: "yes" | "no" | "with `-attr=value`" | "yes (note)"}`` for every type of
    ``ATOMIC_TYPES``: what pk.atomic_* on it does on target kind ``kind`` (its declared ``atomics``; "no"
    for a type it refuses)."""
    caps = of(kind)
    return {t: "no" if t in caps.refuses else caps.atomics.get(t, "yes") for t in ATOMIC_TYPES}


def conformance_skips(kind: str) -> Dict[str, str]:
    """``{feature: reason}`` the conformance suite and the fuzzer skip for target kind ``kind`` by its
    declaration alone: what it refuses, and ``matrix`` where it has no matrix fragments. (What a device
    lacks is the backend's ``conformance.device_skips``, tests/runtimes.py.)"""
    caps = of(kind)
    skips = dict(caps.refuses)
    if caps.matrix is None:
        skips["matrix"] = f"{kind} has no matrix fragments: they are refused at build" + (
            f" ({caps.no_matrix})" if caps.no_matrix else "")
    return skips
