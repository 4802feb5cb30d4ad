"""The shared body of the decorators ``@pk.kernel`` and ``@pk.func``."""
from __future__ import annotations

from ..errors import PolykernError


def decorate(fn, cls, decorator):
    """``@pk.<decorator>`` and ``@pk.<decorator>()``: ``cls(fn)`` for a Python function ``fn``."""
    if fn is None:
        return decorator
    if isinstance(fn, cls):
        return fn
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise PolykernError(f"@pk.{decorator.__name__} decorates a Python function, got {fn!r}")
    return cls(fn)
