"""Rules behind the runfiles proofs (the .kbin rule of //tests:cross_compile is tools/kbin.bzl).

- `runfiles_listing`: writes the runfiles of a target built in a forced configuration ("cpu": no
  runtime; "runtimes": the given runtimes forced on) to a text file, one path per line.
"""

load("//backends:backends.bzl", "BACKEND_NAMES")

_NO_RUNTIMES = str(Label("//backends:no_runtimes"))
_RUNTIME_FLAGS = {b: str(Label("//backends:runtime_" + b)) for b in BACKEND_NAMES}

def _one(x):
    return x[0] if type(x) == "list" else x

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
