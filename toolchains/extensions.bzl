"""Host device-toolchain detection.

The `host_toolchains` module extension creates the repository `@polykern_host_toolchains` with:
- `detected.bzl`: `DETECTED_TOOLS` (tool name -> path, "" when absent), `REASONS` (tool name -> why
  it is absent), `HOST_OS`, `HOST_CPU`. //backends:backends.bzl turns these into the default value of
  every backend's runtime flag, so the default configuration enables the runtimes found here.
- `detected.json`: the same facts, for tests and humans (`bazel build @polykern_host_toolchains//:json`).
- `BUILD.bazel`: one `toolchain()` per tool found, of the types in //toolchains:BUILD.bazel.

Detection looks at files only (no device is opened): dynamic libraries in the loader's directories
(plus LD_LIBRARY_PATH and `ldconfig -p`), vendor ICD files, programs on PATH. Re-run it after
installing a driver with `bazel fetch --force --configure` or any change to the environment variables
listed in `_ENV` (e.g. `--repo_env=POLYKERN_REDETECT=1`).
"""

# Tool names; each has a toolchain_type //toolchains:<name>_type.
TOOLS = [
    "host_cpu",  # a CPU the llvm runtime runs kernels on (x86_64, aarch64; polykern's own ELF loader)
    "opencl_icd",  # OpenCL ICD loader + at least one vendor ICD
    "vulkan_icd",  # Vulkan loader + at least one ICD manifest
    "cuda_driver",  # libcuda (the NVIDIA driver API)
    "nvcc",  # CUDA compiler driver
    "nvrtc",  # libnvrtc from a system CUDA toolkit
    "ld_lld",  # LLVM linker (AMDGPU / Hexagon code objects)
    "rocm_hip",  # libamdhip64 (ROCm runtime)
    "metal",  # macOS Metal framework
    "qemu_hexagon",  # qemu-hexagon user-mode emulator (the emulated Hexagon runtime)
]

_ENV = [
    "PATH",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "ROCM_PATH",
    "OCL_ICD_VENDORS",
    "VK_ICD_FILENAMES",
    "VK_DRIVER_FILES",
    "POLYKERN_REDETECT",
]

_LIB_DIRS = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/lib/wsl/lib",
]

def _exists(rctx, p):
    return p != "" and rctx.path(p).exists

def _lib_dirs(rctx):
    dirs = []
    ld = rctx.os.environ.get("LD_LIBRARY_PATH", "")
    for d in ld.split(":"):
        if d:
            dirs.append(d)
    for var, sub in [("CUDA_HOME", "lib64"), ("CUDA_PATH", "lib64"), ("ROCM_PATH", "lib")]:
        v = rctx.os.environ.get(var, "")
        if v:
            dirs.append(v + "/" + sub)
    dirs.extend(_LIB_DIRS)
    dirs.extend(["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/opt/rocm/lib"])
    return dirs

def _ldconfig(rctx):
    """name -> path from `ldconfig -p` (empty if ldconfig is unavailable)."""
    out = {}
    for exe in ["/sbin/ldconfig", "/usr/sbin/ldconfig"]:
        if rctx.path(exe).exists:
            res = rctx.execute([exe, "-p"], quiet = True)
            if res.return_code == 0:
                for line in res.stdout.splitlines():
                    if "=>" in line:
                        name = line.strip().split(" ")[0]
                        path = line.split("=>")[-1].strip()
                        if name not in out:
                            out[name] = path
            break
    return out

def _find_lib(rctx, cache, names):
    for d in _lib_dirs(rctx):
        for n in names:
            p = d + "/" + n
            if rctx.path(p).exists:
                return p
    for n in names:
        if n in cache["ldconfig"]:
            return cache["ldconfig"][n]
    return ""

def _find_prog(rctx, names, extra_dirs = []):
    for n in names:
        p = rctx.which(n)
        if p != None:
            return str(p)
    for d in extra_dirs:
        for n in names:
            p = d + "/" + n
            if rctx.path(p).exists:
                return p
    return ""

def _list_files(rctx, dirs, suffix):
    found = []
    for d in dirs:
        p = rctx.path(d)
        if p.exists and p.is_dir:
            for f in p.readdir():
                if f.basename.endswith(suffix):
                    found.append(str(f))
    return sorted(found)

def _detect(rctx):
    cache = {"ldconfig": _ldconfig(rctx)}
    tools = {}
    reasons = {}
    details = {}
    os_name = rctx.os.name.lower()
    host_os = "macos" if "mac" in os_name else ("windows" if "windows" in os_name else "linux")
    arch = rctx.os.arch
    host_cpu = {"amd64": "x86_64", "x86_64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(arch, arch)

    # host_cpu: the llvm runtime (polykern's own ELF loader + ctypes; no MCJIT) runs kernels on the build host.
    if host_cpu in ["x86_64", "aarch64"] and host_os in ["linux", "macos"]:
        tools["host_cpu"] = host_os + "-" + host_cpu
    else:
        reasons["host_cpu"] = "the llvm CPU runtime supports x86_64/aarch64 Linux and macOS, not %s-%s" % (host_os, host_cpu)

    # OpenCL: ICD loader + vendor ICDs.
    lib = _find_lib(rctx, cache, ["libOpenCL.so.1", "libOpenCL.so"])
    vendor_dirs = [rctx.os.environ.get("OCL_ICD_VENDORS", "")] if rctx.os.environ.get("OCL_ICD_VENDORS", "") else []
    vendor_dirs += ["/etc/OpenCL/vendors"]
    icds = _list_files(rctx, vendor_dirs, ".icd")
    if lib and icds:
        tools["opencl_icd"] = lib
        details["opencl_icd"] = icds
    else:
        reasons["opencl_icd"] = "no OpenCL ICD loader (libOpenCL.so.1)" if not lib else "no vendor ICD in /etc/OpenCL/vendors (install pocl-opencl-icd or a GPU driver)"

    # Vulkan: loader + ICD manifests.
    lib = _find_lib(rctx, cache, ["libvulkan.so.1", "libvulkan.1.dylib"])
    icd_dirs = ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d"]
    icds = _list_files(rctx, icd_dirs, ".json")
    for var in ["VK_ICD_FILENAMES", "VK_DRIVER_FILES"]:
        for f in rctx.os.environ.get(var, "").split(":"):
            if f and _exists(rctx, f):
                icds.append(f)
    if lib and icds:
        tools["vulkan_icd"] = lib
        details["vulkan_icd"] = icds
    else:
        reasons["vulkan_icd"] = "no Vulkan loader (libvulkan.so.1; install libvulkan1)" if not lib else "no Vulkan ICD manifest (install mesa-vulkan-drivers or a GPU driver)"

    # CUDA driver API.
    lib = _find_lib(rctx, cache, ["libcuda.so.1", "libcuda.so"])
    if lib:
        tools["cuda_driver"] = lib
    else:
        reasons["cuda_driver"] = "libcuda.so.1 not found (no NVIDIA driver on this host)"

    # nvcc / NVRTC.
    cuda_bins = [rctx.os.environ.get(v, "") + "/bin" for v in ["CUDA_HOME", "CUDA_PATH"] if rctx.os.environ.get(v, "")]
    cuda_bins.append("/usr/local/cuda/bin")
    p = _find_prog(rctx, ["nvcc"], cuda_bins)
    if p:
        tools["nvcc"] = p
    else:
        reasons["nvcc"] = "nvcc not on PATH nor in /usr/local/cuda/bin"
    lib = _find_lib(rctx, cache, ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"])
    if lib:
        tools["nvrtc"] = lib
    else:
        reasons["nvrtc"] = "no system libnvrtc (the nvidia-cuda-nvrtc wheel may still provide one)"

    # ld.lld (any versioned name).
    names = ["ld.lld"] + ["ld.lld-%d" % v for v in range(30, 13, -1)]
    p = _find_prog(rctx, names)
    if p:
        tools["ld_lld"] = p
    else:
        reasons["ld_lld"] = "ld.lld not on PATH (install lld)"

    # ROCm HIP runtime.
    lib = _find_lib(rctx, cache, ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"])
    if lib and _exists(rctx, "/dev/kfd"):
        tools["rocm_hip"] = lib
    else:
        reasons["rocm_hip"] = "no libamdhip64 (ROCm)" if not lib else "libamdhip64 found but /dev/kfd is absent (no AMD GPU)"

    # Metal (macOS only).
    if host_os == "macos" and _exists(rctx, "/System/Library/Frameworks/Metal.framework"):
        tools["metal"] = "/System/Library/Frameworks/Metal.framework"
    else:
        reasons["metal"] = "Metal needs macOS"

    # Hexagon under QEMU user-mode emulation (the runtime also needs clang and ld.lld).
    p = _find_prog(rctx, ["qemu-hexagon-static", "qemu-hexagon"])
    if p:
        tools["qemu_hexagon"] = p
    else:
        reasons["qemu_hexagon"] = "qemu-hexagon-static not on PATH (Debian/Ubuntu package qemu-user-static)"

    return struct(
        tools = {t: tools.get(t, "") for t in TOOLS},
        reasons = {t: reasons[t] for t in TOOLS if t in reasons},
        details = details,
        host_os = host_os,
        host_cpu = host_cpu,
    )

_BUILD_HEAD = """\
# Generated by //toolchains:extensions.bzl (host device-toolchain detection). Do not edit.
load("@@{main}//toolchains:defs.bzl", "device_tool")

package(default_visibility = ["//visibility:public"])

exports_files(["detected.json", "detected.bzl"])

filegroup(name = "json", srcs = ["detected.json"])
"""

_TOOLCHAIN = """
device_tool(
    name = "{tool}_impl",
    tool = "{tool}",
    path = {path},
    details = {details},
)

toolchain(
    name = "{tool}",
    toolchain = ":{tool}_impl",
    toolchain_type = "{type}",
)
"""

def _host_toolchains_repo_impl(rctx):
    d = _detect(rctx)
    main = rctx.attr.main_repo
    build = _BUILD_HEAD.format(main = main)
    for t in TOOLS:
        if d.tools[t]:
            build += _TOOLCHAIN.format(
                tool = t,
                path = repr(d.tools[t]),
                details = repr(d.details.get(t, [])),
                type = "@@%s//toolchains:%s_type" % (main, t),
            )
    rctx.file("BUILD.bazel", build)
    rctx.file("REPO.bazel", "")
    rctx.file("detected.bzl", "\n".join([
        "# Generated by //toolchains:extensions.bzl. Do not edit.",
        "HOST_OS = %r" % d.host_os,
        "HOST_CPU = %r" % d.host_cpu,
        "DETECTED_TOOLS = %r" % d.tools,
        "REASONS = %r" % d.reasons,
        "",
    ]))
    rctx.file("detected.json", json.encode_indent(struct(
        host_os = d.host_os,
        host_cpu = d.host_cpu,
        tools = d.tools,
        reasons = d.reasons,
        details = d.details,
    )) + "\n")

host_toolchains_repo = repository_rule(
    implementation = _host_toolchains_repo_impl,
    attrs = {"main_repo": attr.string(default = "")},
    environ = _ENV,
    local = True,
    configure = True,
    doc = "Detects the host's device toolchains (see the module docstring).",
)

def _host_toolchains_ext_impl(_mctx):
    # The main repository's canonical name is "" ("@@//..."); keep it overridable for use as a dep.
    host_toolchains_repo(name = "polykern_host_toolchains", main_repo = Label("//:MODULE.bazel").workspace_name)

host_toolchains = module_extension(
    implementation = _host_toolchains_ext_impl,
    doc = "Creates @polykern_host_toolchains from the host's device toolchains.",
)
