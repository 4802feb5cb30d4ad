"""``pk.debug_print(fmt, args...)``: the format subset, the argument types it takes, how each output
renders it, and which targets print (docs/language.md "Debugging").

A format is text with conversions ``%[flags][width][.precision]conv``: flags from ``-+ 0``, width and
precision decimal numbers, ``conv`` one of ``d i`` (signed integer), ``u x X o`` (unsigned integer),
``f F e E g G`` (float); ``%%`` is a percent sign. There are no length modifiers (the argument's type
gives the length), no ``*`` width or precision, no ``%s %c %p %a`` and no ``#`` flag. The text is
printable ASCII, newlines and tabs.

``ir.Print.args`` are the converted arguments, one per conversion, each a ``Var`` or ``Const`` of
``arg_type(spec, bits)``: ``i32``/``i64`` for ``d i``, ``u32``/``u64`` for ``u x X o`` (a narrower
integer or a bool is widened to 32 bits by value, then read in the conversion's signedness, as C's
``printf`` reads a promoted argument), ``f32``/``f64`` for the float conversions (f16 and bf16 print
through f32).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Sequence, Union

from ..errors import KernelTypeError
from . import nodes as ir
from .types import ScalarType, f32, f64, i32, i64, u32, u64

__all__ = ["Spec", "FormatError", "parse", "arg_type", "c_format", "render", "check_target",
           "MAX_ARGS", "uses_print"]

SIGNED, UNSIGNED, FLOAT = "di", "uxXo", "fFeEgG"
#: At most this many arguments (CUDA's printf takes 32).
MAX_ARGS = 32
_SPEC = re.compile(r"%([-+ 0]*)([0-9]*)(?:\.([0-9]*))?(.?)")
_TEXT_OK = re.compile(r"[\x20-\x7e\n\t]*")


class FormatError(ValueError):
    """A format outside the subset; ``offset`` is the character of ``fmt`` it is about."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class Spec:
    """One conversion: ``%`` flags width ``.`` precision conv (precision None: none given)."""

    flags: str
    width: str
    precision: Union[str, None]
    conv: str

    @property
    def text(self) -> str:
        return f"%{self.flags}{self.width}{'' if self.precision is None else '.' + self.precision}{self.conv}"

    @property
    def is_float(self) -> bool:
        return self.conv in FLOAT


Part = Union[str, Spec]


def parse(fmt: str) -> List[Part]:
    """The literal texts and conversions of ``fmt``, in order; a FormatError outside the subset."""
    bad = _TEXT_OK.fullmatch(fmt)
    if bad is None:
        at = next(i for i, c in enumerate(fmt) if not _TEXT_OK.fullmatch(c))
        raise FormatError(f"the format may hold printable ASCII, newlines and tabs; character {fmt[at]!r} at "
                          f"offset {at} is none of them", at)
    parts: List[Part] = []
    text, i = [], 0
    while i < len(fmt):
        if fmt[i] != "%":
            text.append(fmt[i])
            i += 1
            continue
        if fmt.startswith("%%", i):
            text.append("%")
            i += 2
            continue
        m = _SPEC.match(fmt, i)
        conv = m.group(4)
        if conv in ("l", "h", "L", "q", "j", "z", "t"):
            raise FormatError(f"'{fmt[i:m.end()]}': no length modifiers in pk.debug_print (the argument's type "
                              "gives the length): write %d, %u, %x or %f", i)
        if conv in ("*", "#"):
            raise FormatError(f"'{fmt[i:m.end()]}': '{conv}' is not supported in pk.debug_print formats "
                              "(flags -+ 0, a decimal width and precision)", i)
        if not conv or conv not in SIGNED + UNSIGNED + FLOAT:
            shown = repr(conv) if conv else "the end of the format"
            raise FormatError(f"'{fmt[i:m.end()]}': {shown} is not a pk.debug_print conversion; it takes "
                              "%d %i (signed), %u %x %X %o (unsigned), %f %F %e %E %g %G (float) and %%", i)
        if text:
            parts.append("".join(text))
            text = []
        parts.append(Spec(m.group(1), m.group(2), m.group(3), conv))
        i = m.end()
    if text:
        parts.append("".join(text))
    return parts


def specs(parts: Sequence[Part]) -> List[Spec]:
    return [p for p in parts if isinstance(p, Spec)]


def arg_type(spec: Spec, t: ScalarType) -> Union[ScalarType, None]:
    """The type an argument of type ``t`` is printed in by ``spec`` (see the module docstring), or None
    when ``spec`` cannot print a ``t`` (a float for an integer conversion, or the converse)."""
    if spec.is_float:
        return (f64 if t.bits == 64 else f32) if t.is_float else None
    if t.is_float:
        return None
    wide = t.bits == 64
    if spec.conv in SIGNED:
        return i64 if wide else i32
    return u64 if wide else u32


def c_format(parts: Sequence[Part], types: Sequence[ScalarType], long64: str) -> str:
    """The ``printf`` format of ``parts`` for arguments of ``types`` (``arg_type``'s): a 64-bit integer
    gets the length modifier ``long64`` ("ll" in C and CUDA, "l" in OpenCL C)."""
    out, k = [], 0
    for p in parts:
        if isinstance(p, str):
            out.append(p.replace("%", "%%"))
            continue
        mod = long64 if not p.is_float and types[k].bits == 64 else ""
        out.append(p.text[:-1] + mod + p.conv)
        k += 1
    return "".join(out)


def render(parts: Sequence[Part], values: Sequence) -> str:
    """The text ``printf`` prints for ``parts`` and the argument values (Python ints of the argument's
    type, floats): the interpreter's output."""
    out, k = [], 0
    for p in parts:
        if isinstance(p, str):
            out.append(p)
            continue
        out.append(p.text % values[k])  # Python's %-formatting is C's for this subset
        k += 1
    return "".join(out)


def uses_print(fn) -> bool:
    return any(isinstance(s, ir.Print) for s in ir.walk_stmts(fn.body))


def check_target(fn, kind: str, supported: bool, printing=()) -> None:
    """Refuse ``fn`` for target kind ``kind`` when it prints and the kind does not declare
    ``Capabilities.debug_print`` (polykern/capabilities.py); ``printing`` names the kinds that do."""
    if supported:
        return
    for s in ir.walk_stmts(fn.body):
        if isinstance(s, ir.Print):
            raise KernelTypeError(f"pk.debug_print is not available on target '{kind}' (it prints on "
                                  f"{', '.join(k for k in printing if k != 'interpret')} and under "
                                  "POLYKERN_INTERPRET=1); remove the call or "
                                  "build for one of those", s.loc)
