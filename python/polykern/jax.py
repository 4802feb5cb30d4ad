"""A polykern kernel as a JAX function that runs inside ``jax.jit`` (docs/frameworks.md)::

    import polykern.jax as pkj
    scale = pkj.kernel_function(scale_kernel, outputs="y", shape_rule=lambda x, a: x.shape,
                                scalars={"n": lambda x, a: x.size}, grid=lambda x, a: (x.size + 255) // 256,
                                block=256)
    y = jax.jit(lambda x: scale(x, 2.0) + 1)(x)

The binding is :class:`polykern.framework_op.OpBinding`'s (the same as ``polykern.torch.custom_op``'s).
The call is a ``jax.pure_callback``: XLA hands the kernel the inputs as host NumPy arrays, which
it reads in place (they are read-only; input buffers are ``Buffer[T, "readonly"]``), and takes the
outputs it allocated. The kernel runs on the CPU runtime (``targets["cpu"]``, LLVM by default), also when
the JAX computation runs on a GPU (XLA copies the operands to the host and the results back).
``shape_rule`` sees JAX's abstract arrays (static shapes); the derived scalars, ``grid`` and ``block``
see the call's values (arrays, and scalars as Python numbers). Under ``jax.vmap`` the kernel runs
once per batch element.

This module is ``polykern.jax``; ``import jax`` here is the real JAX (absolute imports).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence, Union

import jax
import numpy as np

from .framework_op import Dims, OpBinding

__all__ = ["kernel_function", "KernelFunction"]


def _host_value(v: Any, is_buffer: bool) -> Any:
    """A callback operand as the kernel takes it: a C-contiguous array for a buffer, a Python number for a scalar."""
    a = np.asarray(v)
    return np.ascontiguousarray(a) if is_buffer else a.item()


def _dtype(a) -> np.dtype:
    """The NumPy dtype JAX holds parameter ``a``'s elements in (bf16: ml_dtypes' bfloat16, JAX's own)."""
    return np.dtype(jax.numpy.bfloat16) if a.dtype.name == "bf16" else np.dtype(a.dtype.numpy)


class KernelFunction:
    """``f(*inputs)``: the kernel's outputs as JAX arrays (one array, or a tuple for several outputs)."""

    def __init__(self, binding: OpBinding):
        self.binding = binding
        self._out_dtypes = tuple(_dtype(a) for a in binding.output_args())

    def __repr__(self) -> str:
        return f"<polykern.jax.KernelFunction of kernel '{self.binding.name}'>"

    def _callback(self, *operands):
        b = self.binding
        values = [_host_value(v, a.is_buffer) for v, a in zip(operands, b.inputs)]
        outs = [(np.zeros if n in b.zeroed else np.empty)(tuple(int(d) for d in s), dt)
                for n, s, dt in zip(b.outputs, b.output_shapes(values), self._out_dtypes)]
        b.launch("cpu", values, outs)
        return tuple(outs)

    def __call__(self, *args):
        b = self.binding
        b.check_arity(args)
        abstract = [jax.ShapeDtypeStruct(np.shape(x), jax.numpy.result_type(x)) for x in args]
        for a, x in zip(b.inputs, abstract):
            if a.is_buffer:
                b.check_dtype(f"for kernel '{b.name}'", a, x.dtype, _dtype(a))
        shapes = b.output_shapes(abstract)
        result = tuple(jax.ShapeDtypeStruct(tuple(int(d) for d in s), dt) for s, dt in zip(shapes, self._out_dtypes))
        operands = [x if a.is_buffer else jax.numpy.asarray(x, a.dtype.numpy) for x, a in zip(args, b.inputs)]
        outs = jax.pure_callback(self._callback, result, *operands, vmap_method="sequential")
        return outs[0] if len(outs) == 1 else tuple(outs)


def kernel_function(kernel: Any, *, outputs: Union[str, Sequence[str]], shape_rule: Callable[..., Any],
                    grid: Dims, block: Dims, scalars: Optional[Mapping[str, Any]] = None,
                    zeroed: Union[str, Sequence[str], None] = (), name: Optional[str] = None,
                    targets: Optional[Mapping[str, str]] = None) -> KernelFunction:
    """``kernel`` as a JAX function usable in ``jax.jit``; the arguments are those of
    :class:`polykern.framework_op.OpBinding` (``zeroed``: outputs filled with zeros before the launch)."""
    return KernelFunction(OpBinding(kernel, outputs=outputs, shape_rule=shape_rule, grid=grid, block=block,
                                    scalars=scalars, zeroed=zeroed, name=name, targets=targets))
