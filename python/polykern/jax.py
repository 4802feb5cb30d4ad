"""A polykern kernel as a JAX function that runs inside ``jax.jit`` (docs/frameworks.md)::

    import polykern.jax as pkj
    scale = pkj.kernel_function(scale_kernel, outputs="y", shape_rule=lambda x, a: x.shape,
                                scalars={"n": lambda x, a: x.size}, grid=lambda x, a: (x.size + 255) // 256,
                                block=256)
    y = jax.jit(lambda x: scale(x, 2.0) + 1)(x)

The binding is :class:`polykern.framework_op.OpBinding`'s (the same as ``polykern.torch.custom_op``'s).
Where the computation is lowered for the CPU or a CUDA GPU the call is an XLA FFI custom call
(:mod:`polykern.xla_ffi`): XLA hands the kernel its buffers, the inputs read in place (``Buffer[T, "readonly"]``)
and the outputs written in place; a launch error is an XLA error carrying the ``LaunchError``'s text. On the
CPU the kernel runs on the CPU runtime (``targets["cpu"]``, LLVM by default); on a GPU on the CUDA runtime
(``targets["cuda"]``), queued on XLA's own stream, with the scalar inputs known when the function is traced
(Python or NumPy numbers) passed as the call's attributes, traced ones (``jax.jit`` arguments) as 0-d operands the
handler reads (the host waits for XLA's stream once per call), and ``zeroed`` outputs filled by XLA. Elsewhere
(another platform), and everywhere with ``via="callback"``, it is a ``jax.pure_callback``: XLA copies the operands
to the host, the kernel runs on the CPU runtime and its outputs are copied back. ``shape_rule`` sees JAX's abstract arrays (static shapes); the derived
scalars, ``grid`` and ``block`` see the call's values (arrays — on a GPU XLA's device buffers, with ``shape``,
``size``, ``ndim`` and ``dtype`` — and scalars as Python numbers). Under ``jax.vmap`` the kernel runs once per
batch element.

This module is ``polykern.jax``; ``import jax`` here is the real JAX (absolute imports).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import registry, xla_ffi
from .errors import BackendUnavailableError, LaunchError, OperatorError
from .runtime.launch import scalar_value

try:
    import jax
except ImportError as e:
    raise BackendUnavailableError(f"polykern.jax needs JAX, which does not import here ({e}); "
                                  "pip install 'polykern[jax]' (docs/frameworks.md)") from None
from .framework_op import Dims, OpBinding

__all__ = ["kernel_function", "KernelFunction"]


def _host_value(v: Any, is_buffer: bool) -> Any:
    """A callback operand as the kernel takes it: a C-contiguous array for a buffer, a Python number for a scalar."""
    a = np.asarray(v)
    return np.ascontiguousarray(a) if is_buffer else a.item()


def _dtype(a) -> np.dtype:
    """The NumPy dtype JAX holds parameter ``a``'s elements in (bf16: ml_dtypes' bfloat16, JAX's own)."""
    return np.dtype(jax.numpy.bfloat16) if a.dtype.name == "bf16" else np.dtype(a.dtype.numpy)


#: A scalar input's attribute type where XLA has no attribute of its own type (XLA FFI float attributes are 32 or 64
#: bits: an f16 one fails to compile; f32 holds every f16 exactly, and the launch converts it back).
_ATTRIBUTE_DTYPES = {"f16": np.dtype(np.float32)}


def _cuda_runtime_ready() -> bool:
    """Whether polykern's CUDA runtime runs here (else a GPU call takes the callback to the CPU runtime)."""
    from . import backends  # the backend list: loaded when a function is first traced, not at import

    return "cuda" in backends.runnable_kinds()


class KernelFunction:
    """``f(*inputs)``: the kernel's outputs as JAX arrays (one array, or a tuple for several outputs)."""

    def __init__(self, binding: OpBinding, via: str = "ffi"):
        if via not in ("ffi", "callback"):
            raise OperatorError(f"via= is 'ffi' (an XLA custom call on the CPU) or 'callback' (jax.pure_callback), "
                                f"got {via!r}")
        self.binding = binding
        self.via = via
        self._out_dtypes = tuple(_dtype(a) for a in binding.output_args())
        self._index = {a.name: i for i, a in enumerate(binding.info.args)}  # parameter name -> kernel position
        self._buffers = sum(a.is_buffer for a in binding.inputs)  # buffer inputs (they come first to a custom call)
        self._order = f"(the inputs come in the kernel's order: {', '.join(a.name for a in binding.inputs)})"
        self._targets: dict = {}  # (platform, jax_enable_x64, traced scalars) -> registered FFI target name
        self._streams: dict = {}  # (device ordinal, CUstream) -> the pk.Stream over XLA's stream

    def __repr__(self) -> str:
        return f"<polykern.jax.KernelFunction of kernel '{self.binding.name}'>"

    @property
    def _operand_dtypes(self) -> tuple:
        """What XLA holds each input in now (a 64-bit scalar is 32-bit unless jax_enable_x64, which may change)."""
        return tuple(np.dtype(jax.dtypes.canonicalize_dtype(_dtype(a))) for a in self.binding.inputs)

    def _check_64_bit_outputs(self) -> None:
        """OperatorError for an output JAX cannot hold (a 64-bit one while jax_enable_x64 is off)."""
        for a, dt in zip(self.binding.output_args(), self._out_dtypes):
            if np.dtype(jax.dtypes.canonicalize_dtype(dt)) != dt:
                raise OperatorError(f"kernel '{self.binding.name}': output '{a.name}' is {a.type_str}; JAX has "
                                    f"{dt} arrays only with jax.config.update('jax_enable_x64', True)")

    def _run(self, operands, outs) -> None:
        """Launch on host arrays: ``operands`` as XLA passes them, ``outs`` to be written (zeroed first where asked)."""
        b = self.binding
        values = [_host_value(v, a.is_buffer) for v, a in zip(operands, b.inputs)]
        for n, out in zip(b.outputs, outs):
            if n in b.zeroed:
                out[...] = 0
        b.launch("cpu", values, outs)

    def _callback(self, *operands):
        b = self.binding
        values = [_host_value(v, a.is_buffer) for v, a in zip(operands, b.inputs)]
        outs = [np.empty(tuple(int(d) for d in s), dt) for s, dt in zip(b.output_shapes(values), self._out_dtypes)]
        self._run(operands, outs)
        return tuple(outs)

    def _run_device(self, traced: Tuple[str, ...], args, rets, attrs, stream: int, ordinal: int) -> None:
        """Queue the kernel on XLA's CUDA stream: ``args`` are the buffer inputs' device buffers, then the zeroed
        outputs' (``rets`` has them too, filled by XLA), then the ``traced`` scalar inputs as 0-d buffers (read
        here: the host waits for XLA's stream once); ``attrs`` are the known scalar inputs by parameter name."""
        b = self.binding
        read = dict(zip(traced, args[len(args) - len(traced):]))
        if read:
            fetch = registry.require("runtime.read_device.cuda")
            read = {n: np.frombuffer(fetch(ordinal, d.ptr, d.nbytes, stream), d.dtype)[0].item()
                    for n, d in read.items()}
        it = iter(args[:self._buffers])
        values = [next(it) if a.is_buffer else attrs[a.name] if a.name in attrs else read[a.name] for a in b.inputs]
        key = (ordinal, stream)
        s = self._streams.get(key)
        if s is None:
            from . import streams  # polykern.streams imports the runtimes' registry only: no cycle

            s = self._streams[key] = streams.Stream(device=f"cuda:{ordinal}", handle=stream)
        with s:
            b.launch("cuda", values, rets)

    def _ffi_target(self, platform: str = "cpu", traced: Tuple[str, ...] = ()) -> str:
        """The XLA FFI custom call running this kernel on ``platform`` ("cpu", "cuda"; registered on first use);
        ``traced``: on "cuda", the scalar inputs that come as 0-d operands (their values are not known when traced)."""
        key = (platform, bool(jax.config.jax_enable_x64), traced)  # x64 sets the operands' types the handler checks
        got = self._targets.get(key)
        if got is None:
            name = f"polykern_{self.binding.name}_{id(self):x}{int(key[1])}{len(self._targets)}_{platform}"
            if platform == "cpu":
                capsule = xla_ffi.handler_capsule(self._run, self._operand_dtypes, self._out_dtypes)
            else:
                b = self.binding
                held = dict(zip((a.name for a in b.inputs), self._operand_dtypes))
                zeroed = [dt for n, dt in zip(b.outputs, self._out_dtypes) if n in b.zeroed]  # aliased operands
                operands = [held[a.name] for a in b.inputs if a.is_buffer] + zeroed + [held[n] for n in traced]
                capsule = xla_ffi.device_handler_capsule(functools.partial(self._run_device, traced), operands,
                                                         self._out_dtypes)
            jax.ffi.register_ffi_target(name, capsule, platform="cpu" if platform == "cpu" else "CUDA")
            got = self._targets[key] = name
        return got

    def _scalar_input(self, a, x, operand_dtype):
        """Scalar input ``x`` of parameter ``a`` checked as a launch checks it: a known value converted to the
        parameter's type (OperatorError if it is not one of that type, or does not fit the type XLA holds it in), a
        traced one refused when its kind (bool, integer, float) is not one a launch takes for that type."""
        b, order = self.binding, self._order
        if isinstance(x, jax.core.Tracer):
            dt = jax.numpy.result_type(x)
            kind = ("bool" if jax.numpy.issubdtype(dt, jax.numpy.bool_) else
                    "integer" if jax.numpy.issubdtype(dt, jax.numpy.integer) else "float")
            t = a.dtype
            if not (t.is_bool if kind == "bool" else (t.is_int or t.is_float) if kind == "integer" else t.is_float):
                raise OperatorError(f"kernel '{b.name}': input '{a.name}' is a {t} scalar, got a traced {dt} value "
                                    f"(convert it first) {order}")
            return x
        try:
            v = scalar_value(b.info, self._index[a.name], np.asarray(x) if isinstance(x, jax.Array) else x)
        except LaunchError as e:
            raise OperatorError(f"{e} {order}") from None
        held = np.asarray(v).astype(operand_dtype)
        if held != v and not (np.isnan(v) and np.isnan(held)):
            raise OperatorError(f"kernel '{b.name}': input '{a.name}' ({a.dtype}) = {v!r} does not fit the "
                                f"{operand_dtype} JAX holds it in (64-bit values need "
                                "jax.config.update('jax_enable_x64', True))")
        return v

    def _no_derivative(self, primals, tangents):
        """The JVP rule: there is none (jax.grad / jax.jvp through the kernel is a named error)."""
        raise OperatorError(f"kernel '{self.binding.name}' has no derivative: polykern.jax runs it as given; "
                            "wrap the function in jax.custom_vjp with a backward kernel function (docs/frameworks.md)")

    def _cuda_call(self, args, result):
        """The GPU custom call, or None where polykern's CUDA runtime is not ready: known scalar inputs are attributes,
        traced ones 0-d operands after the buffers (read on the host when the call runs); ``zeroed`` outputs are
        aliased to zero-filled operands between the two."""
        b = self.binding
        if not _cuda_runtime_ready():
            return None
        attrs, traced = {}, []
        for a, x in zip(b.inputs, args):
            if a.is_buffer:
                continue
            if isinstance(x, jax.core.Tracer):
                traced.append(a.name)
            else:
                attrs[a.name] = np.asarray(x, _ATTRIBUTE_DTYPES.get(a.dtype.name, _dtype(a)))[()]
        zeros = [jax.numpy.zeros(r.shape, r.dtype) for n, r in zip(b.outputs, result) if n in b.zeroed]
        aliases = {self._buffers + k: j for k, j in enumerate(j for j, n in enumerate(b.outputs) if n in b.zeroed)}
        call = jax.ffi.ffi_call(self._ffi_target("cuda", tuple(traced)), result, vmap_method="sequential",
                                input_output_aliases=aliases or None)
        by_name = [a.name for a in b.inputs]

        def launch(*ops):
            named = dict(zip(by_name, ops))
            return tuple(call(*[o for a, o in zip(b.inputs, ops) if a.is_buffer], *zeros,
                              *[named[n] for n in traced], **attrs))
        return launch

    def __call__(self, *args):
        b = self.binding
        b.check_arity(args)
        self._check_64_bit_outputs()
        operand_dtypes = self._operand_dtypes
        for a, x in zip(b.inputs, args):
            if not a.is_buffer and np.shape(x) != ():
                raise OperatorError(f"kernel '{b.name}': input '{a.name}' is a scalar parameter ({a.dtype.name}), got "
                                    f"an array of shape {tuple(np.shape(x))} {self._order}")
        args = [x if a.is_buffer else self._scalar_input(a, x, dt) for x, a, dt in zip(args, b.inputs, operand_dtypes)]
        abstract = [jax.ShapeDtypeStruct(np.shape(x), jax.numpy.result_type(x)) for x in args]
        for a, x in zip(b.inputs, abstract):
            if a.is_buffer:
                b.check_dtype(f"for kernel '{b.name}'", a, x.dtype, _dtype(a))
        shapes = b.output_shapes(abstract)
        result = tuple(jax.ShapeDtypeStruct(tuple(int(d) for d in s), dt) for s, dt in zip(shapes, self._out_dtypes))
        operands = [x if a.is_buffer else jax.numpy.asarray(x, dt) for x, a, dt in zip(args, b.inputs, operand_dtypes)]

        def run(*ops):
            if self.via == "callback":
                return tuple(jax.pure_callback(self._callback, result, *ops, vmap_method="sequential"))
            # the custom call where the computation is lowered for the CPU or CUDA, the callback elsewhere
            callback = lambda *o: tuple(jax.pure_callback(self._callback, result, *o, vmap_method="sequential"))  # noqa: E731
            return jax.lax.platform_dependent(
                *ops, cpu=lambda *o: tuple(jax.ffi.ffi_call(self._ffi_target(), result, vmap_method="sequential")(*o)),
                cuda=self._cuda_call(args, result) or callback, default=callback)

        run = jax.custom_jvp(run)
        run.defjvp(self._no_derivative)
        outs = run(*operands)
        return outs[0] if len(outs) == 1 else tuple(outs)


def kernel_function(kernel: Any, *, outputs: Union[str, Sequence[str]], shape_rule: Callable[..., Any],
                    grid: Dims, block: Dims, scalars: Optional[Mapping[str, Any]] = None,
                    zeroed: Union[str, Sequence[str], None] = (), name: Optional[str] = None,
                    targets: Optional[Mapping[str, str]] = None, via: str = "ffi") -> KernelFunction:
    """``kernel`` as a JAX function usable in ``jax.jit``; the arguments are those of
    :class:`polykern.framework_op.OpBinding` (``zeroed``: outputs filled with zeros before the launch);
    ``via="callback"`` uses ``jax.pure_callback`` on the CPU too."""
    return KernelFunction(OpBinding(kernel, outputs=outputs, shape_rule=shape_rule, grid=grid, block=block,
                                    scalars=scalars, zeroed=zeroed, name=name, targets=targets), via)
