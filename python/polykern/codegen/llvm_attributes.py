"""Attributes llvmlite cannot write: ``"key"="value"`` string attributes of a function (AMDGPU's
``amdgpu-flat-work-group-size``, NVPTX's ``nvvm.maxntid``), and parameter attributes written as given
(``byval(<type>)`` of an opaque pointer, whose type llvmlite would take from a typed pointer, which
LLVM no longer has; ``"nvvm.grid_constant"``)."""
from __future__ import annotations

from typing import Dict, Sequence

from llvmlite import ir as ll


class StringFunctionAttributes(ll.values.FunctionAttributes):
    """Function attributes plus ``"key"="value"`` string attributes (llvmlite knows only keywords)."""

    def __init__(self, base, strings: Dict[str, str]):
        super().__init__(list(base))
        self.strings = dict(strings)

    def _to_list(self, ret_type):
        return super()._to_list(ret_type) + [f'"{k}"="{v}"' for k, v in sorted(self.strings.items())]


class RawArgumentAttributes(ll.values.ArgumentAttributes):
    """Parameter attributes in LLVM's own spelling (``byval([128 x i8])``, ``"nvvm.grid_constant"``), then
    ``align``."""

    def __init__(self, raw: Sequence[str], align: int = 0):
        super().__init__()
        self.raw = tuple(raw)
        self.align = align

    def _to_list(self, typ):
        return [*self.raw, *super()._to_list(typ)]
