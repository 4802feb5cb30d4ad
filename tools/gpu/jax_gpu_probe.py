"""polykern.jax on a GPU (docs/frameworks.md): the XLA FFI custom call on XLA's stream against the callback route
and against the same computation in jax.numpy, and a CUDA graph replay against eager launches (docs/runtime.md).

    python tools/gpu/jax_gpu_probe.py [--rounds 7] [--n 16777216]

(on the GPU machine with PYTHONPATH as tools/gpu/run_gpu_suite.sh sets it; JAX with its CUDA plugin).

JAX part: ``y = a * x + b`` over ``n`` f32 elements inside ``jax.jit``, three ways: the kernel through the GPU
custom call (``via="ffi"``), through ``jax.pure_callback`` (``via="callback"``: to the host and back), and
``a * x + b`` in jax.numpy. Each round times 20 calls of each (``block_until_ready``), interleaved; the median
per call and the median ratio to jax.numpy (with its spread) are printed. Results are checked.

Graph part: 50 launches of a small kernel recorded once with ``pk.Stream.capture`` and replayed, against the same
50 launches made from Python, host time per launch.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32


@pk.kernel
def axpb(n: i32, a: f32, b: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + b


@pk.kernel
def bump(n: i32, x: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        x[i] = x[i] + 1.0


def _per_call(f, x, calls: int) -> float:
    f(x).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(calls):
        y = f(x)
    y.block_until_ready()
    return (time.perf_counter() - t0) / calls


def jax_part(n: int, rounds: int) -> None:
    import jax
    import jax.numpy as jnp
    import polykern.jax as pkj

    print(f"jax {jax.__version__}, devices {jax.devices()}")
    fns = {}
    for via in ("ffi", "callback"):
        k = pkj.kernel_function(axpb, outputs="y", shape_rule=lambda a, b, x: x.shape, via=via,
                                scalars={"n": lambda a, b, x: x.size}, grid=lambda a, b, x: (x.size + 255) // 256,
                                block=256)  # the inputs in the kernel's order: a, b, x
        fns[via] = jax.jit(lambda x, k=k: k(2.0, 1.0, x))
    fns["jnp"] = jax.jit(lambda x: 2.0 * x + 1.0)
    x = jnp.asarray(np.random.default_rng(0).standard_normal(n), jnp.float32)
    want = np.asarray(fns["jnp"](x))
    for name, f in fns.items():
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6, atol=1e-6)
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, f in fns.items():
            times[name].append(_per_call(f, x, 20 if name != "callback" else 3))
    for name, ts in times.items():
        ratios = [t / j for t, j in zip(ts, times["jnp"])]
        print(f"  {name:9s} {statistics.median(ts) * 1e6:10.1f} us/call   vs jax.numpy {statistics.median(ratios):7.3f}"
              f" ({min(ratios):.3f}-{max(ratios):.3f})")


def graph_part(rounds: int) -> None:
    n, launches = 1 << 12, 50
    k = pk.build([bump], ["cuda"])["bump"]
    x = pk.zeros(n, np.float32, device="cuda")
    s = pk.Stream(device="cuda")
    with s:
        k(n, x, grid=n // 256, block=256)
    with s.capture() as g:
        for _ in range(launches):
            k(n, x, grid=n // 256, block=256)
    eager, replay = [], []
    for _ in range(rounds):
        s.synchronize()
        t0 = time.perf_counter()
        with s:
            for _ in range(launches):
                k(n, x, grid=n // 256, block=256)
        s.synchronize()
        eager.append((time.perf_counter() - t0) / launches)
        t0 = time.perf_counter()
        g.replay(s)
        s.synchronize()
        replay.append((time.perf_counter() - t0) / launches)
    got = x.numpy()
    assert (got == 1 + 2 * rounds * launches).all(), got[:4]
    print(f"cuda graph: {launches} launches, eager {statistics.median(eager) * 1e6:.1f} us/launch, replayed "
          f"{statistics.median(replay) * 1e6:.2f} us/launch (host clock incl. the wait; {g.launches} captured)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=1 << 24)
    args = ap.parse_args()
    graph_part(args.rounds)
    jax_part(args.n, args.rounds)


if __name__ == "__main__":
    main()
