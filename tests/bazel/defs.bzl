"""Rules behind //tests:cross_compile and the runfiles proofs.

- `kbin`: compiles kernels into a .kbin with //:compiler built in the CPU-only configuration
  (--//backends:no_runtimes=true, i.e. --config=cpu), whatever configuration the build is in.
- `runfiles_listing`: writes the runfiles of a target built in a forced configuration ("cpu": no
  runtime; "runtimes": the given runtimes forced on) to a text file, one path per line.
"""

load("//backends:backends.bzl", "BACKEND_NAMES")

_NO_RUNTIMES = str(Label("//backends:no_runtimes"))
_RUNTIME_FLAGS = {b: str(Label("//backends:runtime_" + b)) for b in BACKEND_NAMES}

def _cpu_transition_impl(_settings, _attr):
    return {_NO_RUNTIMES: True}

cpu_transition = transition(
    implementation = _cpu_transition_impl,
    inputs = [],
    outputs = [_NO_RUNTIMES],
)

def _one(x):
    return x[0] if type(x) == "list" else x

def _kbin_impl(ctx):
    out = ctx.actions.declare_file(ctx.attr.out or (ctx.label.name + ".kbin"))
    compiler = _one(ctx.attr.compiler)
    args = ctx.actions.args()
    args.add("compile", ctx.file.src)
    for t in ctx.attr.targets:
        args.add("--target", t)
    for k in ctx.attr.kernels:
        args.add("--kernel", k)
    args.add("-o", out)
    ctx.actions.run(
        executable = compiler[DefaultInfo].files_to_run,
        arguments = [args],
        inputs = [ctx.file.src],
        outputs = [out],
        mnemonic = "PolykernCompile",
        progress_message = "Compiling kernels of %{label} (CPU-only compiler) for " + ", ".join(ctx.attr.targets),
        env = {"POLYKERN_BACKEND_AUTOLOAD": "1"},
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

kbin = rule(
    implementation = _kbin_impl,
    attrs = {
        "src": attr.label(allow_single_file = [".py"], mandatory = True),
        "targets": attr.string_list(mandatory = True),
        "kernels": attr.string_list(),
        "out": attr.string(),
        "compiler": attr.label(
            default = "//:compiler",
            executable = True,
            cfg = cpu_transition,
        ),
    },
    doc = "A .kbin built by the CPU-only compiler (the cross-compile half of //tests:cross_compile).",
)

def _listing_transition_impl(settings, attr):
    if attr.mode == "cpu":
        out = {_NO_RUNTIMES: True}
        for b in BACKEND_NAMES:
            out[_RUNTIME_FLAGS[b]] = settings[_RUNTIME_FLAGS[b]]
        return out
    out = {_NO_RUNTIMES: False}
    for b in BACKEND_NAMES:
        out[_RUNTIME_FLAGS[b]] = b in attr.runtimes
    return out

_listing_transition = transition(
    implementation = _listing_transition_impl,
    inputs = [_RUNTIME_FLAGS[b] for b in BACKEND_NAMES],
    outputs = [_NO_RUNTIMES] + [_RUNTIME_FLAGS[b] for b in BACKEND_NAMES],
)

def _runfiles_listing_impl(ctx):
    target = _one(ctx.attr.target)
    info = target[DefaultInfo]
    paths = {}
    for f in info.default_runfiles.files.to_list():
        paths[f.short_path] = True
    for f in info.files.to_list():
        paths[f.short_path] = True
    out = ctx.actions.declare_file(ctx.label.name + ".txt")
    ctx.actions.write(out, "\n".join(sorted(paths.keys())) + "\n")
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

runfiles_listing = rule(
    implementation = _runfiles_listing_impl,
    attrs = {
        "target": attr.label(mandatory = True, cfg = _listing_transition),
        "mode": attr.string(values = ["cpu", "runtimes"], mandatory = True),
        "runtimes": attr.string_list(),
    },
    doc = "Lists the runfiles of `target` built with no runtime (cpu) or with `runtimes` forced on.",
)
