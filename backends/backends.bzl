"""THE list of polykern backends, and the Bazel targets generated from it.

Adding an in-tree backend = a folder backends/<x>/ (polykern_<x>/ with register_backend(), tests/, and
a BUILD.bazel that says `polykern_backend()`) plus one `backend(...)` line in BACKENDS below, then
`python tools/gen_backends.py` (docs/backends.md, "In-tree backend"). The Bazel targets below are
generated from the list at load time; the files that cannot load Starlark (the `--config=<x>` lines
of .bazelrc, pyproject.toml's entry points and extras, requirements.txt) hold blocks that
tools/gen_backends.py writes from it, and `python tools/gen_backends.py --check`
(tests/test_backend_list.py) fails, naming the file and the command, while one is stale.

Per backend `x`:
  //backends/x:codegen   py_library: the polykern_x package minus its runtime files; deps = the core
                         (//:polykern) + pure-Python/wheel deps. Never a device binding.
  //backends/x:runtime   py_library: the runtime files + the device binding (pip). Compatible only when
                         the runtime is enabled (see flags), so CPU-only configurations skip it.
  //backends/x:runtime_code
                         testonly: the runtime files without the binding (what tests see when the
                         runtime is not enabled: the backend then reports the missing binding).
  //backends/x:<test>    one py_test per backends/x/tests/test_*.py (pytest): codegen + runtime_code +
                         (runtime when enabled). In a backend with a gpu_tag, test files named
                         *_runtime.py, *_device.py or *_gpu.py carry that tag and exec_properties
                         {"test.Pool": "gpu"}, and need the runtime (SKIPPED where it is not enabled).
  //backends/x:codegen_isolation_test
                         proves :codegen imports and registers with no device package anywhere.
Generated in //backends (backends/BUILD.bazel):
  --//backends:runtime_x=true|false   bool flag; default = the host toolchain for x was detected
                                      (@polykern_host_toolchains, see //toolchains)
  --//backends:no_runtimes=true       the CPU-only cross-compiler: no runtime at all (--config=cpu)
  //backends:x_runtime_enabled        config_setting group: runtime_x && !no_runtimes (&& os)
  //backends:all_codegen              every codegen
  //backends:enabled_runtimes         the runtimes enabled in this configuration (select)
"""

load("@bazel_skylib//lib:selects.bzl", "selects")
load("@bazel_skylib//rules:common_settings.bzl", "bool_flag")
load("@polykern_host_toolchains//:detected.bzl", "DETECTED_TOOLS", "HOST_OS")
load("@rules_python//python:defs.bzl", "py_library", "py_test")
load("//backends:dist_info.bzl", "backend_dist_info")
load("//toolchains:extensions.bzl", "TOOLS")
load("//tests/bazel:pytest.bzl", "pytest_file_tests")

def backend(
        name,
        needs,
        runtime_pip = [],
        runtime_modules = [],
        codegen_pip = [],
        runtime_srcs = [],
        config = None,
        os = None,
        gpu_tag = None,
        targets = None,
        codegen_extra = None,
        doc = ""):
    """One backend's facts.

    Args:
      name: the module kind and folder name.
      needs: host tools (//toolchains TOOLS) any one of which makes the runtime usable; the default
        configuration enables the runtime when one is detected.
      runtime_pip: pip requirements of the runtime (the device binding), with their version
        specifiers ("pycuda>=2024.1"). They form the pip extra polykern[<name>] (with codegen_pip)
        and lines of requirements.txt; a backend with neither has no extra.
      runtime_modules: top-level Python modules of the binding; codegen must never import them.
      codegen_pip: extra pip requirements of the codegen (pure Python or tool wheels, never a driver),
        with their version specifiers.
      runtime_srcs: package-relative files that belong to the runtime besides the defaults
        runtime.py and runtime/**.
      config: the .bazelrc config that adds this runtime (--config=<config>), if any: set it only
        where that runtime works in a Bazel build (it is implemented, and its binding is in
        runtime_pip).
      os: the @platforms//os constraint the runtime needs, if any.
      gpu_tag: test tag for tests that need this backend's GPU (e.g. requires-gpu-nvidia).
      targets: the target kinds its codegen registers (default: [name]).
      codegen_extra: the name of a pip extra holding codegen_pip alone (e.g. "nvrtc"), if any.
      doc: one line for humans.
    """
    return struct(
        name = name,
        needs = needs,
        runtime_pip = runtime_pip,
        runtime_modules = runtime_modules,
        codegen_pip = codegen_pip,
        runtime_srcs = runtime_srcs,
        config = config,
        os = os,
        gpu_tag = gpu_tag,
        targets = targets or [name],
        codegen_extra = codegen_extra,
        doc = doc,
    )

BACKENDS = [
    backend("llvm", needs = ["host_cpu"], config = "llvm", doc = "CPU via LLVM; runtime = polykern ELF loader + ctypes"),
    backend("cuda", needs = ["cuda_driver"], targets = ["cuda", "nvptx"], codegen_pip = ["nvidia-cuda-nvrtc==13.0.*"], codegen_extra = "nvrtc", runtime_pip = ["pycuda>=2024.1"], runtime_modules = ["pycuda"], config = "cuda", gpu_tag = "requires-gpu-nvidia", doc = "CUDA C / NVPTX; runtime = pycuda on the NVIDIA driver"),
    backend("rocm", needs = ["rocm_hip"], gpu_tag = "requires-gpu-amd", doc = "AMDGPU code objects; runtime = HIP (not written yet: compile-only)"),
    backend("opencl", needs = ["opencl_icd"], runtime_pip = ["pyopencl>=2024.1"], runtime_modules = ["pyopencl"], config = "opencl", doc = "OpenCL C; runtime = pyopencl on any ICD (PoCL on CPU)"),
    backend("vulkan", needs = ["vulkan_icd"], runtime_pip = ["vulkan>=1.3.275"], runtime_modules = ["vulkan"], config = "vulkan", doc = "SPIR-V; runtime = vulkan (cffi) on any ICD (lavapipe on CPU)"),
    backend("metal", needs = ["metal"], runtime_modules = ["Metal", "objc"], os = "macos", doc = "MSL; runtime = pyobjc Metal on macOS (not written yet: compile-only)"),
    backend("webgpu", needs = ["vulkan_icd", "metal"], runtime_pip = ["wgpu>=0.19"], runtime_modules = ["wgpu"], config = "webgpu", doc = "WGSL; runtime = wgpu-native"),
    backend("hexagon", needs = ["qemu_hexagon"], config = "hexagon", doc = "Hexagon objects via LLVM; runtime = QEMU user-mode emulation (qemu-hexagon-static, clang, ld.lld)"),
]

BACKEND_NAMES = [b.name for b in BACKENDS]
BACKENDS_BY_NAME = {b.name: b for b in BACKENDS}

# The binding modules of every backend: no codegen may import any of them.
ALL_RUNTIME_MODULES = sorted({m: None for b in BACKENDS for m in b.runtime_modules}.keys())

def pip_name(requirement):
    """The distribution name of a pip requirement ("pycuda>=2024.1" -> "pycuda")."""
    for i in range(len(requirement)):
        if requirement[i] in "<>=!~;[ (":
            return requirement[:i]
    return requirement

def pip(requirement):
    """Label of a locked pip requirement."""
    return Label("@pypi//" + pip_name(requirement).lower().replace("-", "_").replace(".", "_"))

def runtime_detected(b):
    """Whether the host toolchain detection found what backend b's runtime needs."""
    for t in b.needs:
        if t not in TOOLS:
            fail("backend '%s' needs '%s', which is not a tool of toolchains/extensions.bzl TOOLS %s" % (b.name, t, TOOLS))
    if b.os and b.os != HOST_OS:
        return False
    for t in b.needs:
        if DETECTED_TOOLS.get(t, ""):
            return True
    return False

def _runtime_files(b):
    pkg = "polykern_" + b.name + "/"
    return [pkg + "runtime.py", pkg + "runtime/**"] + [pkg + f for f in b.runtime_srcs]

def enabled_setting(name):
    return Label("//backends:%s_runtime_enabled" % name)

def runtime_deps_select():
    """deps expression: every runtime enabled in the current configuration."""
    expr = []
    for b in BACKENDS:
        expr = expr + select({
            enabled_setting(b.name): [Label("//backends/%s:runtime" % b.name)],
            "//conditions:default": [],
        })
    return expr

def polykern_backend_settings():
    """Flags, config_settings and aggregates for //backends (backends/BUILD.bazel)."""
    bool_flag(
        name = "no_runtimes",
        build_setting_default = False,
        visibility = ["//visibility:public"],
    )
    native.config_setting(
        name = "_runtimes_allowed",
        flag_values = {":no_runtimes": "False"},
    )
    for b in BACKENDS:
        bool_flag(
            name = "runtime_" + b.name,
            build_setting_default = runtime_detected(b),
            visibility = ["//visibility:public"],
        )
        native.config_setting(
            name = "_%s_flag_on" % b.name,
            flag_values = {":runtime_" + b.name: "True"},
        )
        conds = [":_runtimes_allowed", ":_%s_flag_on" % b.name]
        if b.os:
            native.config_setting(
                name = "_%s_os" % b.name,
                constraint_values = ["@platforms//os:" + b.os],
            )
            conds.append(":_%s_os" % b.name)
        selects.config_setting_group(
            name = b.name + "_runtime_enabled",
            match_all = conds,
            visibility = ["//visibility:public"],
        )
    py_library(
        name = "all_codegen",
        deps = ["//backends/%s:codegen" % b.name for b in BACKENDS],
        visibility = ["//visibility:public"],
    )
    py_library(
        name = "enabled_runtimes",
        deps = runtime_deps_select(),
        visibility = ["//visibility:public"],
    )
    py_library(
        name = "all_runtime_code",
        deps = ["//backends/%s:runtime_code" % b.name for b in BACKENDS],
        testonly = True,
        visibility = ["//visibility:public"],
    )
    native.test_suite(
        name = "codegen_isolation_tests",
        tests = ["//backends/%s:codegen_isolation_test" % b.name for b in BACKENDS],
    )
    native.filegroup(
        name = "backends_json",
        srcs = [":backends.json"],
        visibility = ["//visibility:public"],
    )
    _backends_json(name = "backends.json_gen", out = "backends.json")

def _backends_json_impl(ctx):
    facts = {}
    for b in BACKENDS:
        facts[b.name] = {
            "codegen_pip": b.codegen_pip,
            "config": b.config or "",
            "detected": runtime_detected(b),
            "gpu_tag": b.gpu_tag or "",
            "needs": b.needs,
            "os": b.os or "",
            "runtime_modules": b.runtime_modules,
            "runtime_pip": b.runtime_pip,
            "runtime_files": _runtime_files(b),
        }
    ctx.actions.write(ctx.outputs.out, json.encode_indent(facts) + "\n")

_backends_json = rule(
    implementation = _backends_json_impl,
    attrs = {"out": attr.output(mandatory = True)},
    doc = "The backend list as JSON (for tests and tools).",
)

def polykern_backend(name = None):
    """Everything for backends/<x>/BUILD.bazel. The backend name is the folder name."""
    name = name or native.package_name().split("/")[-1]
    if name not in BACKENDS_BY_NAME:
        fail("backend '%s' is not in BACKENDS of //backends:backends.bzl; add a backend(...) line there" % name)
    b = BACKENDS_BY_NAME[name]
    pkg = "polykern_" + name
    runtime_files = _runtime_files(b)
    enabled = enabled_setting(name)
    incompatible = ["@platforms//:incompatible"]

    py_library(
        name = "codegen",
        srcs = native.glob([pkg + "/**/*.py"], exclude = runtime_files, allow_empty = True),
        # The generated .dist-info holds the backend's polykern.backends entry point: discovery
        # under Bazel is the same entry-point lookup as in a pip install (dist_info.bzl).
        data = native.glob(
            [pkg + "/**"],
            exclude = runtime_files + [pkg + "/**/*.py", pkg + "/**/__pycache__/**", pkg + "/**/*.pyc"],
            allow_empty = True,
        ) + backend_dist_info(name),
        imports = ["."],
        deps = [Label("//:polykern")] + [pip(p) for p in b.codegen_pip],
        visibility = ["//visibility:public"],
    )

    # The runtime's Python files are srcs; its other files (e.g. hexagon's C harness, compiled at
    # run time) are data.
    runtime_all = native.glob(runtime_files, exclude = [pkg + "/**/__pycache__/**", pkg + "/**/*.pyc"],
                              allow_empty = True)
    runtime_py = [f for f in runtime_all if f.endswith(".py")]
    runtime_data = [f for f in runtime_all if not f.endswith(".py")]

    py_library(
        name = "runtime",
        srcs = runtime_py,
        data = runtime_data,
        imports = ["."],
        deps = [":codegen"] + [pip(p) for p in b.runtime_pip],
        target_compatible_with = select({
            enabled: [],
            "//conditions:default": incompatible,
        }),
        visibility = ["//visibility:public"],
    )

    has_code = len(native.glob([pkg + "/__init__.py"], allow_empty = True)) > 0
    # The runtime's files without its binding: what a pip install without the extra gives. Tests
    # use it so that a missing runtime reports the binding (e.g. "pycuda could not be imported"),
    # not a missing file. testonly: the compiler links :runtime or nothing.
    py_library(
        name = "runtime_code",
        srcs = runtime_py,
        data = runtime_data,
        imports = ["."],
        deps = [":codegen"],
        testonly = True,
        visibility = ["//visibility:public"],
    )

    py_test(
        name = "codegen_isolation_test",
        srcs = [Label("//tests/bazel:codegen_isolation.py")],
        main = Label("//tests/bazel:codegen_isolation.py"),
        args = [name] + ALL_RUNTIME_MODULES,
        deps = [":codegen"],
        legacy_create_init = 0,
        size = "small",
        # A backend listed in BACKENDS whose package is not written yet shows as SKIPPED.
        target_compatible_with = [] if has_code else incompatible,
    )

    # Tests: every tests/test_*.py, with the helpers and data next to it.
    helpers = native.glob(["tests/**/*.py"], exclude = ["tests/**/test_*.py"], allow_empty = True)
    test_data = native.glob(
        ["tests/**"],
        exclude = ["tests/**/*.py", "tests/**/__pycache__/**", "tests/**/*.pyc"],
        allow_empty = True,
    )
    if helpers or test_data:
        py_library(
            name = "test_support",
            srcs = helpers,
            data = test_data,
            imports = ["tests"],
            deps = [":codegen"],
            testonly = True,
        )
    support = [":test_support"] if (helpers or test_data) else []
    files = native.glob(["tests/test_*.py"], allow_empty = True)
    runtime_when_enabled = select({enabled: [":runtime"], "//conditions:default": []})
    device_files = []
    if b.gpu_tag:
        for f in files:
            stem = f.split("/")[-1][:-len(".py")]
            if stem.endswith("_runtime") or stem.endswith("_device") or stem.endswith("_gpu"):
                device_files.append(f)
    host_files = [f for f in files if f not in device_files]
    common_deps = support + [":codegen", ":runtime_code", Label("//tests:support")]
    pytest_file_tests(
        files = host_files,
        deps = common_deps + runtime_when_enabled,
    )
    pytest_file_tests(
        files = device_files,
        deps = common_deps + [":runtime"],
        tags = [b.gpu_tag] if b.gpu_tag else [],
        exec_properties = {"test.Pool": "gpu"},
        target_compatible_with = select({enabled: [], "//conditions:default": incompatible}),
    )
