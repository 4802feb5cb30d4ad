"""//tests:cross_compile — an artifact built by the CPU-only compiler (Bazel, --config=cpu via a
configuration transition) is inspectable offline, byte-identical to what this configuration's
compiler builds (with whatever real runtimes it links), loads here, and runs where a runtime exists.

argv: <path of the .kbin built by //tests:saxpy_cross>
"""
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

import numpy as np

import polykern as pk
from polykern import backends as pk_backends
from polykern.cli import main as cli_main

ARTIFACT = sys.argv[1]
KERNELS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "saxpy_kernels.py")


def _inspect_json(path):
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = cli_main(["inspect", "--json", path])
    return rc, json.loads(buf.getvalue()) if rc == 0 else None


def _kernels():
    spec = importlib.util.spec_from_file_location("_pk_bazel_saxpy_kernels", KERNELS_FILE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return [mod.saxpy, mod.scale]


class CrossCompile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pk_backends.load_all()
        rc, cls.desc = _inspect_json(ARTIFACT)
        assert rc == 0, f"polykern inspect failed on {ARTIFACT}"

    def test_inspects_offline(self):
        kinds = [m["kind"] for m in self.desc["modules"]] if "modules" in self.desc else None
        names = sorted(f["name"] for f in self.desc["functions"])
        self.assertEqual(names, ["saxpy", "scale"])
        self.assertEqual(len(self.desc["targets"]), 6, self.desc["targets"])
        if kinds is not None:
            for k in ("llvm", "cuda", "opencl", "vulkan", "webgpu", "metal"):
                self.assertIn(k, kinds)
        buf = io.StringIO()
        with redirect_stdout(buf):
            self.assertEqual(cli_main(["inspect", ARTIFACT]), 0)
        self.assertIn("saxpy", buf.getvalue())

    def test_byte_identical_to_this_configuration(self):
        with open(ARTIFACT, "rb") as f:
            cross = f.read()
        root = pk.build(_kernels(), targets=list(self.desc["targets"]))
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as d:
            out = os.path.join(d, "here.kbin")
            root.export(out)
            with open(out, "rb") as f:
                here = f.read()
        runnable = [m.kind for m in root.device_modules() if m.is_runnable]
        if here != cross:
            # Name the modules that differ, and keep both artifacts for `polykern inspect`.
            theirs = {m.kind: m.save_to_bytes() for m in pk.load(ARTIFACT).device_modules()}
            ours = {m.kind: m.save_to_bytes() for m in root.device_modules()}
            differ = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
            outdir = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
            if outdir:
                for name, data in (("cpu_only_compiler.kbin", cross), ("this_configuration.kbin", here)):
                    with open(os.path.join(outdir, name), "wb") as f:
                        f.write(data)
            self.fail(f"artifact differs from the CPU-only build in modules {differ or '(container only)'} "
                      f"(real runtimes here: {runnable}); both are in the test's undeclared outputs")

    def test_loads_and_runs_where_a_runtime_exists(self):
        root = pk.load(ARTIFACT)
        for m in root.device_modules():
            self.assertTrue(m.inspect_source())
        try:
            llvm = root.on("llvm")
        except Exception as e:  # noqa: BLE001
            self.fail(f"no llvm module in the artifact: {e}")
        if not llvm.is_runnable:
            self.skipTest("the llvm runtime is not linked in this configuration (--config=cpu?)")
        n = 1000
        x = np.arange(n, dtype=np.float32)
        y = np.ones(n, dtype=np.float32)
        llvm["saxpy"](n, 2.0, x, y, grid=(n + 63) // 64, block=64)
        np.testing.assert_allclose(y, 2.0 * np.arange(n, dtype=np.float32) + 1.0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
