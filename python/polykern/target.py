"""Targets: ``"cuda -arch=sm_90"`` strings, parsed against per-backend schemas.

This module knows no backend. Each backend registers a :class:`TargetKind`
(its attribute schema) under ``target.kind.<name>``; :class:`Target` parses a
target string against whatever is registered. Syntax::

    KIND [-key=value | -flag]...

``-flag`` alone sets a bool attribute to true; bools also accept
``true/false/1/0/yes/no/on/off``. The canonical form (``str(target)``) is the
kind followed by every non-default attribute as ``-key=value`` sorted by key
(bools as ``true``/``false``), so equal targets print identically.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Dict, Mapping, Optional, Tuple

from . import registry
from .capabilities import Capabilities
from .errors import TargetError

__all__ = ["Attr", "TargetKind", "Target", "register_kind", "get_kind", "list_kinds"]

_ATTR_TYPES = ("str", "int", "bool")
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_KEY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")


@dataclass(frozen=True)
class Attr:
    """One target attribute: its type, default, allowed values and doc line."""

    type: str = "str"
    default: Any = None
    choices: Optional[Tuple[Any, ...]] = None
    doc: str = ""

    def __post_init__(self):
        if self.type not in _ATTR_TYPES:
            raise ValueError(f"Attr type must be one of {_ATTR_TYPES}, got {self.type!r}")
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))

    def describe(self) -> str:
        parts = [self.type]
        if self.choices:
            parts.append("one of " + ", ".join(_fmt(c) for c in self.choices))
        if self.default is not None:
            parts.append(f"default {_fmt(self.default)}")
        text = "; ".join(parts)
        return f"{text} — {self.doc}" if self.doc else text

    def convert(self, kind: str, key: str, text: Optional[str]) -> Any:
        """Parse ``text`` (None for a bare ``-flag``) into this attribute's value."""
        if self.type == "bool":
            if text is None:
                return True
            low = text.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise TargetError(f"target '{kind}': -{key} is a bool; use -{key}, -{key}=true or -{key}=false, "
                              f"not {text!r}")
        if text is None or text == "":
            example = self.choices[0] if self.choices else ("N" if self.type == "int" else "VALUE")
            raise TargetError(f"target '{kind}': -{key} needs a value, e.g. -{key}={example}")
        if self.type == "int":
            try:
                value: Any = int(text, 10)
            except ValueError:
                raise TargetError(f"target '{kind}': -{key} takes an integer, not {text!r}") from None
        else:
            value = text
        self.check_choice(kind, key, value)
        return value

    def check_choice(self, kind: str, key: str, value: Any) -> None:
        if self.choices is not None and value not in self.choices:
            msg = (f"target '{kind}': invalid value {_fmt(value)!r} for -{key}; valid choices: "
                   + ", ".join(_fmt(c) for c in self.choices))
            close = difflib.get_close_matches(str(value), [str(c) for c in self.choices], n=1)
            raise TargetError(msg + (f" (did you mean {close[0]!r}?)" if close else ""))


@dataclass(frozen=True)
class TargetKind:
    """A target kind's schema, registered by its backend under ``target.kind.<name>``, with what it can
    compile (``capabilities``: polykern/capabilities.py; read through ``polykern.capabilities.of``)."""

    name: str
    module_kind: str
    attrs: Mapping[str, Attr] = field(default_factory=dict)
    doc: str = ""
    capabilities: Capabilities = field(default_factory=Capabilities)

    def __post_init__(self):
        if not _NAME_RE.match(self.name or ""):
            raise ValueError(f"target kind names are lower-case identifiers, got {self.name!r}")
        if not _NAME_RE.match(self.module_kind or ""):
            raise ValueError(f"module kinds are lower-case identifiers, got {self.module_kind!r}")
        attrs = dict(self.attrs)
        for key, attr in attrs.items():
            if not isinstance(attr, Attr) or not _KEY_RE.match(key):
                raise ValueError(f"target kind {self.name!r}: bad attribute {key!r}: {attr!r}")
        object.__setattr__(self, "attrs", MappingProxyType(dict(sorted(attrs.items()))))
        if not isinstance(self.capabilities, Capabilities):
            raise ValueError(f"target kind {self.name!r}: capabilities must be a polykern.capabilities."
                             f"Capabilities, got {self.capabilities!r}")
        if not self.capabilities.numerics:  # unless it names another profile, a kind keeps its own name's promises
            object.__setattr__(self, "capabilities", replace(self.capabilities, numerics=self.name))

    def describe(self) -> str:
        lines = [f"{self.name} (module kind '{self.module_kind}')" + (f": {self.doc}" if self.doc else "")]
        for key, attr in self.attrs.items():
            lines.append(f"  -{key}: {attr.describe()}")
        return "\n".join(lines)

    def register(self, override: bool = False) -> "TargetKind":
        register_kind(self, override=override)
        return self


def register_kind(kind: TargetKind, override: bool = False) -> None:
    registry.register(f"target.kind.{kind.name}", kind, override=override)


def list_kinds() -> list:
    """Names of every registered target kind, sorted."""
    prefix = "target.kind."
    return [n[len(prefix):] for n in registry.names(prefix)]


def get_kind(name: str) -> TargetKind:
    """The registered :class:`TargetKind` named ``name``; loads backends once if it is missing."""
    found = registry.get(f"target.kind.{name}")
    if found is None:
        from . import backends  # lazy: target.py must not depend on any backend at import time

        backends.load_all()
        found = registry.get(f"target.kind.{name}")
    if found is None:
        valid = list_kinds()
        if valid:
            msg = f"unknown target kind {name!r}; valid kinds: {', '.join(valid)}"
            close = difflib.get_close_matches(name, valid, n=1)
            if close:
                msg += f" (did you mean {close[0]!r}?)"
        else:
            msg = (f"unknown target kind {name!r}: no backend is registered "
                   "(is a polykern backend installed? see `polykern backends`)")
        raise TargetError(msg)
    return found


class Target:
    """A parsed target: ``Target("cuda -arch=sm_90")`` or ``Target.parse(...)``."""

    __slots__ = ("_kind", "_attrs")

    def __init__(self, spec: "str | Target", **attrs: Any):
        if isinstance(spec, Target):
            kind, values = spec._kind, dict(spec._attrs)
            given = {}
        elif isinstance(spec, str):
            kind, given = _split(spec)
            values = {}
        else:
            raise TargetError(f"a target is a string like 'cuda -arch=sm_90', got {type(spec).__name__}")
        tk = get_kind(kind.name if isinstance(kind, TargetKind) else kind)
        if not values:
            values = {k: a.default for k, a in tk.attrs.items()}
        for key, text in given.items():
            values[key] = _attr(tk, key).convert(tk.name, key, text)
        for key, value in attrs.items():  # programmatic overrides, already typed
            attr = _attr(tk, key)
            _check_type(tk.name, key, attr, value)
            attr.check_choice(tk.name, key, value)
            values[key] = value
        self._kind = tk
        self._attrs = MappingProxyType(values)

    @classmethod
    def parse(cls, spec: "str | Target") -> "Target":
        return spec if isinstance(spec, Target) else cls(spec)

    @property
    def kind(self) -> str:
        return self._kind.name

    @property
    def module_kind(self) -> str:
        return self._kind.module_kind

    @property
    def target_kind(self) -> TargetKind:
        return self._kind

    @property
    def attrs(self) -> Mapping[str, Any]:
        return self._attrs

    def __getitem__(self, key: str) -> Any:
        return self._attrs[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._attrs.get(key, default)

    def with_attrs(self, **attrs: Any) -> "Target":
        return Target(self, **attrs)

    def __str__(self) -> str:
        parts = [self._kind.name]
        for key in sorted(self._attrs):
            value = self._attrs[key]
            if value != self._kind.attrs[key].default:
                parts.append(f"-{key}={_fmt(value)}")
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Target(other)
            except TargetError:
                return False
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def _split(spec: str) -> Tuple[str, Dict[str, Optional[str]]]:
    tokens = spec.split()
    if not tokens:
        valid = list_kinds()
        raise TargetError("empty target string" + (f"; valid kinds: {', '.join(valid)}" if valid else ""))
    kind, given = tokens[0], {}
    if kind.startswith("-"):
        raise TargetError(f"target string {spec!r} must start with a target kind, not an attribute")
    for tok in tokens[1:]:
        if not tok.startswith("-") or tok in ("-", "--"):
            raise TargetError(f"target {kind!r}: expected -key=value, got {tok!r} "
                              "(attribute values cannot contain spaces)")
        body = tok[2:] if tok.startswith("--") else tok[1:]
        key, eq, value = body.partition("=")
        if key in given:
            raise TargetError(f"target {kind!r}: attribute -{key} given twice")
        given[key] = value if eq else None
    return kind, given


def _attr(tk: TargetKind, key: str) -> Attr:
    attr = tk.attrs.get(key)
    if attr is None:
        if tk.attrs:
            valid = "; ".join(f"-{k} ({a.describe()})" for k, a in tk.attrs.items())
            msg = f"target '{tk.name}' has no attribute -{key}; valid attributes: {valid}"
            close = difflib.get_close_matches(key, list(tk.attrs), n=1)
            if close:
                msg += f" (did you mean -{close[0]}?)"
        else:
            msg = f"target '{tk.name}' takes no attributes (got -{key})"
        raise TargetError(msg)
    return attr


def _check_type(kind: str, key: str, attr: Attr, value: Any) -> None:
    ok = {"bool": lambda v: isinstance(v, bool),
          "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "str": lambda v: isinstance(v, str) and v != "" and not any(c.isspace() for c in v)}[attr.type]
    if not ok(value):
        raise TargetError(f"target '{kind}': -{key} must be a {attr.type}, got {value!r}")


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
