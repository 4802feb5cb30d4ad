"""//tests:cross_compile_emulated: an artifact built by the CPU-only compiler (a configuration
transition, tools/kbin.bzl) for ``llvm -mtriple=aarch64-linux-gnu`` and ``hexagon`` runs under QEMU
user-mode emulation, checked against NumPy:

- the hexagon module through polykern's Hexagon runtime (qemu-hexagon-static + the freestanding
  harness, backends/hexagon/polykern_hexagon/runtime);
- the aarch64 module through ``kbin-run`` cross-built for aarch64 (//native:kbin_run_aarch64) under
  qemu-aarch64-static.

argv: the .kbin, the aarch64 kbin-run. A cell whose emulator or cross compiler is missing on this
host is skipped with the reason.
"""
import os
import shutil
import subprocess
import sys
import unittest

import numpy as np

import polykern as pk
from polykern import backends
from polykern.runtime import launch_stream

KBIN, RUNNER = sys.argv[1], sys.argv[2]
N = 1000


def _inputs():
    x = np.arange(N, dtype=np.float32) * 0.5
    y = np.linspace(-3, 3, N, dtype=np.float32)
    return x, y


class Emulated(unittest.TestCase):
    def test_hexagon_module_runs_under_qemu_hexagon(self):
        root = pk.load(KBIN)
        rec = backends.record_for_kind("hexagon")
        if not rec.runtime_available:
            self.skipTest(f"no Hexagon runtime here: {rec.runtime_reason}")
        mod = root.on("hexagon")
        x, y = _inputs()
        want = np.float32(2.5) * x + y
        mod["saxpy"](N, 2.5, x, y, grid=(N + 63) // 64, block=64)
        np.testing.assert_array_equal(y, want)
        mod["scale"](N, -2.0, y, grid=(N + 127) // 128, block=128)
        np.testing.assert_array_equal(y, want * np.float32(-2.0))

    def test_aarch64_module_runs_under_qemu_aarch64(self):
        qemu = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
        if not qemu:
            self.skipTest("no qemu-aarch64-static on PATH (Debian/Ubuntu package qemu-user-static)")
        with open(RUNNER, "rb") as f:
            if f.read(2) == b"#!":  # //native:kbin_run_aarch64 without a cross compiler: it says why
                r = subprocess.run([RUNNER], capture_output=True, text=True)
                self.skipTest(r.stderr.strip())
        x, y = _inputs()
        data = launch_stream.encode([(launch_stream.SCALAR, np.int32(N).tobytes()),
                                     (launch_stream.SCALAR, np.float32(2.5).tobytes()),
                                     (launch_stream.READ, x.tobytes()), (launch_stream.WRITE, y.tobytes())],
                                    ((N + 63) // 64, 1, 1, 64, 1, 1))
        r = subprocess.run([qemu, "-L", "/usr/aarch64-linux-gnu", os.path.abspath(RUNNER), KBIN, "saxpy", "--on", "llvm"],
                           input=data, capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        out, = launch_stream.split_outputs(r.stdout, [y.nbytes])
        np.testing.assert_array_equal(np.frombuffer(out, np.float32), np.float32(2.5) * x + y)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
