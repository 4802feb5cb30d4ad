"""A polykern kernel as a PyTorch operator, in one call (docs/frameworks.md)::

    import polykern.torch as pkt
    op = pkt.custom_op("mylib::scale", scale_kernel, outputs="y", shape_rule=lambda x, a: x.shape,
                       scalars={"n": lambda x, a: x.numel()}, grid=lambda x, a: (x.numel() + 255) // 256,
                       block=256)
    y = op(x, 2.0)                      # eager, torch.compile(fullgraph=True), CPU and CUDA tensors

The operator is a ``torch.library.custom_op`` whose schema comes from the kernel's signature (an input
buffer is a ``Tensor``, an input scalar an ``int`` / ``float`` / ``bool``; the outputs are new tensors of
the declared dtypes), whose fake (meta) implementation allocates the outputs from ``shape_rule`` on the
inputs' device, so ``torch.compile`` traces it without a graph break, and whose implementation
launches the kernel on the tensors' memory without a copy (CPU tensors through DLPack, CUDA tensors
through ``__cuda_array_interface__``; a non-contiguous input is made contiguous first, which an
operator that only reads it may do). :meth:`KernelOp.register_autograd` gives it a backward (usually
another kernel operator). ``torch.library.opcheck`` passes on it.

This module is ``polykern.torch``; ``import torch`` here is the real torch (absolute imports).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from .errors import BackendUnavailableError, OperatorError

try:
    import torch
except ImportError as e:
    raise BackendUnavailableError(f"polykern.torch needs PyTorch, which does not import here ({e}); "
                                  "pip install 'polykern[torch]' (docs/frameworks.md)") from None
from .framework_op import Dims, OpBinding
from .ir.types import ScalarType

__all__ = ["custom_op", "KernelOp", "torch_dtype"]

#: polykern's scalar types as torch dtypes (torch has no u16/u32/u64 arithmetic before 2.3, but holds them).
_DTYPES = {"bool": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
           "u8": torch.uint8, "u16": getattr(torch, "uint16", None), "u32": getattr(torch, "uint32", None),
           "u64": getattr(torch, "uint64", None), "f16": torch.float16, "bf16": torch.bfloat16,
           "f32": torch.float32, "f64": torch.float64}


def torch_dtype(t: ScalarType) -> torch.dtype:
    """The torch dtype holding polykern scalar type ``t``."""
    got = _DTYPES.get(t.name)
    if got is None:
        raise OperatorError(f"this torch ({torch.__version__}) has no dtype for {t}")
    return got


def _schema_type(a) -> str:
    if a.is_buffer:
        return "Tensor"
    t = a.dtype
    return "bool" if t.is_bool else "float" if t.is_float else "int"


def _launch_view(t: torch.Tensor) -> Any:
    """A CPU tensor as the NumPy view of its memory (``np.from_dlpack``, no copy), which the CPU runtime
    launches on its fast path; a CUDA tensor, or one NumPy has no type for (bfloat16), as it is (the launch
    reads it through ``__cuda_array_interface__`` / its DLPack capsule)."""
    if t.device.type == "cpu":
        try:
            return np.from_dlpack(t)
        except (BufferError, RuntimeError, TypeError):
            pass
    return t


class KernelOp:
    """``op(*inputs)``: the operator (``op.op`` is its ``torch.ops`` overload, ``op.custom_op`` the
    ``torch.library`` definition)."""

    def __init__(self, qualname: str, binding: OpBinding):
        self.binding = binding
        self.qualname = qualname
        b = binding
        self._out_dtypes = tuple(torch_dtype(a.dtype) for a in b.output_args())
        params = ", ".join(f"{_schema_type(a)} {a.name}" for a in b.inputs)
        rets = "Tensor" if len(b.outputs) == 1 else f"({', '.join('Tensor' for _ in b.outputs)})"
        self.schema = f"({params}) -> {rets}"
        try:
            self.custom_op = torch.library.custom_op(qualname, self._impl, mutates_args=(), schema=self.schema)
        except (RuntimeError, ValueError) as e:
            raise OperatorError(f"kernel '{b.name}': torch refused operator {qualname!r} with schema "
                                f"{self.schema}: {e}") from None
        self.custom_op.register_fake(self._fake)
        ns, name = qualname.split("::", 1)
        self.op = getattr(getattr(torch.ops, ns), name).default

    def __call__(self, *args):
        return self.op(*args)

    def __repr__(self) -> str:
        return f"<polykern.torch.KernelOp {self.qualname}{self.schema} (kernel '{self.binding.name}')>"

    # ------------------------------------------------------------ implementations
    def _device(self, args: Sequence[Any]) -> torch.device:
        """The one device of the input tensors, after checking each has its parameter's dtype (while tracing
        too: a mistake is named where the operator is called, not at the compiled graph's first run)."""
        for a, v in zip(self.binding.inputs, args):
            if a.is_buffer and isinstance(v, torch.Tensor):
                self.binding.check_dtype(self.qualname, a, v.dtype, torch_dtype(a.dtype))
        devices = {t.device for t in args if isinstance(t, torch.Tensor)}
        if len(devices) != 1:
            raise OperatorError(f"operator {self.qualname}: its tensors must be on one device, got "
                                f"{', '.join(sorted(map(str, devices))) or 'no tensor'}")
        return devices.pop()

    def _new_outputs(self, args, device, real: bool):
        """The outputs' tensors (``real``: the ``zeroed`` ones filled with zeros, for the launch)."""
        b = self.binding
        return [(torch.zeros if real and n in b.zeroed else torch.empty)(s, dtype=dt, device=device)
                for n, s, dt in zip(b.outputs, b.output_shapes(args), self._out_dtypes)]

    def _fake(self, *args):
        outs = self._new_outputs(args, self._device(args), real=False)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _impl(self, *args):
        self.binding.check_arity(args)
        device = self._device(args)
        outs = self._new_outputs(args, device, real=True)
        inputs = [_launch_view(a.detach().contiguous()) if isinstance(a, torch.Tensor) else a for a in args]
        self.binding.launch(device.type, inputs, [_launch_view(t) for t in outs], values=args)
        return outs[0] if len(outs) == 1 else tuple(outs)

    # ------------------------------------------------------------ autograd
    def register_autograd(self, backward: Callable[..., Any]) -> "KernelOp":
        """Differentiate the operator with ``backward(inputs, outputs, *grad_outputs)``, which returns one
        gradient per input (``None`` where there is none, e.g. for a scalar), typically by calling another
        kernel operator. ``inputs`` and ``outputs`` are tuples of what the forward call took and gave."""
        n_in = len(self.binding.inputs)
        kinds = tuple(a.is_buffer for a in self.binding.inputs)

        def setup_context(ctx, inputs, output):
            outputs = output if isinstance(output, tuple) else (output,)
            ctx.save_for_backward(*[x for x, t in zip(inputs, kinds) if t], *outputs)
            ctx.plain = [None if t else x for x, t in zip(inputs, kinds)]

        def _backward(ctx, *grads):
            saved = list(ctx.saved_tensors)
            inputs = tuple(saved.pop(0) if t else x for x, t in zip(ctx.plain, kinds))
            got = backward(inputs, tuple(saved), *grads)
            got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
            if len(got) != n_in:
                raise OperatorError(f"operator {self.qualname}: backward returned {len(got)} gradient"
                                    f"{'s' * (len(got) != 1)}; it returns one per input "
                                    f"({', '.join(a.name for a in self.binding.inputs)}), None where there is none")
            return got

        self.custom_op.register_autograd(_backward, setup_context=setup_context)
        return self


def custom_op(qualname: str, kernel: Any, *, outputs: Union[str, Sequence[str]], shape_rule: Callable[..., Any],
              grid: Dims, block: Dims, scalars: Optional[Mapping[str, Any]] = None,
              zeroed: Union[str, Sequence[str], None] = (), name: Optional[str] = None,
              targets: Optional[Mapping[str, str]] = None) -> KernelOp:
    """``kernel`` as the torch operator ``qualname`` ("namespace::name"); the binding's arguments are
    :class:`polykern.framework_op.OpBinding`'s (``zeroed``: outputs filled with zeros before the launch,
    for kernels that accumulate into them)."""
    if not isinstance(qualname, str) or qualname.count("::") != 1 or not all(qualname.split("::")):
        raise OperatorError(f"an operator's name is 'namespace::name', e.g. 'mylib::layernorm', got {qualname!r}")
    binding = OpBinding(kernel, outputs=outputs, shape_rule=shape_rule, grid=grid, block=block, scalars=scalars,
                        zeroed=zeroed, name=name, targets=targets)
    return KernelOp(qualname, binding)
