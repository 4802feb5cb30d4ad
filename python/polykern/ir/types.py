"""Types of the kernel language and IR.

Scalar types carry a DLPack-style (code, bits, lanes) triple, which is also what
``FunctionInfo`` records for launch-time checking and what the byte format stores.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from .bfloat16 import BF16_DTYPE, BF16_MAX, is_bf16_dtype, round_value

# DLPack type codes.
CODE_INT = 0
CODE_UINT = 1
CODE_FLOAT = 2
CODE_BFLOAT = 4
CODE_BOOL = 6


@dataclass(frozen=True)
class ScalarType:
    name: str
    code: int
    bits: int

    lanes = 1

    @property
    def is_float(self) -> bool:
        return self.code == CODE_FLOAT or self.code == CODE_BFLOAT

    @property
    def is_int(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.code in (CODE_INT, CODE_UINT)

    @property
    def is_signed(self) -> bool:
        return self.code == CODE_INT or self.is_float

    @property
    def is_bool(self) -> bool:
        return self.code == CODE_BOOL

    @property
    def nbytes(self) -> int:
        return 1 if self.is_bool else self.bits // 8

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype of arrays of this type (bf16: uint16 bits marked bf16, ir/bfloat16.py)."""
        return BF16_DTYPE if self.code == CODE_BFLOAT else np.dtype(_NUMPY_NAMES[self.name])

    def min_value(self):
        if self.code == CODE_BFLOAT:
            return -BF16_MAX
        if self.is_float:
            return -float(np.finfo(self.numpy).max)
        if self.is_bool:
            return 0
        return int(np.iinfo(self.numpy).min)

    def max_value(self):
        if self.code == CODE_BFLOAT:
            return BF16_MAX
        if self.is_float:
            return float(np.finfo(self.numpy).max)
        if self.is_bool:
            return 1
        return int(np.iinfo(self.numpy).max)

    # Calling a type inside a kernel is a cast (``f32(x)``); outside a kernel it
    # makes a NumPy scalar, which is handy for launch arguments (bf16: the f32 holding the value
    # rounded to bf16, as NumPy has no bf16 scalar).
    def __call__(self, value):
        if self.code == CODE_BFLOAT:
            return np.float32(round_value(value))
        return self.numpy.type(value)

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


bool_ = ScalarType("bool", CODE_BOOL, 8)
i8 = ScalarType("i8", CODE_INT, 8)
i16 = ScalarType("i16", CODE_INT, 16)
i32 = ScalarType("i32", CODE_INT, 32)
i64 = ScalarType("i64", CODE_INT, 64)
u8 = ScalarType("u8", CODE_UINT, 8)
u16 = ScalarType("u16", CODE_UINT, 16)
u32 = ScalarType("u32", CODE_UINT, 32)
u64 = ScalarType("u64", CODE_UINT, 64)
f16 = ScalarType("f16", CODE_FLOAT, 16)
f32 = ScalarType("f32", CODE_FLOAT, 32)
f64 = ScalarType("f64", CODE_FLOAT, 64)
bf16 = ScalarType("bf16", CODE_BFLOAT, 16)

SCALAR_TYPES = {t.name: t for t in (bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64, bf16)}
_NUMPY_NAMES = {
    "bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64",
}
_BY_CODE = {(t.code, t.bits): t for t in SCALAR_TYPES.values()}


def scalar_from_code(code: int, bits: int) -> ScalarType:
    try:
        return _BY_CODE[(code, bits)]
    except KeyError:
        raise ValueError(f"no scalar type with type code {code} and {bits} bits") from None


def scalar_from_numpy(dtype) -> Optional[ScalarType]:
    dt = np.dtype(dtype)
    if is_bf16_dtype(dt):
        return bf16
    for t in SCALAR_TYPES.values():
        if t is not bf16 and np.dtype(_NUMPY_NAMES[t.name]) == dt:
            return t
    return None


@dataclass(frozen=True)
class BufferType:
    """Global memory: a 1-D array of ``elem`` passed as a kernel argument."""

    elem: ScalarType
    readonly: bool = False

    def __str__(self) -> str:
        return f"Buffer[{self.elem}{', readonly' if self.readonly else ''}]"


@dataclass(frozen=True)
class ArrayType:
    """A fixed-size array in workgroup ("shared") or private ("local") memory; or, with ``dynamic``, the
    kernel's one ``pk.shared_dynamic`` array, whose length is given at launch (size 0 here; see
    polykern/ir/dynamic_shared.py)."""

    elem: ScalarType
    size: int
    scope: str  # "shared" | "local"
    dynamic: bool = False

    def __str__(self) -> str:
        return f"{self.scope}[{self.elem} x {'dynamic' if self.dynamic else self.size}]"


FRAGMENT_ROLES = ("a", "b", "acc")


@dataclass(frozen=True)
class FragmentType:
    """A matrix fragment (docs/language.md "Matrix fragments"): one ``rows x cols`` matrix of ``elem``
    held by a whole subgroup, the ``role`` operand of an ``m x n x k`` multiply-add: ``a`` is m x k,
    ``b`` is k x n, ``acc`` (the C and D operands) is m x n."""

    role: str  # one of FRAGMENT_ROLES
    elem: ScalarType
    m: int
    n: int
    k: int

    @property
    def rows(self) -> int:
        return self.k if self.role == "b" else self.m

    @property
    def cols(self) -> int:
        return self.k if self.role == "a" else self.n

    @property
    def shape(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    def __str__(self) -> str:
        return f"frag_{self.role}[{self.elem}, {self.shape}]"


Type = Union[ScalarType, BufferType, ArrayType]


class _BufferFactory:
    """``Buffer[f32]`` and ``Buffer[f32, "readonly"]`` in kernel annotations.

    Python evaluates annotations where the kernel is defined, so a wrong form is reported there: a
    ``KernelTypeError`` located at the annotation's line in the caller's file.
    """

    FORMS = ('Buffer[T] or Buffer[T, "readonly"] with T a scalar type (f32, i32, ...) or the name of a '
             'pk.dtype parameter as a string ("T")')

    def __getitem__(self, item) -> BufferType:
        if isinstance(item, tuple):
            if len(item) != 2 or item[1] != "readonly":
                extra = ", ".join(repr(x) for x in item[1:])
                raise _annotation_error(f"Buffer[...] got {extra} after the element type; the valid forms "
                                        f"are {self.FORMS}")
            elem, ro = item[0], True
        else:
            elem, ro = item, False
        if not isinstance(elem, ScalarType) and not (isinstance(elem, str) and elem.isidentifier()):
            raise _annotation_error(f"Buffer element must be a scalar type, got {elem!r}; the valid forms "
                                    f"are {self.FORMS}")
        # A string element (Buffer["T"]) names a pk.dtype parameter; the frontend resolves it when the
        # kernel is specialized (lang/annotations.py), so no BufferType with a string reaches the IR.
        return BufferType(elem, ro)

    def __repr__(self) -> str:
        return "Buffer"


def _annotation_error(message: str):
    """A KernelTypeError at the first caller frame outside polykern and typing (the user's annotation)."""
    import linecache
    import sys

    from ..errors import KernelTypeError, SourceLoc

    frame = sys._getframe(1)
    here = __name__.rsplit(".", 2)[0]
    while frame is not None and (frame.f_globals.get("__name__", "").startswith((here + ".", "typing"))
                                 or frame.f_globals.get("__name__") == here):
        frame = frame.f_back
    if frame is None:
        return KernelTypeError(message)
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    col = text.find("Buffer[") + 1 if "Buffer[" in text else len(text) - len(text.lstrip()) + 1
    return KernelTypeError(message, SourceLoc(frame.f_code.co_filename, frame.f_lineno, col, text))


Buffer = _BufferFactory()
