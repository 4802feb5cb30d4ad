"""Kernels as PyTorch operators (docs/frameworks.md): a layer norm and a SiLU with a backward kernel, each
one ``polykern.torch.custom_op`` call, run eager and under ``torch.compile(fullgraph=True)`` and checked
against torch's own. ``python torch_op.py [--device cpu|cuda]`` (default: cuda where torch and polykern
both have it, else cpu). benchmarks/torch_compile_step.py times SILU in a compiled training step."""
import argparse

import polykern as pk
import polykern.torch as pkt
from polykern import Buffer, f32, i32

import torch


NOT_NATIVE = "PyTorch operators (polykern.torch): tests/test_framework_torch.py runs this example"

@pk.kernel
def layer_norm(rows: i32, cols: i32, x: Buffer[f32, "readonly"], w: Buffer[f32, "readonly"],
               b: Buffer[f32, "readonly"], eps: f32, y: Buffer[f32]):
    r = pk.global_id(0)
    if r < rows:
        base = r * cols
        mean = f32(0.0)
        for c in range(cols):
            mean += x[base + c]
        mean = mean / f32(cols)
        var = f32(0.0)
        for c in range(cols):
            d = x[base + c] - mean
            var += d * d
        inv = pk.rsqrt(var / f32(cols) + eps)
        for c in range(cols):
            y[base + c] = (x[base + c] - mean) * inv * w[c] + b[c]


@pk.kernel
def silu(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        v = x[i]
        y[i] = v / (1.0 + pk.exp(-v))


@pk.kernel
def silu_grad(n: i32, x: Buffer[f32, "readonly"], g: Buffer[f32, "readonly"], dx: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        s = 1.0 / (1.0 + pk.exp(-x[i]))
        dx[i] = g[i] * s * (1.0 + x[i] * (1.0 - s))


def _elements(x, *rest):
    return x.numel()


def _blocks_of_256(x, *rest):
    return (x.numel() + 255) // 256


# op(x, w, b, eps): the kernel's parameters less the output (y) and the sizes computed from x
LAYER_NORM = pkt.custom_op("polykern_examples::layer_norm", layer_norm, outputs="y",
                           shape_rule=lambda x, w, b, eps: x.shape,
                           scalars={"rows": lambda x, w, b, eps: x.numel() // x.shape[-1],
                                    "cols": lambda x, w, b, eps: x.shape[-1]},
                           grid=lambda x, w, b, eps: (x.numel() // x.shape[-1] + 63) // 64, block=64)
SILU = pkt.custom_op("polykern_examples::silu", silu, outputs="y", shape_rule=lambda x: x.shape,
                     scalars={"n": _elements}, grid=_blocks_of_256, block=256)
SILU_GRAD = pkt.custom_op("polykern_examples::silu_grad", silu_grad, outputs="dx", shape_rule=lambda x, g: x.shape,
                          scalars={"n": _elements}, grid=_blocks_of_256, block=256)
SILU.register_autograd(lambda inputs, outputs, grad: SILU_GRAD(inputs[0], grad))


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() and "cuda" in pk.backends.runnable_kinds() else "cpu"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda where it runs, else cpu)")
    device = ap.parse_args().device or default_device()
    torch.manual_seed(0)
    x = torch.randn(64, 96, device=device)
    w, b = torch.randn(96, device=device), torch.randn(96, device=device)
    torch.testing.assert_close(LAYER_NORM(x, w, b, 1e-5), torch.nn.functional.layer_norm(x, (96,), w, b, 1e-5),
                               rtol=1e-4, atol=1e-4)
    print(f"[{device}] layer_norm: eager matches torch.nn.functional.layer_norm")

    def block(x):
        return SILU(LAYER_NORM(x, w, b, 1e-5)).sum()

    def reference(x):
        return torch.nn.functional.silu(torch.nn.functional.layer_norm(x, (96,), w, b, 1e-5)).sum()

    compiled = torch.compile(block, fullgraph=True)  # no graph break: the ops' fake implementations trace
    torch.testing.assert_close(compiled(x), reference(x), rtol=1e-4, atol=1e-3)
    print(f"[{device}] torch.compile(fullgraph=True): layer_norm + silu match torch's")
    xg = x.clone().requires_grad_()
    SILU(xg).sum().backward()
    xr = x.clone().requires_grad_()
    torch.nn.functional.silu(xr).sum().backward()
    torch.testing.assert_close(xg.grad, xr.grad, rtol=1e-5, atol=1e-5)
    print(f"[{device}] silu backward (the silu_grad kernel) matches autograd's")


if __name__ == "__main__":
    main()
