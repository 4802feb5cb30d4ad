"""The nvptx target (LLVM NVPTX): every conformance and corpus kernel becomes PTX that ptxas
assembles; the module is a cuda module with fmt "ptx"; the lowering uses the NVPTX conventions;
output is deterministic and the fallback contract holds."""
from __future__ import annotations

import copy
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import polykern as pk
from polykern import Buffer, bool_, f16, f32, f64, i8, i32, i64, registry
from polykern.testing.c_corpus import NAMES, corpus
from polykern.passes import run_default_passes
from polykern.passes.legalize_target import legalize_for_target
from polykern.target import Target
from polykern.testing.fallback_contract import check_fallback_contract
from polykern_cuda import nvptx

try:
    from conformance import ALL_CASES
except ImportError:  # plain pytest: the suite lives in the repository's tests/
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests"))
    from conformance import ALL_CASES

PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")


def build(funcs, target="nvptx"):
    return registry.get("target.build.nvptx")(funcs, Target(target))


def ir_of(*kernels):
    """What pk.build hands a backend: verified, simplified, legalized IR (a fresh copy)."""
    return [legalize_for_target(run_default_passes(copy.deepcopy(k.ir)), "nvptx") for k in kernels]


def ptx_of(kernels, target="nvptx") -> str:
    (dev,) = pk.build(kernels, targets=[target]).imports
    return dev.inspect_source("ptx")


def ptxas(ptx: str, arch: str, tmp_path) -> None:
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    r = subprocess.run([PTXAS, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, f"ptxas -arch={arch} rejected the PTX:\n{r.stderr}"


@needs_ptxas
@pytest.mark.parametrize("case", ALL_CASES, ids=[c.name for c in ALL_CASES])
def test_conformance_kernels_assemble(case, tmp_path):
    ptxas(ptx_of(case.kernels), "sm_90", tmp_path)


@needs_ptxas
@pytest.mark.parametrize("name", NAMES)
def test_corpus_kernels_assemble(name, tmp_path):
    """The corpus' corner cases: special float constants, extreme integers, 8/16-bit and f16 atomics,
    names that clash with C or PTX words, Unicode variable names."""
    ptxas(build([corpus()[name]]).payload.decode("utf-8"), "sm_90", tmp_path)


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120"])
def test_architectures(arch, tmp_path):
    kernels = [c for c in ALL_CASES if c.name in ("math_f32", "example_reduction", "casts")]
    ptx = ptx_of([k for c in kernels for k in c.kernels], f"nvptx -arch={arch}")
    assert f".target {arch}" in ptx
    version = int(nvptx.ptx_feature(arch)[4:])
    assert f".version {version // 10}.{version % 10}\n" in ptx
    ptxas(ptx, arch, tmp_path)


def test_ptx_versions_within_ptxas_13():
    """Every arch gets the lowest PTX ISA LLVM accepts for it (never below 7.8, never above 9.0)."""
    from polykern_cuda.codegen import ARCHS

    for arch in ARCHS:
        v = int(nvptx.ptx_feature(arch)[4:])
        assert 78 <= v <= 90, (arch, v)


@pk.kernel
def corner(n: i32, flag: bool_, x: Buffer[f32, "readonly"], h: Buffer[f16], c: Buffer[i8], acc: Buffer[f64],
           cnt: Buffer[i64], out: Buffer[f32]):
    s = pk.shared(i32, 64)
    t = pk.local_id(0)
    s[t] = 0
    pk.barrier()
    pk.atomic_add(s, t % 4, 1)
    pk.barrier()
    i = pk.global_id(0)
    if i >= n:
        return
    if flag:
        pk.atomic_add(acc, 0, f64(x[i]))
        pk.atomic_add(cnt, 0, i64(1))
        pk.atomic_add(out, 0, x[i])
        pk.atomic_cas(out, 1, 0.0, x[i])
    h[i] = pk.exp(h[i]) + pk.sin(h[i])
    c[i] = c[i] // i8(3)
    out[3] = f32(s[t % 4]) + f32(pk.num_groups(2)) + x[i] % x[0]


def test_lowering_conventions():
    dev = build(ir_of(corner))
    ll_text, ptx = dev.sources["llvm"], dev.sources["ptx"]
    assert "define ptx_kernel void @corner(" in ll_text
    assert ".visible .entry corner(" in ptx
    assert re.search(r"\.param \.u64 \.ptr \.global .* corner_param_2", ptx)  # buffers are global pointers
    assert ".shared .align 16 .b8 corner_$_s[256]" in ptx  # 64 x i32 of workgroup memory
    assert ptx.count("bar.sync \t0;") == 2
    for reg in ("%tid.x", "%ctaid.x", "%ntid.x", "%nctaid.z"):
        assert reg in ptx
    assert 'syncscope("block") monotonic' in ll_text and 'syncscope("device") monotonic' in ll_text
    assert "atom.shared.add.u32" in ptx  # shared-memory atomic
    assert "atom.global.add.f32" in ptx and "atom.global.add.f64" in ptx and "atom.global.add.u64" in ptx
    assert re.search(r"atom\.relaxed\.gpu\.global\.cas\.b32", ptx)
    assert "cvt.rzi.f32.f32" not in ptx  # float % is the exact fmod loop, not LLVM's x - trunc(x/y)*y
    # No library calls can exist in PTX: transcendental math is expanded inline.
    assert ".extern" not in ptx and "call." not in ptx


def test_module_shape():
    dev = build(ir_of(corner))
    assert dev.kind == "cuda" and dev.fmt == "ptx"
    assert set(dev.sources) == {"ptx", "llvm"}
    assert dev.payload == dev.sources["ptx"].encode("utf-8")
    info = dev.functions["corner"]
    assert info.attrs["entry"] == "corner" and info.attrs["arch"] == "sm_90"
    assert info.attrs["uses_barrier"] == "1" and info.attrs["uses_atomics"] == "1"
    assert info.shared_bytes == 256
    assert dev.inspect_source() == dev.sources["ptx"]  # what `polykern inspect` shows by default


def test_deterministic_and_fallback_contract():
    report = check_fallback_contract("cuda", lambda: build(ir_of(corner)))
    assert report["source_formats"] == ["llvm", "ptx"]
    a = pk.build([corner], targets=["nvptx -arch=sm_80"]).export()
    b = pk.build([corner], targets=["nvptx -arch=sm_80"]).export()
    assert a == b


def test_root_module_maps_nvptx_to_cuda():
    root = pk.build([corner], targets=["nvptx"])
    assert root.on("nvptx") is root.on("cuda")
    assert root.targets == ["nvptx"]


@pk.kernel
def sαxpy(n: i32, x: Buffer[f32]):
    β = pk.shared(f32, 32)
    β[pk.local_id(0)] = x[pk.global_id(0)]
    pk.barrier()
    x[pk.global_id(0)] = β[31 - pk.local_id(0)]


@pk.kernel
def su03b1xpy(n: i32, x: Buffer[f32]):  # what sαxpy's name becomes in ASCII
    x[pk.global_id(0)] = 2.0


@pk.kernel
def WARP_SZ(x: Buffer[f32]):  # a PTX predefined identifier
    x[0] = 1.0


@pk.kernel
def _(x: Buffer[f32]):  # not a PTX identifier on its own
    x[0] = 1.0


def test_entry_names_are_ptx_identifiers(tmp_path):
    """Python allows kernel names PTX does not (LLVM would abort on them): entries are ASCII,
    unique and recorded in FunctionInfo.attrs["entry"]."""
    dev = build(ir_of(sαxpy, su03b1xpy, WARP_SZ, _))
    entries = {k: v.attrs["entry"] for k, v in dev.functions.items()}
    assert entries == {"sαxpy": "su03b1xpy", "su03b1xpy": "su03b1xpy_", "WARP_SZ": "k_WARP_SZ", "_": "k__"}
    for e in entries.values():
        assert f".visible .entry {e}(" in dev.sources["ptx"]
    assert dev.sources["ptx"].isascii()
    if PTXAS:
        ptxas(dev.sources["ptx"], "sm_90", tmp_path)


@pk.kernel
def register_tile(N: pk.constexpr, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    acc = pk.local(f32, N)
    for i in range(N):          # more than MAX_TRIPS iterations, indexing a register array
        acc[i] = x[i]
    for r in range(4):
        for i in range(N):
            acc[i] = acc[i] * 2.0 + 1.0
    s = 0.0
    for i in range(N):
        s += acc[i]
    y[pk.global_id(0)] = s


def test_a_register_array_indexed_by_a_long_constexpr_loop_stays_in_registers():
    """A 128-entry ``pk.local`` accumulator initialized in a loop of 128 stayed in local memory (512 bytes
    of stack, ld.local/st.local in every multiply-add: an SGEMM 40x slower on an H200): loops whose variable
    indexes a register array unroll up to passes/unroll.py's REGISTER_TRIPS."""
    k = register_tile.specialize(N=128)
    ptx = pk.build([k], targets=["nvptx -arch=sm_90"]).inspect_source("ptx")
    assert "ld.local" not in ptx and "st.local" not in ptx and "__local_depot" not in ptx
