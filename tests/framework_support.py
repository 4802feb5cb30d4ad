"""What the framework tests share (tests/test_framework_torch.py, tests/test_framework_jax.py): kernels, and
running an example or a benchmark as a script."""
import os
import subprocess
import sys

import polykern as pk
from polykern import Buffer, bf16, f32, i32


@pk.kernel
def square_and_count(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32], positive: Buffer[i32]):
    """Two outputs: y = x * x, and the count of positive elements (an atomic sum: the output starts at zero)."""
    i = pk.global_id(0)
    if i < n:
        y[i] = x[i] * x[i]
        if x[i] > 0.0:
            pk.atomic_add(positive, 0, 1)


@pk.kernel
def double_bf16(n: i32, x: Buffer[bf16, "readonly"], y: Buffer[bf16]):
    """bf16 in and out (host DLPack tensors NumPy cannot import)."""
    i = pk.global_id(0)
    if i < n:
        y[i] = bf16(2.0 * f32(x[i]))


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_script(folder: str, *argv: str) -> str:
    """Run ``REPO/folder/argv[0]`` with this interpreter and path; its output (a failure shows it)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, *argv], cwd=os.path.join(REPO, folder), env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout
