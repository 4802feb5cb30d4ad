"""Parameter annotations beyond scalar types and ``Buffer[T]``.

- ``pk.constexpr``: a parameter fixed at build time (``kernel.specialize(BLOCK=128)``, or, for a
  ``@pk.func`` function, the constant argument of each call); inside the body its name is a Python
  number, usable as an array size, a ``range`` bound or a literal.
- ``pk.dtype``: a parameter that is a scalar type; other annotations name it as a string
  (``x: Buffer["T"]``, ``s: "T"``, ``acc: "T" = 0``) and ``T(expr)`` casts to it.
- ``Shared[T]`` and ``Local[T]``: a ``@pk.func`` parameter that is a ``pk.shared`` / ``pk.local`` array
  (its size is the argument's).
- ``pk.WgAcc`` (``pk.WgAcc[64, n]``: of that shape only), ``pk.WgVec``, ``pk.MBarriers`` and
  ``pk.TensorMap``: a ``@pk.func`` parameter that is the caller's warpgroup accumulator, row vector,
  barrier set or tensor map (ir/hopper.py; its type, shape included, is the argument's).

:func:`resolve` turns what an annotation evaluated to into a type, looking names of ``pk.dtype``
parameters up with a callback (the translator's scope, where specialization values are bound).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

from ..errors import KernelTypeError
from ..ir import hopper as H
from ..ir.types import ArrayType, BufferType, ScalarType, _annotation_error, f32

__all__ = ["TypeParam", "constexpr", "dtype", "ArrayParam", "Shared", "Local", "HopperParam", "WgAcc", "WgVec",
           "MBarriers", "TensorMap", "hopper_object", "resolve"]


class TypeParam:
    """The marker annotations ``pk.constexpr`` and ``pk.dtype`` (compared by identity)."""

    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind

    def __repr__(self) -> str:
        return f"pk.{self.kind}"


constexpr = TypeParam("constexpr")
dtype = TypeParam("dtype")


@dataclass(frozen=True)
class ArrayParam:
    """``Shared[T]`` / ``Local[T]``: an array parameter of a device function (``elem`` may be a
    ``pk.dtype`` name as a string until resolved)."""

    elem: Union[ScalarType, str]
    scope: str  # "shared" | "local"

    def __str__(self) -> str:
        return f"{self.scope.capitalize()}[{self.elem}]"

    def accepts(self, t) -> bool:
        return isinstance(t, ArrayType) and t.scope == self.scope and t.elem == self.elem


class _ArrayFactory:
    def __init__(self, scope: str):
        self.scope = scope

    def __getitem__(self, elem) -> ArrayParam:
        name = self.scope.capitalize()
        if not isinstance(elem, ScalarType) and not (isinstance(elem, str) and elem.isidentifier()):
            raise _annotation_error(f"{name}[...] takes one scalar type (f32, i32, ...) or the name of a "
                                    f"pk.dtype parameter as a string, got {elem!r}")
        return ArrayParam(elem, self.scope)

    def __repr__(self) -> str:
        return self.scope.capitalize()


Shared = _ArrayFactory("shared")
Local = _ArrayFactory("local")


@dataclass(frozen=True)
class HopperParam:
    """``pk.WgAcc`` / ``pk.WgAcc[64, n]`` / ``pk.WgVec`` / ``pk.MBarriers`` / ``pk.TensorMap``: a device
    function parameter that aliases the caller's Hopper object of that kind (``n``: the accumulator's N
    the parameter requires; None: any)."""

    kind: str  # a key of _HOPPER_KINDS
    n: Optional[int] = None

    def __str__(self) -> str:
        return f"pk.{self.kind}" + (f"[64, {self.n}]" if self.n is not None else "")

    @property
    def what(self) -> str:
        """The objects it takes, for messages."""
        cls, what = _HOPPER_KINDS[self.kind]
        return what if self.n is None else f"{what} of 64 x {self.n}"

    def accepts(self, t) -> bool:
        return isinstance(t, _HOPPER_KINDS[self.kind][0]) and (self.n is None or t.n == self.n)

    def __getitem__(self, shape) -> "HopperParam":
        ok = self.kind == "WgAcc" and self.n is None and isinstance(shape, tuple) and len(shape) == 2 \
            and all(type(d) is int for d in shape) and shape[0] == H.WG_M
        if not ok:
            raise _annotation_error(f"{self}[...] takes no shape" if self.kind != "WgAcc" or self.n is not None else
                                    f"pk.WgAcc[64, n] takes an accumulator's shape: 64 rows (wgmma's m64) and "
                                    f"its N, two integers, got {shape!r}")
        why = H.check_acc(f32, shape[1])
        if why:
            raise _annotation_error(f"pk.WgAcc[64, {shape[1]}]: {why}")
        return HopperParam(self.kind, shape[1])


#: HopperParam kind -> (the object type it aliases, what that is in messages).
_HOPPER_KINDS = {
    "WgAcc": (H.WgAccType, "a warpgroup accumulator (pk.wg_acc)"),
    "WgVec": (H.WgVecType, "a warpgroup row vector (pk.wg_vec)"),
    "MBarriers": (H.MBarrierSetType, "a barrier set (pk.mbarriers)"),
    "TensorMap": (H.TensorMap, "a tensor map (pk.tensor_map)"),
}
WgAcc, WgVec, MBarriers, TensorMap = (HopperParam(k) for k in _HOPPER_KINDS)


def hopper_object(t) -> Optional[str]:
    """What ``t`` is when it is the type of a Hopper object (for messages), else None."""
    return next((f"{what[2:]} of type {t}" for cls, what in _HOPPER_KINDS.values() if isinstance(t, cls)), None)


def resolve(value, lookup: Callable[[str], object], loc):
    """The type an annotation means. ``value`` is what the annotation evaluated to; ``lookup(text)``
    evaluates a string (a forward reference like ``"T"`` or ``"Buffer['T']"``) in the translator's
    scope. Markers (``pk.constexpr``/``pk.dtype``) are returned as they are."""
    for _ in range(4):  # "T" -> f16; "Buffer['T']" -> Buffer["T"] -> Buffer[f16]
        if not isinstance(value, str):
            break
        value = lookup(value)
    if isinstance(value, BufferType) and isinstance(value.elem, str):
        return BufferType(_elem(value.elem, lookup, loc), value.readonly)
    if isinstance(value, ArrayParam) and isinstance(value.elem, str):
        return ArrayParam(_elem(value.elem, lookup, loc), value.scope)
    return value


def _elem(name: str, lookup, loc) -> ScalarType:
    t = lookup(name)
    if not isinstance(t, ScalarType):
        raise KernelTypeError(f"'{name}' in this annotation must name a scalar type (a pk.dtype parameter of "
                              f"a specialized kernel, or f32, i32, ...), got {t!r}", loc)
    return t
