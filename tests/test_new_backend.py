"""docs/backends.md "Adding an in-tree backend": a new backend is one folder and one line (then the
generators). Proved in a copy of the checkout (every file `git ls-files` names): a throwaway backend
``toycpu`` is added exactly as that section says — the folder backends/toycpu/ with a small real codegen
(the LLVM CPU code generator under another kind, refusing ``i8``/``u8`` and ``pk.subgroup_*`` and without
matrix fragments) and a runtime, the one ``backend(...)`` line in backends/backends.bzl, then
``python tools/gen_backends.py`` and ``python -m polykern.testing.support_table --write`` — and the
tests that hold a list of backends run there, unedited: the backend list and its Bazel/pip mirrors, the
capability declarations and everything derived from them (conformance skips, fuzz refusals and profiles,
the support and atomics tables of docs/language.md, numerics, the pipeline's debug_print/Hopper/async-copy/matrix
refusals and lowerings), the per-target compile/determinism/specialization tables and the test tiers. A test that
still pins the backends by hand fails there, or leaves the new kind out (the report must show its cases).
(Source-tree check: this file runs in the pytest tier, not under Bazel.)
"""
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
import xml.etree.ElementTree as ET

import pytest

from backend_list import REPO

NAME = "toycpu"
LINE = (f'    backend("{NAME}", needs = ["host_cpu"], '
        'doc = "throwaway: the host CPU through the LLVM code generator, without 8-bit integers or subgroups"),\n')

FOLDER = {
    "BUILD.bazel": '''\
        load("//backends:backends.bzl", "polykern_backend")

        polykern_backend()
        ''',
    f"polykern_{NAME}/__init__.py": f'''\
        """A throwaway backend (tests/test_new_backend.py)."""


        def register_backend():
            from polykern import backends

            return backends.declare("{NAME}", "{NAME}", display_name="toy CPU",
                                    codegen="polykern_{NAME}.codegen", runtime="polykern_{NAME}.runtime")
        ''',
    f"polykern_{NAME}/fallback.py": '''\
        from polykern_llvm.fallback import LLVMFallbackModule


        class ToyFallbackModule(LLVMFallbackModule):
            """The same payload as an llvm module (an ELF object), under this backend's kind."""
        ''',
    f"polykern_{NAME}/codegen.py": f'''\
        """The LLVM CPU code generator under kind '{NAME}', which refuses 8-bit integers and subgroups."""
        from polykern import registry
        from polykern.kbin import payload_formats
        from polykern.capabilities import Capabilities, F16Rounding
        from polykern.errors import KernelTypeError
        from polykern.ir import nodes as ir
        from polykern.module import create_with_fallback
        from polykern.target import Target, TargetKind
        from polykern_llvm import codegen as llvm_codegen

        from .fallback import ToyFallbackModule

        NO_I8 = "{NAME} has no 8-bit integer types"
        REFUSES = {{"i8": NO_I8, "u8": NO_I8, "subgroups": "{NAME} has no subgroups"}}
        KIND = TargetKind("{NAME}", "{NAME}", {{}}, doc="a throwaway CPU backend",
                          capabilities=Capabilities(numerics="llvm", refuses=REFUSES, no_matrix="no matrix engine",
                                                    f16=F16Rounding("clamp")))


        def _uses_i8(fn):
            types = [p.type.elem if p.is_buffer else p.type for p in fn.params] + list(fn.locals.values())
            types += [a.elem for a in fn.arrays.values()] + [e.type for e in ir.walk_all_exprs(fn.body)]
            return any(getattr(t, "name", "") in ("i8", "u8") for t in types)


        USES = {{"i8": _uses_i8, "subgroups": ir.uses_subgroups}}


        def build(funcs, target):
            for fn in funcs:
                for feature, uses in USES.items():
                    if uses(fn):
                        raise KernelTypeError(f"kernel '{{fn.name}}': {{REFUSES[feature]}}", fn.loc)
            m = llvm_codegen.build(funcs, Target("llvm"))
            return create_with_fallback("{NAME}", m.payload, m.fmt, m.functions, dict(m.sources),
                                        fallback_cls=ToyFallbackModule)


        def register():
            KIND.register()
            registry.register("target.build.{NAME}", build)
            registry.register(payload_formats.registry_key("{NAME}"), ToyFallbackModule.payload_formats)
        ''',
    f"polykern_{NAME}/runtime.py": f'''\
        """Runs {NAME} modules with the CPU runtime (polykern_llvm.runtime)."""
        from polykern import registry
        from polykern.kbin import wire
        from polykern.kbin.payload_formats import check_payload
        from polykern_llvm import runtime as llvm_runtime

        from .fallback import ToyFallbackModule


        class ToyModule(llvm_runtime.LLVMModule):
            def __init__(self, payload, fmt, fmap, sources=None):
                super().__init__(payload, fmt, fmap, sources)
                self.kind = "{NAME}"


        def load_from_bytes(data, sources):
            fmt, fmap, payload = wire.decode_device_payload("{NAME}", data)
            check_payload("{NAME}", ToyFallbackModule.payload_formats, fmt, fmap, payload)
            return ToyModule(payload, fmt, fmap, sources)


        devices = llvm_runtime.devices


        def register():
            registry.register("module.create.{NAME}", ToyModule)
            registry.register("module.load_from_bytes.{NAME}", load_from_bytes)
        ''',
}

# The tests that hold a list of backends, target kinds, capabilities or tiers; run unedited in the copy.
SELECTED = [
    "tests/test_backend_list.py", "tests/test_backend_layout.py", "tests/test_capabilities.py",
    "tests/test_compile_all_backends.py", "tests/test_conformance.py", "tests/test_language_doc.py",
    "tests/test_numerics.py", "tests/test_specialize.py",
    "tests/test_fuzz.py::test_every_refusal_is_declared_and_nothing_else_is_refused",
    "tests/test_fuzz.py::test_declared_refusals_are_real",
    "tests/test_fuzz_profile.py::test_every_feature_a_backend_may_refuse_can_be_left_out",
    "tests/test_determinism.py::test_the_target_list_is_every_registered_backend",
    "tests/test_determinism.py::test_two_processes_give_identical_bytes[matmul.py]",
    "tests/test_require.py::test_unknown_tier_is_an_error",
    "tests/test_require.py::test_each_runtime_tier_names_its_backend",
    f"tests/test_debug_print.py::test_targets_without_printf_refuse_it_located[{NAME}]",
    f"tests/test_hopper_lang.py::test_other_targets_refuse_by_name[{NAME}]",
    f"tests/test_async_copy.py::test_every_other_backend_compiles_plain_copies[{NAME}]",
    f"tests/test_matrix.py::test_backends_without_a_matrix_engine_refuse[{NAME}]",
]
# Within them: every case but those parametrized over other backends (the same as in the checkout).
PER_BACKEND = ("within_promise", "saturates", "cell_is", "public_name", "conversions_round", "int_div_rem",
               "on_runtime", "compiles_with_and", "comparisons_with_nan", "float_mod", "no_silent",
               "math_of_constants", "log_of_subnormals", "test_conformance")
KEYWORDS = f"{NAME} or not ({' or '.join(PER_BACKEND)})"


def _copy_checkout(dst):
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode()
    for rel in filter(None, files.split("\0")):
        src = os.path.join(REPO, rel)
        if os.path.isfile(src) and not os.path.islink(src):
            os.makedirs(os.path.join(dst, os.path.dirname(rel)), exist_ok=True)
            shutil.copyfile(src, os.path.join(dst, rel))


def _add_the_backend(root):
    """The folder and the line, as docs/backends.md "Adding an in-tree backend" says."""
    for rel, text in FOLDER.items():
        path = os.path.join(root, "backends", NAME, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
    path = os.path.join(root, "backends", "backends.bzl")
    text = open(path).read()
    end = text.index("\n]\n", text.index("BACKENDS = [\n"))
    with open(path, "w") as f:
        f.write(text[:end + 1] + LINE + text[end + 1:])


def _installed(root, site):
    """What `pip install -e .` of the copy makes discoverable: a dist-info of `polykern` in ``site`` whose
    entry points are the copy's pyproject.toml (the checkout's installed one lists only the checkout's
    backends). Returns the PYTHONPATH of the copy: ``site``, python/ and every backend folder."""
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        eps = tomllib.load(f)["project"]["entry-points"]["polykern.backends"]
    info = os.path.join(site, "polykern-0.0.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: polykern\nVersion: 0.0.0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[polykern.backends]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(eps.items())))
    backend_dirs = sorted(os.path.join(root, "backends", d) for d in os.listdir(os.path.join(root, "backends"))
                          if os.path.isdir(os.path.join(root, "backends", d, f"polykern_{d}")))
    return os.pathsep.join([site, os.path.join(root, "python"), *backend_dirs])


def _run(root, env, *args, timeout=120):
    r = subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(args)} in the copy exited {r.returncode}:\n{r.stdout[-6000:]}\n{r.stderr[-3000:]}"
    return r


def test_a_new_backend_is_one_folder_and_one_line(tmp_path):
    if shutil.which("git") is None or not os.path.exists(os.path.join(REPO, ".git")):
        pytest.fail("this test copies the checkout's tracked files: it needs git and a git checkout")
    root = str(tmp_path / "tree")
    _copy_checkout(root)
    _add_the_backend(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYKERN_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    _run(root, env, "tools/gen_backends.py")
    env["PYTHONPATH"] = _installed(root, str(tmp_path / "site"))
    _run(root, env, "-m", "polykern.testing.support_table", "--write")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)  # the copy's tests copy its tracked files
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)

    _run(root, env, "-c", "from polykern import backends; import sys; "
         f"sys.exit(0 if '{NAME}' in backends.runnable_kinds() else 'not runnable: ' + repr(backends.status()))")
    report = str(tmp_path / "report.xml")
    _run(root, env, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", "-k", KEYWORDS,
         *SELECTED, timeout=900)
    # The new kind was tested there, not left out: its conformance cases ran (also checked), and what it
    # declares it refuses was skipped with its declared reason.
    ran, skipped = set(), {}
    for case in ET.parse(report).getroot().iter("testcase"):
        skip = case.find("skipped")
        if skip is None:
            ran.add(case.get("name"))
        else:
            skipped[case.get("name")] = skip.get("message", "")
    assert {f"test_conformance[example_matmul_{NAME}]", f"test_conformance[example_matmul_{NAME}_checked]",
            f"test_compiles_with_and_without_fallback[elementwise_u8-{NAME}]",
            f"test_each_cell_is_what_the_code_generator_does[i8-{NAME}]",
            f"test_each_atomics_cell_is_what_the_code_generator_does[i8-{NAME}]"} <= ran, sorted(ran)
    assert f"{NAME} has no 8-bit integer types" in skipped.get(f"test_conformance[elementwise_i8_{NAME}]", ""), skipped
