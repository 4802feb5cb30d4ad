"""--config=cpu yields a compiler with zero runtime code in its runfiles.

argv: <runfiles of //:compiler with no runtime> <runfiles with the wheel runtimes forced on>
      <backends.json>
The first listing must hold every codegen and no runtime file nor device binding; the second (the
negative control) must hold the runtime files and bindings of the runtimes forced on, which shows the
check would notice them.
"""
import fnmatch
import json
import sys
import unittest


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [ln for ln in f.read().splitlines() if ln]


def _runtime_file_hits(paths, backend, patterns):
    prefix = f"backends/{backend}/"
    hits = []
    for p in paths:
        if p.startswith(prefix):
            rel = p[len(prefix):]
            if any(fnmatch.fnmatch(rel, pat) for pat in patterns):
                hits.append(p)
    return hits


def _binding_hits(paths, modules):
    """Files of a device binding: anything in an external repository (pip wheels live in
    ../<repo>/site-packages/...) that is, or belongs to, one of `modules`."""
    hits = []
    for p in paths:
        if not p.startswith("../"):
            continue
        parts = p.split("/")
        for m in modules:
            ml = m.lower()
            if parts[1].lower().endswith("pypi_" + ml) or m in parts[2:-1] or m + ".py" == parts[-1]:
                hits.append(p)
                break
    return hits


class CpuCompilerRunfiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cpu = _lines(sys.argv[1])
        cls.full = _lines(sys.argv[2])
        with open(sys.argv[3], encoding="utf-8") as f:
            cls.backends = json.load(f)

    def test_every_codegen_is_there(self):
        cpu, full = set(self.cpu), set(self.full)
        present = [b for b in self.backends if f"backends/{b}/polykern_{b}/__init__.py" in full]
        print("backends with code:", present, "declared without code yet:",
              sorted(set(self.backends) - set(present)))
        self.assertIn("llvm", present)
        for b in present:
            self.assertTrue(f"backends/{b}/polykern_{b}/__init__.py" in cpu,
                            f"codegen of {b} missing from the CPU-only compiler")
        self.assertTrue("python/polykern/cli.py" in cpu)

    def test_no_runtime_files(self):
        for b, facts in self.backends.items():
            hits = _runtime_file_hits(self.cpu, b, facts["runtime_files"])
            self.assertEqual(hits, [], f"runtime files of {b} in the --config=cpu compiler")

    def test_no_device_bindings(self):
        mods = sorted({m for facts in self.backends.values() for m in facts["runtime_modules"]})
        self.assertEqual(_binding_hits(self.cpu, mods), [], "device bindings in the --config=cpu compiler")

    def test_negative_control_sees_runtimes(self):
        # The forced-on listing (llvm opencl vulkan webgpu) must show runtime files and bindings.
        for b in ("opencl", "vulkan", "webgpu"):
            facts = self.backends[b]
            present = [p for p in self.full if p.startswith(f"backends/{b}/polykern_{b}/runtime")]
            if f"backends/{b}/polykern_{b}/__init__.py" in self.full and present:
                self.assertTrue(_runtime_file_hits(self.full, b, facts["runtime_files"]))
            self.assertTrue(_binding_hits(self.full, facts["runtime_modules"]),
                            f"negative control: binding of {b} not found in the runtime-enabled compiler")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
