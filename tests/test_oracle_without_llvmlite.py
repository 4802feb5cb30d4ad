"""The oracle (the IR interpreter, ``polykern.testing.interp``) judges every backend, so it must not need
the LLVM toolchain: it runs a kernel with subgroups in a process where llvmlite cannot be imported (it
took the CPU subgroup size from the CPU subgroup lowering, which imports llvmlite)."""
import os
import subprocess
import sys
import textwrap

KERNEL = '''
import polykern as pk
from polykern import Buffer, f32, i32


@pk.kernel
def k(n: i32, x: Buffer[f32], y: Buffer[f32], s: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = 2.0 * x[i] + pk.sqrt(y[i])
    s[i] = pk.subgroup_add(f32(pk.subgroup_local_id()))
'''

DRIVER = '''
import sys
sys.modules["llvmlite"] = None  # `import llvmlite` raises ImportError
import numpy as np
from kern import k
from polykern.testing.interp import interpret
from polykern.codegen.cpu.subgroup_size import CPU_SUBGROUP_SIZE

x = np.arange(16, dtype=np.float32)
y = np.full(16, 4.0, np.float32)
s = np.zeros(16, np.float32)
out = interpret(k, [12, x, y, s], grid=(1,), block=(16,)).buffers
expect = np.where(np.arange(16) < 12, 2 * x + 2, 4).astype(np.float32)
assert np.array_equal(out["y"], expect), out["y"]
assert np.all(out["s"] == sum(range(CPU_SUBGROUP_SIZE))), out["s"]
assert "llvmlite.ir" not in sys.modules
print("ok")
'''


def test_interpret_runs_without_llvmlite(tmp_path):
    (tmp_path / "kern.py").write_text(textwrap.dedent(KERNEL))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    out = subprocess.run([sys.executable, "-c", DRIVER], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]
