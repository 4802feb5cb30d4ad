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

__all__ = ["F16Rounding", "IntSemantics", "FloatSemantics", "LLVM_INTS", "C_INTS", "LIBM_FLOATS", "GPU_LLVM_FLOATS",
           "Capabilities", "of", "conformance_skips", "atomic_support", "ATOMIC_TYPES"]

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


def _choose(record, name: str, allowed: Tuple[str, ...]) -> None:
    value = getattr(record, name)
    if value not in allowed:
        raise ValueError(f"{type(record).__name__}.{name} is one of {', '.join(map(repr, allowed))}, got {value!r}")


@dataclass(frozen=True)
class IntSemantics:
    """How ``passes/legalize_numerics.py`` writes docs/language.md 7.1 (integer ``//``, ``%``, shifts) and
    7.3 (float -> int) for a target kind. Each field names the target's own instruction where it already
    keeps the promise ("native": the pass leaves the operation alone, no cost) or what the pass writes:

    ``division``: "guard": the divisor becomes 1 where ``b == 0`` or ``MIN / -1`` (then ``a / 1`` and
    ``a % 1`` are the promised ``x // 0 == x``, ``x % 0 == 0``, ``MIN // -1 == MIN``, ``MIN % -1 == 0``);
    "native": the target's ``/`` and ``%`` define those cases so (WGSL).
    ``remainder``: "native": the target's signed ``%`` truncates (the dividend's sign) for every operand
    sign; "magnitudes": signed ``%`` is the unsigned remainder of the magnitudes with the dividend's sign
    (the Vulkan environment leaves OpSRem undefined for negative operands).
    ``shifts``: "mask": the amount is ``s & (bits - 1)`` (LLVM, SPIR-V and C leave a shift by the width
    or more undefined); "native": the target's shift takes the amount modulo the width.
    ``float_to_int``: "native": the conversion saturates and sends NaN to 0 (LLVM ``fpto[su]i.sat``);
    "select": the pass converts only in-range values and selects MIN, MAX or 0 for the rest."""

    division: str = "guard"
    remainder: str = "magnitudes"
    shifts: str = "mask"
    float_to_int: str = "select"

    def __post_init__(self):
        _choose(self, "division", ("guard", "native"))
        _choose(self, "remainder", ("magnitudes", "native"))
        _choose(self, "shifts", ("mask", "native"))
        _choose(self, "float_to_int", ("select", "native"))


@dataclass(frozen=True)
class FloatSemantics:
    """How ``passes/legalize_numerics.py`` writes float ``%`` and ``pk.pow`` (docs/language.md 7.2, 5)
    for a target kind. ``fmod``: "native": the target's remainder is C's exact ``fmod``; "exact": the pass
    writes it with exact subtractions (OpFRem, WGSL ``%`` and NVPTX/AMDGPU ``frem`` round).
    ``pow``: "native": the target's ``pow`` keeps C99 Annex F's special cases; "c99": the pass computes
    ``pow(|x|, y)`` and selects the special cases (GLSL and WGSL ``pow`` are undefined for x < 0).
    ``log``: "native": the target's f32 ``log``/``log2`` of a subnormal is as accurate as of any other
    value; "scale_subnormals": the pass scales an x below 2**-126 by 2**24 first and subtracts 24 ln 2
    (24) after (lavapipe keeps subnormals in arithmetic but not in its log: log(1e-40) = -88.02).
    ``finite_math``: the target's compiler may assume no NaN in a comparison (WGSL), so the pass's
    float -> int conversion also finds a NaN from the bits (its ``fmod`` and ``pow`` always do).
    ``division``: "native": the target keeps ``x / y`` whatever it can derive about ``y``;
    "negated_divisor": the pass divides by ``-|y|`` and negates the quotient where ``y``'s sign bit is
    clear (the same IEEE value; lavapipe dropped the store of ``x / y`` where it could derive ``y == +0.0``
    and keeps ``x / -0.0``). A nonzero constant divisor is left alone."""

    fmod: str = "exact"
    pow: str = "c99"
    log: str = "scale_subnormals"
    finite_math: bool = True
    division: str = "negated_divisor"

    def __post_init__(self):
        if not isinstance(self.finite_math, bool):
            raise ValueError(f"FloatSemantics.finite_math is a bool, got {self.finite_math!r}")
        _choose(self, "fmod", ("exact", "native"))
        _choose(self, "pow", ("c99", "native"))
        _choose(self, "log", ("scale_subnormals", "native"))
        _choose(self, "division", ("negated_divisor", "native"))


#: an LLVM target's instructions: ``srem`` truncates, ``llvm.fpto[su]i.sat`` saturates and sends NaN to 0
#: (``sdiv``/``srem`` by 0 or MIN / -1 and a shift by the width or more are poison: guarded, masked)
LLVM_INTS = IntSemantics(remainder="native", float_to_int="native")
#: C's (CUDA C, OpenCL C, Metal): ``%`` truncates (C99); a float -> int conversion out of range is undefined
C_INTS = IntSemantics(remainder="native")
#: C's ``fmod`` and ``pow`` (libm, CUDA's, OpenCL's, Metal's, polykern's portable device math on
#: hexagon: codegen/llvm_devmath.py)
LIBM_FLOATS = FloatSemantics(fmod="native", pow="native", log="native", finite_math=False, division="native")
#: NVPTX and AMDGPU: ``pow`` is polykern's portable device math (C99's cases), but LLVM lowers ``frem`` as
#: ``x - trunc(x / y) * y``, which is not fmod
GPU_LLVM_FLOATS = FloatSemantics(fmod="exact", pow="native", log="native", finite_math=False, division="native")


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
    ``ints``: an :class:`IntSemantics`, ``floats``: a :class:`FloatSemantics`: which of the language's
    integer, conversion, ``fmod`` and ``pow`` promises its own instructions keep, and which
    ``passes/legalize_numerics.py`` writes on its IR (the defaults: all of them, so a new kind is right
    before it is fast).
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
    ints: IntSemantics = IntSemantics()
    floats: FloatSemantics = FloatSemantics()

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
        if not isinstance(self.ints, IntSemantics) or not isinstance(self.floats, FloatSemantics):
            raise ValueError(f"Capabilities.ints is an IntSemantics and floats a FloatSemantics, got "
                             f"{self.ints!r} and {self.floats!r}")
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
