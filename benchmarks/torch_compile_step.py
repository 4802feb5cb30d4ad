"""A torch.compile'd training step of a small MLP whose activation is a polykern operator, against the same
step with the torch operator it replaces (docs/frameworks.md):

    python benchmarks/torch_compile_step.py [--device cpu|cuda] [--batch 512] [--dim 256] [--repeat 30]

Both steps run a ``torch.compile(fullgraph=True)``'d model (forward and, through AOTAutograd, backward) of
``Linear(dim, 4 dim) -> SiLU -> Linear(4 dim, dim)`` on one input; the polykern step uses
examples/torch_op.py's ``SILU`` (the silu kernel forward, the silu_grad kernel backward, through
``register_autograd``), the other ``torch.nn.functional.silu``, which Inductor fuses. The gradients of
both are checked equal first. Prints the median step time of each (interleaved rounds, the GPU
synchronized after each step) and the ratio.
"""
from __future__ import annotations

import argparse

import common  # noqa: F401  (puts python/ and examples/ on sys.path)
import torch
import torch_op  # examples/torch_op.py: SILU

from common import interleaved, median


class MLP(torch.nn.Module):
    def __init__(self, dim: int, act):
        super().__init__()
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)
        self.act = act

    def forward(self, x):
        return self.down(self.act(self.up(x)))


def make_step(model: MLP):
    """One training step: the model compiled whole (AOTAutograd compiles its backward too), then backward."""
    forward = torch.compile(model, fullgraph=True)

    def step(x, target):
        loss = torch.nn.functional.mse_loss(forward(x), target)
        loss.backward()
        return loss

    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda where it runs, else cpu)")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    device = args.device or torch_op.default_device()
    torch.manual_seed(0)
    models = {"polykern silu": MLP(args.dim, torch_op.SILU).to(device),
              "torch silu": MLP(args.dim, torch.nn.functional.silu).to(device)}
    models["torch silu"].load_state_dict(models["polykern silu"].state_dict())
    x = torch.randn(args.batch, args.dim, device=device)
    target = torch.randn(args.batch, args.dim, device=device)
    steps = {name: make_step(m) for name, m in models.items()}
    for name, step in steps.items():
        models[name].zero_grad()
        step(x, target)
    ours, theirs = (dict(m.named_parameters()) for m in models.values())
    for p in ours:
        torch.testing.assert_close(ours[p].grad, theirs[p].grad, rtol=1e-4, atol=1e-5)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def timed(name):
        def run():
            models[name].zero_grad(set_to_none=True)
            steps[name](x, target)
            sync()
        return run

    times = interleaved({name: timed(name) for name in steps}, repeat=args.repeat, warmup=3, min_time=0.02)
    print(f"torch {torch.__version__}, device {device}"
          + (f" ({torch.cuda.get_device_name()})" if device == "cuda" else "")
          + f", batch {args.batch}, dim {args.dim}: median step time over {args.repeat} rounds")
    med = {name: median(t) for name, t in times.items()}
    for name, t in med.items():
        print(f"  {name:14s} {t * 1e3:9.3f} ms")
    print(f"  polykern / torch: {med['polykern silu'] / med['torch silu']:.2f}")


if __name__ == "__main__":
    main()
