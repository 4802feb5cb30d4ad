"""//tests:cross_compile_<config> (tools/kbin.bzl, cross_compile_tests): an artifact built by the
CPU-only compiler (a configuration transition to --config=cpu semantics) is

- inspectable offline, and every device module in it was built by a fallback (the compiler's report);
- byte for byte the artifact that the compiler of this test's configuration builds: Bazel built it
  with that configuration's runtime linked in (the compiler's report must show the device's module
  built by the real runtime wherever that runtime was available to it), and so does an in-process
  build here (a real module wherever this process has the runtime);
- loadable here, and it runs on this configuration's device: saxpy and scale, checked against NumPy.
  Where the device or its runtime is absent the launch is skipped with the reason (test.xml marks the
  case <skipped message="...">); in the cpu configuration the launch must fail with a clear error.

Environment (set by device_config_test, tools/kbin.bzl): POLYKERN_TEST_CONFIG (cpu, llvm, opencl,
vulkan, webgpu, cuda); POLYKERN_CROSS_TARGETS (the target strings both artifacts were built for, one a
line); POLYKERN_CROSS_KBIN / _REPORT / _STATUS (the CPU-only build: artifact, the
compiler's report, its `polykern backends --json`); POLYKERN_NATIVE_KBIN / _REPORT / _STATUS (the
same from this configuration's compiler). Paths are runfiles-relative.
"""
import importlib.util
import io
import json
import os
import re
import socket
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stdout
from xml.sax.saxutils import quoteattr

import numpy as np

import polykern as pk
from polykern import backends as pk_backends
from polykern.cli import main as cli_main
from polykern.errors import ArtifactError, RuntimeNotLinkedError
from polykern.target import Target

CONFIG = os.environ.get("POLYKERN_TEST_CONFIG", "")
DEVICE = None if CONFIG == "cpu" else CONFIG
KERNELS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "saxpy_kernels.py")


def _path(var):
    p = os.environ.get(var)
    if not p:
        raise SystemExit(f"{var} is not set: run this through its Bazel target (//tests:cross_compile_<config>)")
    for cand in (p, os.path.join(os.environ.get("RUNFILES_DIR", ""), "_main", p)):
        if os.path.exists(cand):
            return cand
    raise SystemExit(f"{var}={p}: not found (cwd {os.getcwd()})")


def _targets():
    """The target strings both artifacts were built for (//tests:cross_compile's list: tools/kbin.bzl)."""
    text = os.environ.get("POLYKERN_CROSS_TARGETS", "")
    if not text.strip():
        raise SystemExit("POLYKERN_CROSS_TARGETS is not set: run this through its Bazel target "
                         "(//tests:cross_compile_<config>)")
    return [t for t in text.splitlines() if t.strip()]


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _report_modules(path):
    """{kind: 'real' | 'fallback'} from the compiler's report line '... modules: llvm/obj, cuda/ptx (fallback)'."""
    text = _read(path).decode()
    m = re.search(r"^wrote .*; modules: (.*)$", text, re.M)  # (a legend line may follow it)
    if not m:
        raise AssertionError(f"unexpected compiler report {path}: {text!r}")
    out = {}
    for item in m.group(1).split(", "):
        kind = item.split("/")[0]
        out[kind] = "fallback" if item.endswith("(fallback)") else "real"
    return out


def _status(path):
    """{backend: record} from a compiler's `polykern backends --json`."""
    return {r["name"]: r for r in json.loads(_read(path))}


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


def _device_state(kind):
    """(runnable?, reason): whether this process can launch on `kind`, and why not."""
    rec = pk_backends.record_for_kind(kind)
    if rec is None:
        return False, f"no backend handles module kind {kind!r} here"
    if not rec.runtime_available:
        return False, f"the {kind} runtime is not available in this configuration: {rec.runtime_reason}"
    dev = rec.devices()
    if not dev["devices"]:
        return False, f"the {kind} runtime found no device on this machine ({dev['error'] or 'none listed'})"
    return True, ", ".join(dev["devices"])


class CrossCompile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pk_backends.load_all()
        cls.targets = _targets()
        cls.kinds = sorted({Target.parse(t).module_kind for t in cls.targets})
        cls.cross_path = _path("POLYKERN_CROSS_KBIN")
        cls.native_path = _path("POLYKERN_NATIVE_KBIN")
        rc, cls.desc = _inspect_json(cls.cross_path)
        assert rc == 0, f"polykern inspect failed on {cls.cross_path}"
        state = _device_state(DEVICE) if DEVICE else (False, "cpu configuration: no runtime at all")
        print(f"[cross_compile_{CONFIG}] host {socket.gethostname()}; device: {state}")

    def test_inspects_offline(self):
        names = sorted(f["name"] for f in self.desc["functions"])
        self.assertEqual(names, ["saxpy", "scale"])
        self.assertEqual(len(self.desc["targets"]), len(self.targets), self.desc["targets"])
        buf = io.StringIO()
        with redirect_stdout(buf):
            self.assertEqual(cli_main(["inspect", self.cross_path]), 0)
        self.assertIn("saxpy", buf.getvalue())

    def test_cpu_only_compiler_built_fallbacks_only(self):
        mods = _report_modules(_path("POLYKERN_CROSS_REPORT"))
        self.assertEqual(sorted(mods), self.kinds)
        real = sorted(k for k, v in mods.items() if v != "fallback")
        self.assertEqual(real, [], f"the CPU-only compiler built real runtime modules: {real}")
        status = _status(_path("POLYKERN_CROSS_STATUS"))
        linked = sorted(n for n, r in status.items() if r["runtime_available"])
        self.assertEqual(linked, [], f"the CPU-only compiler had runtimes where it ran: {linked}")
        self.assertTrue(all(r["codegen_ok"] for r in status.values()), status)

    def test_native_compiler_used_the_runtime(self):
        # The compiler of this configuration built the device's module with the real runtime wherever
        # that runtime was available to it (its own `polykern backends --json`, from the same action).
        # With remote execution the compile runs on the CPU pool: a GPU runtime that needs a driver
        # (CUDA) is not available there, so the module is the fallback (byte-identical by design; the
        # in-process build then compares against a real build where the test runs, on the GPU pool).
        if DEVICE is None:
            self.skipTest("cpu configuration: its compiler is the CPU-only one (checked above)")
        mods = _report_modules(_path("POLYKERN_NATIVE_REPORT"))
        status = _status(_path("POLYKERN_NATIVE_STATUS"))
        rec = next((r for r in status.values() if DEVICE in r["module_kinds"]), None)
        self.assertIsNotNone(rec, f"the {CONFIG} compiler has no backend for {DEVICE}")
        others = sorted(k for k, v in mods.items() if v == "real" and k != DEVICE)
        self.assertEqual(others, [], f"the {CONFIG} compiler linked runtimes other than {DEVICE}: {others}")
        if not rec["runtime_available"]:
            self.assertEqual(mods[DEVICE], "fallback")
            self.skipTest(f"the {CONFIG}-configuration compiler had no {DEVICE} runtime where it ran, so it "
                          f"built the fallback: {rec['runtime_reason']}")
        self.assertEqual(mods[DEVICE], "real",
                         f"the {CONFIG} compiler had the {DEVICE} runtime but built a fallback module")

    def _compare(self, theirs_bytes, ours_bytes, ours_name):
        if theirs_bytes == ours_bytes:
            return
        theirs = {m.kind: m.save_to_bytes() for m in pk.load(theirs_bytes).device_modules()}
        ours = {m.kind: m.save_to_bytes() for m in pk.load(ours_bytes).device_modules()}
        differ = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
        outdir = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
        if outdir:
            for name, data in (("cpu_only_compiler.kbin", theirs_bytes), (ours_name, ours_bytes)):
                with open(os.path.join(outdir, name), "wb") as f:
                    f.write(data)
        self.fail(f"{ours_name} differs from the CPU-only build in modules {differ or '(container only)'}; "
                  "both are in the test's undeclared outputs")

    def test_byte_identical_to_the_configurations_compiler(self):
        self._compare(_read(self.cross_path), _read(self.native_path), f"{CONFIG}_compiler.kbin")

    def test_byte_identical_to_an_in_process_build(self):
        root = pk.build(_kernels(), targets=list(self.desc["targets"]))
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as d:
            out = os.path.join(d, "here.kbin")
            root.export(out)
            here = _read(out)
        if DEVICE:
            state = _device_state(DEVICE)
            rec = pk_backends.record_for_kind(DEVICE)
            if rec is not None and rec.runtime_available:
                self.assertTrue(root.on(DEVICE).is_runnable,
                                f"the {DEVICE} runtime is available but the in-process build made a fallback")
            print(f"in-process build: {DEVICE} module runnable={root.on(DEVICE).is_runnable} ({state[1]})")
        self._compare(_read(self.cross_path), here, "in_process.kbin")

    def test_loads_and_runs_on_the_device(self):
        root = pk.load(self.cross_path)
        for m in root.device_modules():
            self.assertTrue(m.inspect_source())
        if DEVICE is None:
            llvm = root.on("llvm")
            self.assertFalse(llvm.is_runnable)
            with self.assertRaises(ArtifactError) as cm:
                llvm["saxpy"]
            self.assertIn("llvm", str(cm.exception).lower())
            built = pk.build(_kernels(), targets=["llvm"])
            with self.assertRaises(RuntimeNotLinkedError) as cm:
                built.on("llvm")["saxpy"]
            self.assertIn("saxpy", str(cm.exception))
            return
        ok, why = _device_state(DEVICE)
        if not ok:
            self.skipTest(why)
        mod = root.on(DEVICE)
        self.assertTrue(mod.is_runnable, f"{DEVICE} has a runtime and a device, but the loaded module is not runnable")
        n = 1000
        x = np.arange(n, dtype=np.float32)
        y = np.ones(n, dtype=np.float32)
        t0 = time.perf_counter()
        mod["saxpy"](n, 2.0, x, y, grid=(n + 63) // 64, block=64)
        np.testing.assert_allclose(y, 2.0 * np.arange(n, dtype=np.float32) + 1.0)
        mod["scale"](n, 0.5, y, grid=(n + 63) // 64, block=64)
        np.testing.assert_allclose(y, np.arange(n, dtype=np.float32) + 0.5)
        print(f"ran saxpy and scale on {DEVICE} ({why}) in {time.perf_counter() - t0:.3f} s")


class _Result(unittest.TextTestResult):
    """Also records each case's outcome for the JUnit XML that Bazel keeps as test.xml."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.cases = []
        self._t0 = {}

    def startTest(self, test):
        self._t0[test.id()] = time.perf_counter()
        super().startTest(test)

    def _done(self, test, status, message=""):
        self.cases.append((test.id().split(".")[-1], status, message, time.perf_counter() - self._t0.get(test.id(), 0)))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._done(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._done(test, "failure", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._done(test, "error", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._done(test, "skipped", reason)


def _write_junit(path, cases):
    suite = f"cross_compile_{CONFIG}"
    fails = sum(c[1] == "failure" for c in cases)
    errors = sum(c[1] == "error" for c in cases)
    skipped = sum(c[1] == "skipped" for c in cases)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>",
             f'<testsuite name={quoteattr(suite)} tests="{len(cases)}" failures="{fails}" errors="{errors}" '
             f'skipped="{skipped}">']
    for name, status, msg, secs in cases:
        lines.append(f'<testcase classname={quoteattr(suite)} name={quoteattr(name)} time="{secs:.3f}">')
        if status in ("failure", "error", "skipped"):
            lines.append(f"<{status} message={quoteattr(msg.strip().splitlines()[-1] if msg.strip() else '')}>"
                         f"</{status}>")
        lines.append("</testcase>")
    lines += ["</testsuite>", "</testsuites>", ""]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main():
    if not CONFIG:
        raise SystemExit("POLYKERN_TEST_CONFIG is not set: run this through //tests:cross_compile_<config>")
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(CrossCompile)
    runner = unittest.TextTestRunner(verbosity=2, resultclass=_Result, stream=sys.stdout)
    result = runner.run(suite)
    for name, status, msg, _ in result.cases:
        if status == "skipped":
            print(f"SKIPPED {name}: {msg}")
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        _write_junit(xml, result.cases)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
