"""Errors in the user's kernel or launch are raised from the user's call, without polykern's frames.

A :class:`~polykern.errors.PolykernError` (a type error in a kernel, a wrong launch argument ...) says
what is wrong and where in the user's code; the frames of the compiler that found it are noise above that
message. The public entry points (``pk.build``, ``pk.load``, ``pk.autotune``'s kernels, a module's
launchers) are wrapped in :func:`entry_point`, which re-raises such an error with polykern's frames
removed from its traceback and from the tracebacks of the errors it was raised from. Frames of the user's
own code called by polykern (an array's ``__dlpack__``, a grid function) stay. ``POLYKERN_TRACEBACK=full``
(read at each error) keeps every frame. Other exceptions (a bug in polykern) always keep every frame.
"""
from __future__ import annotations

import functools
import os
import sys
from types import FrameType, TracebackType
from typing import Callable, Optional, TypeVar

from .errors import PolykernError

__all__ = ["TRACEBACK_ENV", "full_tracebacks", "entry_point", "user_stacklevel"]

TRACEBACK_ENV = "POLYKERN_TRACEBACK"
F = TypeVar("F", bound=Callable)


def full_tracebacks() -> bool:
    """Whether ``POLYKERN_TRACEBACK=full`` asks for polykern's own frames in tracebacks."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() == "full"


def _is_polykern(frame: FrameType) -> bool:
    name = frame.f_globals.get("__name__", "")
    return name == "polykern" or name.startswith(("polykern.", "polykern_"))


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in the function calling this name the user's
    line: the first frame outside polykern, however many entry points and helpers lie between."""
    frame, level = sys._getframe(1), 1
    while frame is not None and _is_polykern(frame):
        frame, level = frame.f_back, level + 1
    return level


def _user_frames(tb: Optional[TracebackType]) -> Optional[TracebackType]:
    """``tb`` without polykern's frames (a new chain; the original is left alone)."""
    kept = []
    while tb is not None:
        if not _is_polykern(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _trim_chain(err: BaseException) -> None:
    """Remove polykern's frames from the errors ``err`` was raised from (``raise ... from e``); an error
    merely raised while another was handled inside polykern does not show that other one."""
    seen = {id(err)}
    if err.__cause__ is None:
        err.__suppress_context__ = True
    e = err.__cause__
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        e.__traceback__ = _user_frames(e.__traceback__)
        e = e.__cause__ if e.__cause__ is not None or e.__suppress_context__ else e.__context__


def entry_point(fn: F) -> F:
    """Decorate a public entry point: a PolykernError leaves it with the user's frames only."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except PolykernError as err:
            if full_tracebacks():
                raise
            _trim_chain(err)
            tb = _user_frames(err.__traceback__)
            raise err.with_traceback(tb)  # polykern's own frames are hidden; POLYKERN_TRACEBACK=full shows them
    return call  # type: ignore[return-value]
