"""Rules for host device toolchains (see extensions.bzl for detection)."""

load(":extensions.bzl", "TOOLS")

DeviceToolInfo = provider(
    doc = "A device tool or runtime library found on the host.",
    fields = {
        "tool": "tool name, one of extensions.bzl TOOLS",
        "path": "absolute path of the library or program",
        "details": "list of strings: e.g. the ICD files found",
    },
)

def _device_tool_impl(ctx):
    info = DeviceToolInfo(tool = ctx.attr.tool, path = ctx.attr.path, details = ctx.attr.details)
    return [platform_common.ToolchainInfo(device = info), info]

device_tool = rule(
    implementation = _device_tool_impl,
    attrs = {
        "tool": attr.string(mandatory = True),
        "path": attr.string(mandatory = True),
        "details": attr.string_list(),
    },
    doc = "Wraps a detected host tool as a toolchain implementation.",
)

def _resolved_tools_impl(ctx):
    """Writes which device toolchains resolve for the target platform, as JSON."""
    out = ctx.actions.declare_file(ctx.label.name + ".json")
    found = {}
    for t in TOOLS:
        tc = ctx.toolchains[Label("//toolchains:%s_type" % t)]
        found[t] = tc.device.path if tc != None else ""
    ctx.actions.write(out, json.encode_indent(found) + "\n")
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

resolved_tools = rule(
    implementation = _resolved_tools_impl,
    toolchains = [
        config_common.toolchain_type(Label("//toolchains:%s_type" % t), mandatory = False)
        for t in TOOLS
    ],
    doc = "Writes <name>.json: tool -> path of the resolved toolchain ('' where none resolves).",
)
