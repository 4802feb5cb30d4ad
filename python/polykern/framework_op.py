"""How a kernel becomes a framework operator (docs/frameworks.md): :class:`OpBinding`, shared by
``polykern.torch`` and ``polykern.jax``, which add only their tensors.

A kernel's parameters split three ways: **outputs** (buffer parameters the operator allocates and
returns, in the order given), **derived scalars** (scalar parameters computed from the operator's
arguments, e.g. ``n`` from ``x.numel()``), and the rest, which are the operator's **inputs**, in the
kernel's order. An input buffer must be ``Buffer[T, "readonly"]``: an operator does not change its
arguments. ``shape_rule(*inputs)`` gives the output shapes from the inputs (called with the framework's
abstract tensors while tracing, so it may only use shapes); ``grid`` / ``block`` and the derived
scalars are ints (tuples) or functions of the inputs, called with real values at each launch.

The kernel is a ``@pk.kernel`` (built on first use for each device, ``targets``), a built or loaded
module (``pk.build`` / ``pk.load``; ``name=`` picks the kernel when it has several) or one of its
launchers (``mod["k"]``).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from .errors import OperatorError
from .kbin.function_info import ArgInfo, FunctionInfo

__all__ = ["OpBinding", "DEFAULT_TARGETS"]

#: The target each framework device type builds a ``@pk.kernel`` for, and the module kind it runs on.
DEFAULT_TARGETS = {"cpu": "llvm", "cuda": "cuda"}

Dims = Union[int, Tuple[int, ...], Callable[..., Any]]


def _names(what: str, value: Union[str, Sequence[str], None]) -> Tuple[str, ...]:
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(n, str) for n in names):
        raise OperatorError(f"{what} names kernel parameters (strings), got {value!r}")
    return names


class OpBinding:
    """A kernel's parameters bound to an operator's inputs and outputs (module docstring)."""

    def __init__(self, kernel: Any, *, outputs: Union[str, Sequence[str]], shape_rule: Callable[..., Any],
                 grid: Dims, block: Dims, scalars: Optional[Mapping[str, Any]] = None,
                 zeroed: Union[str, Sequence[str], None] = (), name: Optional[str] = None,
                 targets: Optional[Mapping[str, str]] = None):
        self._source, self._root, self.info = _resolve(kernel, name)
        self.targets = {**DEFAULT_TARGETS, **dict(targets or {})}
        where = f"kernel '{self.info.name}'"
        params = {a.name: a for a in self.info.args}
        self.outputs = _names("outputs", outputs)
        if not self.outputs:
            raise OperatorError(f"{where}: outputs= names at least one buffer parameter the operator returns "
                                f"(its buffers: {', '.join(a.name for a in self.info.args if a.is_buffer) or 'none'})")
        for n in self.outputs:
            a = params.get(n)
            if a is None or not a.is_buffer:
                raise OperatorError(f"{where}: output '{n}' is not one of its buffer parameters "
                                    f"({self.info.signature()})")
            if a.readonly:
                raise OperatorError(f"{where}: output '{n}' is declared {a.type_str}: the kernel cannot write it")
        if len(set(self.outputs)) != len(self.outputs):
            raise OperatorError(f"{where}: outputs= names a parameter twice: {list(self.outputs)}")
        self.zeroed = frozenset(_names("zeroed", zeroed))
        stray = sorted(self.zeroed - set(self.outputs))
        if stray:
            raise OperatorError(f"{where}: zeroed= names '{stray[0]}', which is not an output "
                                f"({', '.join(self.outputs)})")
        self.scalars = dict(scalars or {})
        for n in self.scalars:
            a = params.get(n)
            if a is None or a.is_buffer:
                raise OperatorError(f"{where}: scalars= names '{n}', which is not one of its scalar parameters "
                                    f"({self.info.signature()})")
        #: the operator's inputs: every parameter neither an output nor a derived scalar, in kernel order
        self.inputs: Tuple[ArgInfo, ...] = tuple(a for a in self.info.args
                                                 if a.name not in self.outputs and a.name not in self.scalars)
        for a in self.inputs:
            if a.is_buffer and not a.readonly:
                raise OperatorError(f"{where}: parameter '{a.name}' ({a.type_str}) is written by the kernel but is an "
                                    f"input of the operator, whose inputs never change: declare it "
                                    f"Buffer[{a.dtype}, \"readonly\"], or list it in outputs=")
        if not callable(shape_rule):
            raise OperatorError(f"{where}: shape_rule= is a function of the operator's inputs "
                                f"({', '.join(a.name for a in self.inputs)}) giving the output shapes")
        self.shape_rule = shape_rule
        if grid is None or block is None:
            raise OperatorError(f"{where}: grid= and block= are required (ints, tuples, or functions of the inputs)")
        self.grid, self.block = grid, block
        self._launchers: Dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.info.name

    def output_args(self) -> Tuple[ArgInfo, ...]:
        by_name = {a.name: a for a in self.info.args}
        return tuple(by_name[n] for n in self.outputs)

    # ------------------------------------------------------------ per call
    def check_arity(self, args: Sequence[Any]) -> None:
        if len(args) != len(self.inputs):
            raise OperatorError(f"operator for kernel '{self.name}' takes {len(self.inputs)} argument"
                                f"{'s' * (len(self.inputs) != 1)} ({', '.join(a.name for a in self.inputs)}), "
                                f"got {len(args)}")

    def check_dtype(self, op: str, a: ArgInfo, got: Any, want: Any) -> None:
        """OperatorError unless input buffer ``a``'s array has the declared element type (``got`` / ``want`` are
        the framework's dtypes; checked while tracing too, so the mistake is named where the operator is called)."""
        if got != want:
            raise OperatorError(f"operator {op}: input '{a.name}' is a {got} tensor; kernel '{self.name}' declares "
                                f"{a.type_str} ({want}); polykern never converts buffers silently (convert it first)")

    def output_shapes(self, args: Sequence[Any]) -> Tuple[Tuple[Any, ...], ...]:
        """One shape per output, from ``shape_rule(*args)`` (a shape for a single output, else a tuple of
        shapes); entries stay what the rule gave (a tracer's symbolic sizes while tracing)."""
        got = self.shape_rule(*args)
        try:
            shapes = tuple(_as_shape(s) for s in ((got,) if len(self.outputs) == 1 else got))
        except TypeError:
            shapes = ()
        if len(shapes) != len(self.outputs):
            raise OperatorError(f"kernel '{self.name}': shape_rule returned {got!r}; it gives "
                                + (f"the shape of output '{self.outputs[0]}' (a tuple of ints)"
                                   if len(self.outputs) == 1 else
                                   f"one shape (a tuple of ints) per output ({', '.join(self.outputs)})"))
        return shapes

    def kernel_args(self, args: Sequence[Any], outputs: Sequence[Any], values: Sequence[Any] = None) -> list:
        """The kernel's arguments in its order: ``args`` for the inputs, ``outputs`` for the outputs, the
        derived scalars from ``values`` (what their functions see: the inputs as plain values; ``args`` by
        default)."""
        values = args if values is None else values
        by_input = {a.name: v for a, v in zip(self.inputs, args)}
        by_output = dict(zip(self.outputs, outputs))
        out = []
        for a in self.info.args:
            if a.name in by_output:
                out.append(by_output[a.name])
            elif a.name in self.scalars:
                rule = self.scalars[a.name]
                out.append(rule(*values) if callable(rule) else rule)
            else:
                out.append(by_input[a.name])
        return out

    def dims(self, values: Sequence[Any]) -> Tuple[Any, Any]:
        """(grid, block) for this call."""
        return tuple(d(*values) if callable(d) else d for d in (self.grid, self.block))  # type: ignore[return-value]

    def launch(self, device_type: str, args: Sequence[Any], outputs: Sequence[Any], values: Sequence[Any] = None):
        kernel = self.launcher(device_type)
        values = args if values is None else values
        grid, block = self.dims(values)
        kernel(*self.kernel_args(args, outputs, values), grid=grid, block=block)

    # ------------------------------------------------------------ modules
    def launcher(self, device_type: str):
        """The kernel on ``device_type``'s runtime ("cpu", "cuda"): from the module given, or built from the
        ``@pk.kernel`` for ``targets[device_type]`` on first use."""
        got = self._launchers.get(device_type)
        if got is not None:
            return got
        target = self.targets.get(device_type)
        if target is None:
            raise OperatorError(f"kernel '{self.name}': no polykern target for {device_type!r} tensors (known: "
                                f"{', '.join(sorted(self.targets))}; add one with targets={{{device_type!r}: ...}})")
        with self._lock:
            got = self._launchers.get(device_type)  # another thread built it meanwhile
            if got is not None:
                return got
            root = self._root
            if self._source is not None:
                from .pipeline import build

                root = build([self._source], targets=[target])
            kind = target.split()[0]
            got = self._launchers[device_type] = root.on(kind)[self.name]
        return got


def _as_shape(s: Any) -> Tuple[Any, ...]:
    """A shape as a tuple: a sequence of sizes, or one size (a 1-D shape); TypeError for anything else."""
    dims = tuple(s) if isinstance(s, (tuple, list)) else (s,)
    if not all(hasattr(d, "__index__") and not isinstance(d, bool) for d in dims):
        raise TypeError("not a shape")
    return dims


def _resolve(kernel: Any, name: Optional[str]) -> Tuple[Any, Any, FunctionInfo]:
    """(``@pk.kernel`` source or None, root module or None, FunctionInfo) of what ``custom_op`` was given."""
    from .lang.kernel import Kernel
    from .module import Launcher, RootModule

    if isinstance(kernel, Kernel):
        if name is not None and name != kernel.name:
            raise OperatorError(f"name={name!r} does not name kernel '{kernel.name}'")
        return kernel, None, FunctionInfo.from_ir(kernel.ir)
    if isinstance(kernel, Launcher):
        return None, kernel.root, kernel.info
    if isinstance(kernel, RootModule):
        if name is None:
            if len(kernel.functions) != 1:
                raise OperatorError(f"the module has kernels {', '.join(kernel.functions) or 'none'}: pick one "
                                    "with name=")
            name = next(iter(kernel.functions))
        if name not in kernel.functions:
            raise OperatorError(f"the module has no kernel {name!r}; it has {', '.join(kernel.functions) or 'none'}")
        return None, kernel, kernel.functions[name]
    raise OperatorError(f"expected a @pk.kernel, a module from pk.build / pk.load, or a kernel of one "
                        f"(mod['name']), got {type(kernel).__name__}")
