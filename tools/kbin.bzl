"""Build polykern artifacts (.kbin) with Bazel, in a chosen configuration, and test them in another.

- `polykern_kbin`: compiles kernels into a .kbin with //:compiler built in the configuration named by
  `config` (a configuration transition on the rule itself, so the result does not depend on the
  configuration of whoever asks for it):
    "cpu"     the CPU-only cross-compiler (--//backends:no_runtimes=true, i.e. --config=cpu): every
              codegen, no runtime, every device module built by its fallback;
    a device  (llvm, opencl, vulkan, webgpu, cuda) that device's runtime linked into the compiler,
              so its device module is built by the real `module.create.<kind>`.
  Outputs <name>.kbin, <name>.compile.txt (the compiler's own report of which modules were built by
  a real runtime and which by a fallback) and <name>.backends.json (`polykern backends --json` of the
  same compiler on the same machine: which runtimes it had there, and why not). One action, mnemonic
  PolykernCompile (remote execution runs it on the CPU pool).
- `device_config_test`: runs an executable (a py_binary) built in a device configuration, with the
  artifacts of two `polykern_kbin` targets in its runfiles and their paths in the environment
  (POLYKERN_CROSS_KBIN / _REPORT / _STATUS: the cpu-built one; POLYKERN_NATIVE_KBIN / _REPORT /
  _STATUS: the one built in the device configuration; POLYKERN_TEST_CONFIG: the device).
- `cross_compile_tests`: the whole matrix behind //tests:cross_compile.

Device configurations set every runtime flag explicitly, so each is the same whatever the command
line says: the device's own runtime on, every other off. CUDA is the exception: pycuda builds only
against a CUDA toolkit and an NVIDIA driver, so the cuda configuration keeps the incoming value of
--//backends:runtime_cuda (on where the host detection found libcuda, or with --config=cuda); where
it is off the CUDA test still runs everything device-free and skips the launch with the reason.
"""

load("@rules_python//python:defs.bzl", "py_binary")
load("//backends:backends.bzl", "BACKEND_NAMES", "BACKENDS_BY_NAME", "runtime_deps_select")

_NO_RUNTIMES = str(Label("//backends:no_runtimes"))
_RUNTIME_FLAGS = {b: str(Label("//backends:runtime_" + b)) for b in BACKEND_NAMES}

# Device configurations: "on" forces the device's runtime into the build (its binding installs from a
# wheel on any host; the test then finds a device or says why not), "inherit" keeps the incoming value.
DEVICE_CONFIGS = {
    "llvm": "on",
    "opencl": "on",
    "vulkan": "on",
    "webgpu": "on",
    "cuda": "inherit",
}

CONFIGS = ["cpu"] + sorted(DEVICE_CONFIGS.keys())

def _config_settings(config, settings):
    if config not in CONFIGS:
        fail("unknown polykern configuration '%s' (known: %s)" % (config, ", ".join(CONFIGS)))
    out = {_NO_RUNTIMES: config == "cpu"}
    for b in BACKEND_NAMES:
        out[_RUNTIME_FLAGS[b]] = False
    if config != "cpu":
        flag = _RUNTIME_FLAGS[config]
        out[flag] = True if DEVICE_CONFIGS[config] == "on" else settings[flag]
    return out

_TRANSITION_INPUTS = [_RUNTIME_FLAGS[b] for b in BACKEND_NAMES]
_TRANSITION_OUTPUTS = [_NO_RUNTIMES] + [_RUNTIME_FLAGS[b] for b in BACKEND_NAMES]

def _by_attr_config_impl(settings, attr):
    return _config_settings(attr.config, settings)

_by_attr_config = transition(
    implementation = _by_attr_config_impl,
    inputs = _TRANSITION_INPUTS,
    outputs = _TRANSITION_OUTPUTS,
)

PolykernKbinInfo = provider(
    doc = "A .kbin built by polykern_kbin.",
    fields = {
        "kbin": "File: the artifact",
        "report": "File: the compiler's stdout (which modules are real, which are fallbacks)",
        "status": "File: `polykern backends --json` of the compiler, run by the same action",
        "config": "the configuration its compiler was built in (cpu or a device)",
        "targets": "the target strings",
    },
)

def _polykern_kbin_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".kbin")
    report = ctx.actions.declare_file(ctx.label.name + ".compile.txt")
    status = ctx.actions.declare_file(ctx.label.name + ".backends.json")
    compiler = ctx.attr._compiler[DefaultInfo].files_to_run
    args = ctx.actions.args()
    args.add(compiler.executable)
    args.add(report)
    args.add(status)
    args.add("compile", ctx.file.src)
    for t in ctx.attr.targets:
        args.add("--target", t)
    for k in ctx.attr.kernels:
        args.add("--kernel", k)
    args.add("-o", out)
    ctx.actions.run_shell(
        command = "\n".join([
            "set -e",
            'exe="$1"; report="$2"; status="$3"; shift 3',
            "export POLYKERN_BACKEND_AUTOLOAD=1",
            '"$exe" "$@" >"$report"',
            '"$exe" backends --json >"$status"',
        ]),
        arguments = [args],
        inputs = [ctx.file.src],
        tools = [compiler],
        outputs = [out, report, status],
        use_default_shell_env = True,
        mnemonic = "PolykernCompile",
        progress_message = "Compiling kernels of %%{label} (%s compiler) for %s" % (
            "CPU-only" if ctx.attr.config == "cpu" else ctx.attr.config + "-runtime",
            ", ".join(ctx.attr.targets),
        ),
    )
    return [
        DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out, report, status])),
        OutputGroupInfo(report = depset([report, status])),
        PolykernKbinInfo(
            kbin = out,
            report = report,
            status = status,
            config = ctx.attr.config,
            targets = ctx.attr.targets,
        ),
    ]

polykern_kbin = rule(
    implementation = _polykern_kbin_impl,
    cfg = _by_attr_config,
    attrs = {
        "src": attr.label(allow_single_file = [".py"], mandatory = True, doc = "the kernels' Python file"),
        "targets": attr.string_list(mandatory = True, doc = "target strings, e.g. 'cuda -arch=sm_90'"),
        "kernels": attr.string_list(doc = "kernel names to compile (default: every kernel in src)"),
        "config": attr.string(
            default = "cpu",
            values = CONFIGS,
            doc = "the configuration //:compiler is built in: 'cpu' (CPU-only) or a device",
        ),
        "_compiler": attr.label(default = "//:compiler", executable = True, cfg = "target"),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    doc = "A .kbin compiled by polykern's compiler built in configuration `config` (default: CPU-only).",
)

def _device_config_test_impl(ctx):
    inner = ctx.attr.binary[0][DefaultInfo]
    exe = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = exe, target_file = inner.files_to_run.executable, is_executable = True)
    cross = ctx.attr.cross[PolykernKbinInfo]
    native = ctx.attr.native[PolykernKbinInfo]
    if cross.config != "cpu":
        fail("%s: `cross` must be a polykern_kbin built in the cpu configuration" % ctx.label)
    runfiles = ctx.runfiles(files = [
        exe,
        cross.kbin,
        cross.report,
        cross.status,
        native.kbin,
        native.report,
        native.status,
    ])
    runfiles = runfiles.merge(inner.default_runfiles)
    env = {
        "POLYKERN_TEST_CONFIG": ctx.attr.config,
        "POLYKERN_CROSS_KBIN": cross.kbin.short_path,
        "POLYKERN_CROSS_REPORT": cross.report.short_path,
        "POLYKERN_CROSS_STATUS": cross.status.short_path,
        "POLYKERN_NATIVE_KBIN": native.kbin.short_path,
        "POLYKERN_NATIVE_REPORT": native.report.short_path,
        "POLYKERN_NATIVE_STATUS": native.status.short_path,
        "POLYKERN_NATIVE_CONFIG": native.config,
        # The target strings both artifacts were built for, one a line (the test's list of kinds).
        "POLYKERN_CROSS_TARGETS": "\n".join(cross.targets),
    }
    return [
        DefaultInfo(executable = exe, runfiles = runfiles),
        RunEnvironmentInfo(environment = env),
    ]

device_config_test = rule(
    implementation = _device_config_test_impl,
    test = True,
    attrs = {
        "binary": attr.label(
            mandatory = True,
            executable = True,
            cfg = _by_attr_config,
            doc = "the test program (py_binary), built in configuration `config`",
        ),
        "config": attr.string(mandatory = True, values = CONFIGS),
        "cross": attr.label(mandatory = True, providers = [PolykernKbinInfo]),
        "native": attr.label(mandatory = True, providers = [PolykernKbinInfo]),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    doc = "Runs `binary` (built in configuration `config`) against a cpu-built and a `config`-built .kbin.",
)

def cross_compile_tests(name, src, targets, main, configs = CONFIGS, deps = [], data = [], size = "medium",
                        extra_tests = []):
    """The cross-compile matrix: one artifact from the CPU-only compiler, tested in every configuration.

    Declares <name>_kbin_cpu (the CPU-only build); per configuration c: <name>_kbin_<c> (built by the
    compiler with c's runtime), <name>_<c>_bin (the test program built in c) and the test
    <name>_<c>; and the test_suite <name> of them all. A configuration whose backend has a gpu_tag
    (backends.bzl; cuda: requires-gpu-nvidia) makes a GPU test: tagged, and routed to the GPU pool
    by exec_properties {"test.Pool": "gpu"} (its compile actions stay on the CPU pool).
    `extra_tests` join the suite (e.g. //tests:cross_compile_emulated, the emulated aarch64/Hexagon cells).
    """
    cross = name + "_kbin_cpu"
    polykern_kbin(name = cross, src = src, targets = targets, config = "cpu")
    tests = []
    for c in configs:
        built = cross if c == "cpu" else "%s_kbin_%s" % (name, c)
        if c != "cpu":
            polykern_kbin(name = built, src = src, targets = targets, config = c)
        py_binary(
            name = "%s_%s_bin" % (name, c),
            srcs = [main],
            main = main,
            testonly = True,
            legacy_create_init = 0,
            # The configuration's runtime (select), plus, in a device configuration, that runtime's
            # files without its binding (//backends/<x>:runtime_code), so that where the binding is
            # absent the backend names it ("pycuda could not be imported") instead of a missing file.
            deps = deps + runtime_deps_select() + (
                [] if c == "cpu" else ["//backends/%s:runtime_code" % c]
            ),
            data = data,
            tags = ["manual"],
        )
        gpu_tag = BACKENDS_BY_NAME[c].gpu_tag if c in BACKENDS_BY_NAME else None
        device_config_test(
            name = "%s_%s" % (name, c),
            binary = ":%s_%s_bin" % (name, c),
            config = c,
            cross = ":" + cross,
            native = ":" + built,
            size = size,
            tags = [gpu_tag] if gpu_tag else [],
            exec_properties = {"test.Pool": "gpu"} if gpu_tag else None,
        )
        tests.append(":%s_%s" % (name, c))
    native.test_suite(name = name, tests = tests + extra_tests)
