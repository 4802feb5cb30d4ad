"""Build hooks through the registry (polykern.hooks, docs/backends.md "Hooks"): real user functions
post-process the generated CUDA C / OpenCL C / MSL / WGSL or replace the device compiler (nvcc, a
metallib producer); the artifact records every hook that ran (FunctionInfo attrs ``hook_*``)."""
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, backends, f32, hooks, i32, registry
from polykern.cli import main as cli_main
from polykern.errors import CompileError, PolykernError
from polykern.testing import tier_skip

IDENTITY_RE = re.compile(r"[\w.<>]+ sha256:[0-9a-f]{16}")
HERE = __name__  # how this module is named depends on how pytest imports it


@pk.kernel
def scale(n: i32, a: f32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * y[i]


@pytest.fixture(autouse=True)
def _no_hooks():
    """Every test registers its own hooks; none leaks into another test."""
    def clear():
        for name in registry.names(hooks.PREFIX):
            registry.remove(name)

    clear()
    yield
    clear()


def _runtime(name):
    backends.load_all()
    rec = backends.record_for_kind(name)
    if rec is None or not rec.runtime_available:
        why = rec.runtime_reason if rec else "backend not installed"
        tier_skip.skip_runtime(name, f"{name} runtime not available: {why}")


def _run_scale(mod, n=37):
    y = np.arange(n, dtype=np.float32)
    mod["scale"](n, 3.0, y, grid=(n + 15) // 16, block=16)
    np.testing.assert_array_equal(y, np.arange(n, dtype=np.float32) * 3)


# ---------------------------------------------------------------- real post-processors


def add_define(source, target):
    """A user's post-processor: a #define and a banner comment in front of the generated source."""
    return f"#define PK_USER_TUNING 4\n// post-processed for {target}\n" + source


def test_opencl_postproc_is_stored_compiled_recorded_and_runs(tmp_path):
    _runtime("opencl")
    registry.register("polykern.hook.opencl.postproc", add_define)
    mod = pk.build([scale], targets=["opencl"])
    cl = mod.on("opencl")
    assert cl.is_runnable
    assert cl.inspect_source("cl").startswith("#define PK_USER_TUNING 4\n// post-processed for opencl\n")
    assert cl.payload.decode() == cl.inspect_source("cl")  # the payload the driver compiles is the edited text
    record = cl.functions["scale"].attrs["hook_opencl_postproc"]
    assert record.startswith(f"{HERE}.add_define sha256:") and IDENTITY_RE.fullmatch(record)
    _run_scale(mod)

    path = tmp_path / "k.kbin"
    data = mod.export(path)
    loaded = pk.load(path)
    assert loaded.on("opencl").functions["scale"].attrs["hook_opencl_postproc"] == record
    _run_scale(loaded)
    assert loaded.export() == data


def test_inspect_shows_the_hook(tmp_path, capsys, monkeypatch):
    registry.register("polykern.hook.opencl.postproc", add_define)
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    pk.build([scale], targets=["opencl", "llvm"]).export(tmp_path / "k.kbin")
    assert cli_main(["inspect", "--json", str(tmp_path / "k.kbin")]) == 0
    desc = json.loads(capsys.readouterr().out)
    by_kind = {m["kind"]: m for m in desc["modules"]}
    (info,) = by_kind["opencl"]["function_info"]
    assert info["attrs"]["hook_opencl_postproc"].startswith(f"{HERE}.add_define sha256:")
    (info,) = by_kind["llvm"]["function_info"]
    assert not [k for k in info["attrs"] if k.startswith("hook_")]  # only the module the hook touched
    (root_info,) = desc["functions"]  # the kernel list carries the records of every module's hooks
    assert root_info["attrs"]["hook_opencl_postproc"] == by_kind["opencl"]["function_info"][0]["attrs"][
        "hook_opencl_postproc"]
    assert cli_main(["inspect", str(tmp_path / "k.kbin")]) == 0
    kernels = capsys.readouterr().out.split("kernels:\n", 1)[1].split("modules:")[0]
    assert f"hook_opencl_postproc={HERE}.add_define sha256:" in kernels


def test_the_edited_source_is_what_the_driver_compiles():
    """A post-processor that breaks the source makes PoCL's build fail with the hook's text: the
    runtime compiles the post-processed source, not a copy of the original."""
    _runtime("opencl")

    def poison(source, target):
        return "#error the user's post-processor ran\n" + source

    registry.register("polykern.hook.opencl.postproc", poison)
    mod = pk.build([scale], targets=["opencl"])
    with pytest.raises(CompileError, match="the user's post-processor ran"):
        _run_scale(mod)


def test_webgpu_postproc_runs_on_wgpu():
    _runtime("webgpu")

    def banner(source, target):
        return "// tuned by the user's pipeline\n" + source

    registry.register("polykern.hook.webgpu.postproc", banner)
    mod = pk.build([scale], targets=["webgpu"])
    wg = mod.on("webgpu")
    assert wg.payload["scale"].decode().startswith("// tuned by the user's pipeline\n")
    assert wg.inspect_source("wgsl").count("// tuned by the user's pipeline") == 1
    assert IDENTITY_RE.fullmatch(wg.functions["scale"].attrs["hook_webgpu_postproc"])
    _run_scale(mod)


# ---------------------------------------------------------------- identity


def _fallback_bytes(target, monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    return pk.build([scale], targets=[target]).export(metadata={"compiler": "polykern test"})


def test_a_hook_is_part_of_the_builds_identity(monkeypatch):
    plain = _fallback_bytes("opencl", monkeypatch)
    registry.register("polykern.hook.opencl.postproc", add_define)
    hooked = _fallback_bytes("opencl", monkeypatch)
    assert hooked != plain
    assert _fallback_bytes("opencl", monkeypatch) == hooked  # deterministic

    def add_define_2(source, target):  # same output, another function: another identity
        return f"#define PK_USER_TUNING 4\n// post-processed for {target}\n" + source

    registry.register("polykern.hook.opencl.postproc", add_define_2, override=True)
    other = _fallback_bytes("opencl", monkeypatch)
    assert other != hooked


def _make_flagger(flag):
    def flagger(source, target):
        return f"#define {flag}\n" + source
    return flagger


def test_identity_digests_source_closures_partials_and_declared_identity():
    a, b = _make_flagger("A"), _make_flagger("B")
    assert identity_name(a) == f"{HERE}._make_flagger.<locals>.flagger"
    assert hooks.identity(a) == hooks.identity(_make_flagger("A"))
    assert hooks.identity(a) != hooks.identity(b)  # same source, other closure value
    p1 = functools.partial(add_define, target="x")
    assert hooks.identity(p1) != hooks.identity(functools.partial(add_define, target="y"))
    assert identity_name(p1) == f"{HERE}.add_define"

    def tool(source, target):
        return source

    tool.polykern_hook_identity = "nvcc 13.0.88 -O3"
    first = hooks.identity(tool)
    tool.polykern_hook_identity = "nvcc 13.1.0 -O3"
    assert hooks.identity(tool) != first and IDENTITY_RE.fullmatch(first)


def identity_name(fn):
    return hooks.identity(fn).split(" sha256:")[0]


# ---------------------------------------------------------------- errors


def test_hook_errors_name_the_hook(monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")

    def raises(source, target):
        raise RuntimeError("clang-format is not installed")

    registry.register("polykern.hook.opencl.postproc", raises)
    with pytest.raises(CompileError, match=r"the polykern.hook.opencl.postproc hook \S*raises failed: "
                                           r"RuntimeError: clang-format is not installed"):
        pk.build([scale], targets=["opencl"])

    registry.register("polykern.hook.opencl.postproc", lambda s, t: s.encode(), override=True)
    with pytest.raises(CompileError, match="returned bytes; it must return the new source as str"):
        pk.build([scale], targets=["opencl"])

    registry.remove("polykern.hook.opencl.postproc")
    registry.register("polykern.hook.opencl.postprocess", add_define)  # a typo would never run: refused
    with pytest.raises(PolykernError, match="'polykern.hook.opencl.postprocess' is registered but is not a "
                                            "polykern hook"):
        pk.build([scale], targets=["opencl"])


# ---------------------------------------------------------------- Metal: a metallib beside the MSL


def fake_xcrun_metal(source, target):
    """Stands in for `xcrun metal -c | xcrun metallib` (no Apple toolchain here): returns bytes in the
    metallib container's shape (magic 'MTLB') that carry a digest of the MSL they were made from."""
    import hashlib

    return b"MTLB" + hashlib.sha256(source.encode()).digest()


def test_metal_compile_hook_ships_a_metallib_beside_the_msl(tmp_path):
    registry.register("polykern.hook.metal.postproc", add_define)
    registry.register("polykern.hook.metal.compile", fake_xcrun_metal)
    mod = pk.build([scale], targets=["metal"])
    mtl = mod.on("metal")
    assert mtl.fmt == "metallib"
    msl = mtl.inspect_source("metal")
    assert "#define PK_USER_TUNING 4" in msl and "kernel void scale" in msl
    shader = msl.split("// ---- scale ----\n", 1)[1]
    assert mtl.payload["scale"] == fake_xcrun_metal(shader, None)  # compiled from the post-processed MSL
    attrs = mtl.functions["scale"].attrs
    assert attrs["hook_metal_compile"].startswith(f"{HERE}.fake_xcrun_metal sha256:")
    assert attrs["hook_metal_postproc"].startswith(f"{HERE}.add_define sha256:")

    data = mod.export(tmp_path / "k.kbin")
    loaded = pk.load(tmp_path / "k.kbin").on("metal")  # no Metal runtime here: inspectable, not runnable
    assert loaded.fmt == "metallib" and loaded.payload == mtl.payload and not loaded.is_runnable
    assert loaded.inspect_source("metal") == msl
    assert pk.load(data).export() == data


def test_metal_compile_hook_must_return_a_metallib():
    registry.register("polykern.hook.metal.compile", lambda source, target: source.encode())
    with pytest.raises(CompileError, match="for kernel 'scale'; it must return a metallib"):
        pk.build([scale], targets=["metal"])


# ---------------------------------------------------------------- CUDA: the user's own nvcc


def _nvcc():
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH (the CUDA toolkit's compiler; the compile hook test runs the user's nvcc)")
    return nvcc


def users_nvcc(source, target, output):
    """A user's CUDA compile hook: their own nvcc command line (-lineinfo, their -D flag)."""
    arch = target.attrs["arch"]
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "k.cu"), os.path.join(tmp, f"k.{output}")
        with open(src, "w") as f:
            f.write(source)
        arch_flag = f"-arch=compute_{arch[3:]}" if output == "ptx" else f"-arch={arch}"
        subprocess.run([shutil.which("nvcc"), f"-{output}", arch_flag, "-lineinfo", "-DPK_FROM_USER_NVCC=1",
                        "--fmad=false", "-o", out, src], check=True, capture_output=True, text=True)
        with open(out, "rb") as f:
            return f.read()


MARKER = 'extern "C" __device__ int pk_user_marker = PK_FROM_USER_NVCC;\n'


def add_marker(source, target):
    return MARKER + source


def test_cuda_postproc_and_the_users_nvcc(monkeypatch):
    _nvcc()
    monkeypatch.setenv("POLYKERN_CUDA_COMPILER", "none")  # no built-in compiler: the hook alone compiles
    registry.register("polykern.hook.cuda.postproc", add_marker)
    registry.register("polykern.hook.cuda.compile", users_nvcc)
    mod = pk.build([scale], targets=["cuda -arch=sm_90"])  # fmt=auto: ptx, because a compile hook exists
    cu = mod.on("cuda")
    assert cu.fmt == "ptx"
    ptx = cu.payload.decode()
    assert cu.inspect_source("cuda").startswith(MARKER)
    assert "pk_user_marker" in ptx  # compiled from the post-processed source, with the user's -D flag
    assert ".loc" in ptx and ".file" in ptx  # the user's -lineinfo
    assert ".target sm_90" in ptx
    attrs = cu.functions["scale"].attrs
    assert attrs["hook_cuda_compile"].startswith(f"{HERE}.users_nvcc sha256:")
    assert attrs["hook_cuda_postproc"].startswith(f"{HERE}.add_marker sha256:")
    if shutil.which("ptxas"):
        from polykern_cuda import toolchain

        toolchain.ptxas_check(cu.payload, "sm_90")
    rec = backends.record_for_kind("cuda")
    if rec is not None and rec.runtime_available and rec.devices()["devices"]:  # a GPU host: run the user's PTX
        from polykern_cuda.conformance import device_arch

        _run_scale(pk.build([scale], targets=[f"cuda -arch={device_arch()}"]))

    cubin = pk.build([scale], targets=["cuda -arch=sm_90 -fmt=cubin"]).on("cuda")
    assert cubin.fmt == "cubin" and cubin.payload.startswith(b"\x7fELF")
    assert "pk_user_marker" in cubin.inspect_source("ptx")

    src_only = pk.build([scale], targets=["cuda -fmt=cuda"]).on("cuda")  # shipped as source: nothing compiled
    assert src_only.fmt == "cuda" and src_only.payload.decode().startswith(MARKER)
    assert "hook_cuda_compile" not in src_only.functions["scale"].attrs
    assert "hook_cuda_postproc" in src_only.functions["scale"].attrs


def test_cuda_compile_hook_output_is_checked(monkeypatch):
    monkeypatch.setenv("POLYKERN_CUDA_COMPILER", "none")
    registry.register("polykern.hook.cuda.compile", lambda source, target, output: b".version 9.0\n")
    with pytest.raises(CompileError, match=r"returned b'.version'... for cubin; a cubin is an ELF file"):
        pk.build([scale], targets=["cuda -fmt=cubin"])
    registry.register("polykern.hook.cuda.compile", lambda source, target, output: "text", override=True)
    with pytest.raises(CompileError, match="returned str for ptx; it must return the ptx as non-empty bytes"):
        pk.build([scale], targets=["cuda -fmt=ptx"])


def test_every_hook_key_is_documented():
    path = os.path.join(os.path.dirname(__file__), "..", "docs", "backends.md")
    if not os.path.exists(path):
        pytest.skip("docs/backends.md is not in this test's runfiles (Bazel); the pytest tier checks it")
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    missing = [k for k in hooks.HOOKS if f"`{k}`" not in doc]
    assert not missing, f"docs/backends.md does not list hook keys {missing}"
