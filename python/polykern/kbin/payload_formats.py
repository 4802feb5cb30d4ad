"""What a device module kind accepts as its payload, and the one check of a loaded payload against it.

A ``.kbin`` of format version 2 is self-describing: each module payload carries its layout
(``wire.LAYOUTS``) and a fmt string, so a valid container can hold a layout or fmt the kind's
codegen never writes (docs/internals.md "Byte format"). Each backend declares once, next to its
fallback module, the :class:`PayloadFormats` its kind accepts; its codegen registers it under
``module.payload.<kind>`` (always, runtime or not) and its runtime loader checks with it, so an
artifact gets the same verdict on a host with or without the runtime: ``artifact.load`` applies
:func:`check_registered` to every device module before its loader or its unavailable module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

from .. import registry
from . import wire
from ..errors import ArtifactError
from .function_info import FunctionInfo
from .messages import quote

__all__ = ["PayloadFormats", "check_payload", "check_registered", "registry_key"]


@dataclass(frozen=True)
class PayloadFormats:
    """A kind's accepted payload: one ``layout`` ("bytes" or "smap"), the ``fmts`` it may carry,
    and what every function in the function map needs: with ``section_per_function`` (layout smap)
    a section named after it, and each attribute named in ``attrs``."""

    layout: str
    fmts: Tuple[str, ...]
    section_per_function: bool = False
    attrs: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.layout not in wire.LAYOUTS or self.layout == "root":
            raise ValueError(f"a device payload layout is one of {', '.join(wire.LAYOUTS[1:])}, got {self.layout!r}")
        if not self.fmts or not all(isinstance(f, str) and f for f in self.fmts):
            raise ValueError(f"accepted fmts are non-empty strings, got {self.fmts!r}")
        if self.section_per_function and self.layout != "smap":
            raise ValueError("a section per function needs layout 'smap'")

    def describe(self) -> str:
        """"layout 1 (bytes) with fmt 'o'" — what the messages say is accepted."""
        fmts = " or ".join(quote(f) for f in self.fmts)
        return f"layout {wire.LAYOUTS.index(self.layout)} ({self.layout}) with fmt {fmts}"


def registry_key(kind: str) -> str:
    return f"module.payload.{kind}"


def _layout_text(payload: object) -> str:
    layout = wire.payload_layout(payload)
    return f"{wire.LAYOUTS.index(layout)} ({layout})"


def check_payload(kind: str, accepted: PayloadFormats, fmt: str, fmap: Mapping[str, FunctionInfo],
                  payload: object) -> None:
    """Raise :class:`ArtifactError` (naming ``kind``, the layout and fmt found, and what is accepted)
    unless the decoded payload ``(fmt, fmap, payload)`` is one a ``kind`` module accepts."""
    layout = wire.payload_layout(payload)
    if layout != accepted.layout or fmt not in accepted.fmts:
        raise ArtifactError(f"{kind} module: payload layout {_layout_text(payload)} with fmt {quote(fmt)} is not "
                            f"one that {kind} modules hold; they accept {accepted.describe()}")
    for name, info in fmap.items():
        if accepted.section_per_function and name not in payload:  # type: ignore[operator]
            raise ArtifactError(f"{kind} module: kernel {quote(name)} has no section in the payload (layout "
                                f"{_layout_text(payload)} with fmt {quote(fmt)}: {kind} modules hold one section "
                                "per kernel, named after it)")
        for attr in accepted.attrs:
            if attr not in info.attrs:
                raise ArtifactError(f"{kind} module: kernel {quote(name)} has no {quote(attr)} attribute (fmt "
                                    f"{quote(fmt)}: {kind} kernels carry "
                                    f"{', '.join(quote(a) for a in accepted.attrs)})")


def check_registered(kind: str, fmt: str, fmap: Mapping[str, FunctionInfo], payload: object) -> Optional[PayloadFormats]:
    """:func:`check_payload` with the formats registered for ``kind`` (none registered: nothing to
    check, e.g. a kind no installed backend provides). Returns what was checked against."""
    accepted = registry.get(registry_key(kind))
    if accepted is not None:
        if not isinstance(accepted, PayloadFormats):
            raise ArtifactError(f"{registry_key(kind)} is {accepted!r}, not a PayloadFormats")
        check_payload(kind, accepted, fmt, fmap, payload)
    return accepted
