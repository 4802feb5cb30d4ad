"""docs/language.md section 10 (artifacts, `pk.load`, `mod.on(kind)`, device arrays) runs as written: its
code block is extracted and run as a script on this host (every runtime with device memory that is
present gets its device-array part), so the section cannot drift from the code."""
import os
import pathlib
import re
import subprocess
import sys

import pytest
from polykern.testing import tier_skip

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "language.md"


def _section_block(text: str, heading: str) -> str:
    m = re.search(rf"^{re.escape(heading)}\n(.*?)^```python\n(.*?)^```$", text, re.M | re.S)
    assert m, f"docs/language.md has no python block under {heading!r}"
    return m.group(2)


def test_section_10_runs(tmp_path):
    if not DOC.exists():
        pytest.skip("docs/language.md is not in this tree")
    (tmp_path / "section10.py").write_text(_section_block(DOC.read_text(),
                                                          "## 10. Artifacts, runtimes and device arrays"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "section10.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_device_memory_runtime_makes_device_arrays_the_same_way():
    """`mod.on(kind).device_array(a)` / `(shape=, dtype=)` on each module kind section 10 names."""
    import numpy as np

    import polykern as pk
    from polykern import Buffer, f32, i32

    @pk.kernel
    def twice(n: i32, x: Buffer[f32]):
        i = pk.global_id(0)
        if i < n:
            x[i] = 2.0 * x[i]

    kinds = [k for k in pk.backends.runnable_kinds() if k in ("opencl", "vulkan", "webgpu", "cuda")]
    if not kinds:
        tier_skip.skip(("pocl", "lavapipe", "wgpu"),
                       "no runtime with device memory here (OpenCL, Vulkan, WebGPU, CUDA)")
    mod = pk.build([twice], targets=kinds)
    for kind in kinds:
        dev = mod.on(kind)
        a = dev.device_array(np.arange(4, dtype=np.float32))
        dev["twice"](4, a, grid=1, block=4)
        assert a.numpy().tolist() == [0.0, 2.0, 4.0, 6.0], kind
        b = dev.device_array(shape=(2, 2), dtype=np.float32)
        assert (b.shape, b.dtype) == ((2, 2), np.float32), kind
        with pytest.raises(TypeError, match="an array, or shape= and dtype="):
            dev.device_array(shape=4)
