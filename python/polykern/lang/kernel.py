"""``@pk.kernel``: the decorator that turns a typed Python function into a compilable kernel."""
from __future__ import annotations

import threading

from ..errors import KernelTypeError, PolykernError
from .decorate import decorate
from .specialize import check_value, specialized_name, type_params


class Kernel:
    """A kernel: its Python function and, parsed on first use, its verified IR.

    The IR is built once, under a lock, and a failure is not cached: fixing nothing and asking again
    re-raises the same error with the same location.
    """

    def __init__(self, pyfunc, bindings=None):
        self.pyfunc = pyfunc
        #: values of the kernel's pk.constexpr / pk.dtype parameters bound by :meth:`specialize`
        self.bindings = dict(bindings or {})
        self.name = specialized_name(pyfunc.__name__, type_params(pyfunc, None), self.bindings)
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

                    self._ir = translate(self.pyfunc, bindings=self.bindings, name=self.name)
        return self._ir

    @property
    def missing(self):
        """The pk.constexpr / pk.dtype parameters without a value yet (build refuses the kernel)."""
        return [p for p, _ in type_params(self.pyfunc, None) if p not in self.bindings]

    def specialize(self, **values) -> "Kernel":
        """A kernel with some or all of its ``pk.constexpr`` / ``pk.dtype`` parameters fixed, named
        deterministically after the values (``saxpy.specialize(T=f16, BLOCK=128).name`` is
        ``saxpy__T_f16__BLOCK_128``). Unknown or already fixed names are a KernelTypeError."""
        params = dict(type_params(self.pyfunc, None))
        bound = dict(self.bindings)
        for name, value in values.items():
            if name not in params:
                have = ", ".join(params) or "none"
                raise KernelTypeError(f"kernel '{self.name}' has no pk.constexpr or pk.dtype parameter '{name}' "
                                      f"(its parameters fixed at build time: {have})")
            if name in bound:
                raise KernelTypeError(f"kernel '{self.name}' already fixes '{name}' = {bound[name]}")
            bound[name] = check_value(f"kernel '{self.pyfunc.__name__}'", name, params[name], value)
        return Kernel(self.pyfunc, bound)

    def __call__(self, *args, **kwargs):
        raise PolykernError(
            f"kernel '{self.name}' runs on a device: build it first, e.g. "
            f"mod = pk.build([{self.name}], targets=['llvm']); mod['{self.name}'](..., grid=..., block=...)")

    def __getitem__(self, launch):
        """``saxpy[grid, block](...)`` is Numba's and Triton's launch form, not polykern's: a kernel is
        compiled for its targets first (one module holds every target), then launched by name with
        ``grid=`` and ``block=``. The error shows that form with the values given."""
        dims = launch if isinstance(launch, tuple) else (launch,)
        grid, block = (repr(dims[0]), repr(dims[1])) if len(dims) >= 2 else (repr(dims[0]), "...")
        raise PolykernError(
            f"kernel '{self.name}' is not launched as {self.name}[grid, block](...) (Numba's form): build a module, "
            f"then launch by name with grid= and block=, e.g. mod = pk.build([{self.name}], targets=['llvm']); "
            f"mod['{self.name}'](..., grid={grid}, block={block})")

    __iter__ = None  # __getitem__ does not make a kernel a sequence

    def __repr__(self) -> str:
        return f"<polykern kernel {self.name}>"


def kernel(fn=None):
    """Decorate a typed Python function as a kernel (usable as ``@pk.kernel`` or ``@pk.kernel()``)."""
    return decorate(fn, Kernel, kernel)
