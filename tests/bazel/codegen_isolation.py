"""//backends/<x>:codegen_isolation_test: the codegen of backend <x> builds, imports and registers
with no device package present.

argv: <backend> <binding module>...   (the binding modules of every backend, from backends.bzl)

Checks, in a process whose only deps are //backends/<x>:codegen (so the core + pure-Python wheels):
1. no binding module (pyopencl, vulkan, wgpu, pycuda, Metal, ...) is importable at all;
2. importing polykern_<x> and calling register_backend() registers its codegen
   ("target.build.*" keys) and imports none of those modules;
3. no file of polykern_<x> in this process' path is a runtime file, and none imports a binding;
4. every module loaded comes from the runfiles or the interpreter's standard library, never from an
   undeclared site-packages;
5. `polykern.backends.load_all()` discovers exactly this backend, through the `polykern.backends`
   entry point of the .dist-info that //backends:dist_info.bzl generates into :codegen (Bazel runs
   have no pip-installed metadata, and discovery never scans sys.path for polykern_* names).
"""
import ast
import importlib
import importlib.util
import os
import sys
import sysconfig
import unittest

BACKEND = sys.argv[1]
BINDINGS = sys.argv[2:]


def _runfiles_root():
    here = os.path.abspath(__file__)
    marker = ".runfiles" + os.sep
    i = here.find(marker)
    return here[: i + len(marker)] if i >= 0 else os.getcwd()


class CodegenIsolation(unittest.TestCase):
    def test_no_binding_importable(self):
        for mod in BINDINGS:
            self.assertIsNone(importlib.util.find_spec(mod),
                              f"device binding '{mod}' is importable from a codegen-only target")

    def test_registers_codegen_without_bindings(self):
        from polykern import registry

        pkg = importlib.import_module("polykern_" + BACKEND)
        pkg.register_backend()
        keys = registry.names("target.build.")
        self.assertTrue(keys, "register_backend() registered no target.build.* entry")
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BINDINGS)
        self.assertEqual(loaded, [], "codegen imported device bindings")
        # The runtime module, if the backend tried to import it, must not have been found.
        self.assertNotIn(f"polykern_{BACKEND}.runtime", sys.modules)

    def test_discovered_through_its_entry_point(self):
        from polykern import backends

        recs = {r.name: r for r in backends.load_all()}
        self.assertEqual(sorted(recs), [BACKEND], "a codegen-only target must discover exactly its backend")
        self.assertEqual(recs[BACKEND].origin, f"entry point {BACKEND} = polykern_{BACKEND}:register_backend")
        self.assertTrue(recs[BACKEND].codegen_ok, recs[BACKEND].codegen_error)

    def test_package_has_no_runtime_code(self):
        spec = importlib.util.find_spec("polykern_" + BACKEND)
        self.assertIsNotNone(spec, f"polykern_{BACKEND} is not importable")
        root = os.path.dirname(spec.origin)
        for dirpath, _, names in os.walk(root):
            for n in names:
                if not n.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, n), root)
                self.assertFalse(rel == "runtime.py" or rel.startswith("runtime" + os.sep),
                                 f"runtime file {rel} is in the codegen target")
                with open(os.path.join(dirpath, n), encoding="utf-8") as f:
                    tree = ast.parse(f.read(), filename=rel)
                for node in ast.walk(tree):
                    names_ = []
                    if isinstance(node, ast.Import):
                        names_ = [a.name for a in node.names]
                    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        names_ = [node.module]
                    for nm in names_:
                        self.assertNotIn(nm.split(".")[0], BINDINGS,
                                         f"{rel}:{node.lineno} imports device binding '{nm}'; "
                                         "move it to the runtime (runtime_srcs in backends.bzl)")

    def test_hermetic_imports(self):
        importlib.import_module("polykern_" + BACKEND)
        allowed = [os.path.abspath(_runfiles_root())]
        for key in ("stdlib", "platstdlib"):
            allowed.append(os.path.abspath(sysconfig.get_paths()[key]))
        bad = []
        for name, mod in sorted(sys.modules.items()):
            f = getattr(mod, "__file__", None)
            if not f:
                continue
            absf = os.path.abspath(f)
            under_runfiles = absf.startswith(allowed[0])
            in_stdlib = any(absf.startswith(a + os.sep) for a in allowed[1:]) and \
                "site-packages" not in absf and "dist-packages" not in absf
            if not (under_runfiles or in_stdlib):
                bad.append(f"{name}: {f}")
        self.assertEqual(bad, [], "modules loaded from outside the runfiles and the stdlib")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
