"""The exception hierarchy of polykern.

Every error a user can trigger derives from :class:`PolykernError`. Errors that
point at kernel source carry a :class:`SourceLoc` and render as
``file.py:LINE:COL: message`` followed by the source line and a caret.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = [
    "SourceLoc", "PolykernError", "KernelSyntaxError", "KernelTypeError", "TargetError",
    "CompileError", "BackendUnavailableError", "RuntimeNotLinkedError", "ArtifactError",
    "LaunchError", "OperatorError", "DeviceStringError", "DeviceUnavailableError", "StreamError", "DeviceError",
    "InterpretError", "DataRaceError", "UninitializedReadError",
]


@dataclass(frozen=True)
class SourceLoc:
    """A position in the user's kernel source (1-based line, 1-based column)."""

    file: str
    line: int
    col: int
    source_line: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def caret(self) -> str:
        if not self.source_line:
            return ""
        text = self.source_line.rstrip("\n")
        pad = "".join(c if c == "\t" else " " for c in text[: max(self.col - 1, 0)])
        return f"    {text}\n    {pad}^"


class PolykernError(Exception):
    """Base class of every polykern error."""


class _LocatedError(PolykernError):
    def __init__(self, message: str, loc: Optional[SourceLoc] = None):
        self.message = message
        self.loc = loc
        super().__init__(self._render())

    def _render(self) -> str:
        if self.loc is None:
            return self.message
        text = f"{self.loc}: {self.message}"
        caret = self.loc.caret()
        return f"{text}\n{caret}" if caret else text


class KernelSyntaxError(_LocatedError):
    """The kernel uses Python syntax the kernel language does not support."""


class KernelTypeError(_LocatedError):
    """The kernel is syntactically fine but ill-typed, or uses a feature a backend lacks."""


class TargetError(PolykernError):
    """A target string is malformed or names an unknown backend/attribute/value."""


class CompileError(PolykernError):
    """A code generator or vendor tool failed. ``log`` holds the tool's output."""

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(message if not log else f"{message}\n--- tool log ---\n{log}")


class BackendUnavailableError(PolykernError, ImportError):
    """A backend (or its runtime) cannot be used in this environment."""


class RuntimeNotLinkedError(PolykernError):
    """A fallback module was asked for something only a real runtime can do."""


class ArtifactError(PolykernError):
    """A .kbin artifact is malformed, truncated, tampered with, or not loadable here."""

    def __init__(self, message: str, offset: Optional[int] = None):
        self.offset = offset
        super().__init__(message if offset is None else f"{message} (at byte offset {offset})")


class LaunchError(PolykernError):
    """Wrong arguments or launch configuration for a kernel call."""


class OperatorError(PolykernError):
    """A kernel made into a framework operator (``polykern.torch.custom_op``, ``polykern.jax.kernel_function``)
    with a binding that does not fit its signature (an unknown output, a written input, a wrong shape rule),
    or called with arguments the binding cannot place (docs/frameworks.md)."""


class DeviceStringError(LaunchError):
    """A device string (``pk.to_device(x, device=...)``) is malformed or names no known device kind."""


class DeviceUnavailableError(LaunchError):
    """A device string names a runtime that is absent here, a device index it does not have, or a runtime
    that has no device memory of its own (Hexagon)."""


class StreamError(LaunchError):
    """A stream or event used wrongly: closed, never recorded, on another device than the launch or the
    other event, or asked for a time it cannot give (polykern/streams.py)."""


class DeviceError(PolykernError):
    """A device runtime reported an error. ``code`` and ``name`` are the vendor's."""

    def __init__(self, message: str, code: Optional[int] = None, name: str = ""):
        self.code = code
        self.name = name
        suffix = f" [{name or 'error'} {code}]" if code is not None else (f" [{name}]" if name else "")
        super().__init__(message + suffix)


class InterpretError(_LocatedError):
    """The IR interpreter (``targets=["interpret"]`` or ``POLYKERN_INTERPRET=1``; also the test oracle)
    found that a launch has no single meaning: an access out of bounds, a barrier in divergent control
    flow, a runaway loop, ... ``loc`` is the kernel line when known; the message names the work-items."""


class DataRaceError(InterpretError):
    """Two work-items touched one buffer or shared element between two barriers, one of them writing
    (not both with the same commutative atomic): the result would depend on their order."""


class UninitializedReadError(InterpretError):
    """A work-item read a shared-memory element that no work-item has written (shared memory starts
    uninitialized)."""
