"""``@pk.kernel``: the decorator that turns a typed Python function into a compilable kernel."""
from __future__ import annotations

import threading

from ..errors import PolykernError


class Kernel:
    """A kernel: its Python function and, parsed on first use, its verified IR.

    The IR is built once, under a lock, and a failure is not cached: fixing nothing and asking again
    re-raises the same error with the same location.
    """

    def __init__(self, pyfunc):
        self.pyfunc = pyfunc
        self.name = pyfunc.__name__
        self.__doc__ = pyfunc.__doc__
        self.__wrapped__ = pyfunc
        self._ir = None
        self._lock = threading.Lock()

    @property
    def ir(self):
        if self._ir is None:
            with self._lock:
                if self._ir is None:
                    from .frontend import translate

                    self._ir = translate(self.pyfunc)
        return self._ir

    def __call__(self, *args, **kwargs):
        raise PolykernError(
            f"kernel '{self.name}' runs on a device: build it first, e.g. "
            f"mod = pk.build([{self.name}], targets=['llvm']); mod['{self.name}'](..., grid=..., block=...)")

    def __repr__(self) -> str:
        return f"<polykern kernel {self.name}>"


def kernel(fn=None):
    """Decorate a typed Python function as a kernel (usable as ``@pk.kernel`` or ``@pk.kernel()``)."""
    if fn is None:
        return kernel
    if isinstance(fn, Kernel):
        return fn
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise PolykernError(f"@pk.kernel decorates a Python function, got {fn!r}")
    return Kernel(fn)
