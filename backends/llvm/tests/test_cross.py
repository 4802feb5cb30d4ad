"""Cross-compilation (aarch64 objects on any host), deterministic output, the fallback contract, and
the runtime refusing objects it cannot run."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, f64, i32, registry
from polykern.errors import ArtifactError, DeviceError, RuntimeNotLinkedError, TargetError
from polykern.ir.verifier import verify
from polykern.passes import run_default_passes
from polykern.target import Target
from polykern.testing.fallback_contract import check_fallback_contract, forced_fallback
from polykern_llvm.runtime.elf import EM_AARCH64, EM_X86_64, host_machine, read_elf
from polykern.testing import tier_skip

AARCH64 = "llvm -mtriple=aarch64-linux-gnu"


@pk.kernel
def saxpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@pk.kernel
def block_sum(x: Buffer[f16, "readonly"], out: Buffer[f32]):
    s = pk.shared(f32, 64)
    t = pk.local_id(0)
    s[t] = f32(x[pk.global_id(0)])
    pk.barrier()
    k = 32
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        pk.barrier()
        k //= 2
    if t == 0:
        out[pk.group_id(0)] = f32(pk.exp(f64(s[0] * 0.0))) * s[0]  # a libm call (f32 exp is inline)


def _funcs():
    return [run_default_passes(verify(k.ir)) for k in (block_sum, saxpy)]


@pytest.fixture(scope="module")
def cross():
    return pk.build([saxpy, block_sum], targets=[AARCH64])


def test_aarch64_object_header_and_assembly(cross):
    dev = cross.on("llvm")
    obj = read_elf(dev.payload)
    assert (obj.machine, obj.bits, obj.little, obj.e_type) == (EM_AARCH64, 64, True, 1)
    assert "expf" in obj.undefined or "exp" in obj.undefined or "expf" in dev.inspect_source("asm")
    asm = dev.inspect_source()  # default source of an llvm module: its assembly
    assert "saxpy__range:" in asm and "block_sum__range:" in asm
    assert "\tret" in asm and ("ldr\t" in asm or "ldp\t" in asm)  # AArch64 mnemonics
    assert "aarch64-unknown-linux-gnu" in dev.inspect_source("ll")
    info = dev.functions["saxpy"]
    assert info.attrs["entry"] == "saxpy__range" and info.attrs["triple"] == "aarch64-unknown-linux-gnu"


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-objdump") is None,
                    reason="aarch64-linux-gnu-objdump (binutils-aarch64-linux-gnu) is not installed")
def test_aarch64_disassembly_with_binutils(cross, tmp_path):
    path = tmp_path / "k.o"
    path.write_bytes(cross.on("llvm").payload)
    out = subprocess.run(["aarch64-linux-gnu-objdump", "-d", str(path)], capture_output=True, text=True, check=True)
    assert "file format elf64-littleaarch64" in out.stdout
    assert "<saxpy__range>:" in out.stdout and "<block_sum__range>:" in out.stdout
    assert "\tret" in out.stdout


@tier_skip.skipif("ld.lld", shutil.which("ld.lld") is None, reason="ld.lld is not installed")
@pytest.mark.parametrize("target", ["llvm", AARCH64])
def test_objects_link_into_shared_objects(target, tmp_path):
    """The payload is a well-formed PIC relocatable object: ld.lld links it into a shared object."""
    mod = pk.build([saxpy, block_sum], targets=[target])
    (tmp_path / "k.o").write_bytes(mod.on("llvm").payload)
    subprocess.run(["ld.lld", "-shared", "-o", str(tmp_path / "k.so"), str(tmp_path / "k.o")], check=True,
                   capture_output=True)
    assert (tmp_path / "k.so").stat().st_size > 0


def test_runtime_refuses_foreign_architecture(cross, tmp_path):
    machine = host_machine()[0]
    if machine == EM_AARCH64:
        pytest.skip("this host is aarch64: the cross object is native here")
    path = tmp_path / "cross.kbin"
    cross.export(str(path))
    loaded = pk.load(str(path))
    dev = loaded.on("llvm")
    assert dev.is_runnable is False
    assert "saxpy__range:" in dev.inspect_source()  # inspectable without running
    with pytest.raises(DeviceError, match="aarch64"):
        dev["saxpy"]
    with pytest.raises(RuntimeNotLinkedError, match="aarch64"):
        loaded["saxpy"](1, 1.0, np.zeros(1, np.float32), np.zeros(1, np.float32), grid=1, block=1)
    assert loaded.on("llvm").save_to_bytes() == cross.on("llvm").save_to_bytes()


def test_host_object_is_native_and_runs():
    mod = pk.build([saxpy], targets=["llvm"])
    obj = read_elf(mod.on("llvm").payload)
    assert obj.machine == host_machine()[0]
    if obj.machine == EM_X86_64:
        assert set(obj.undefined) <= {"memset", "memcpy", "expf", "exp"}  # f16 helpers are in the object
    y = np.ones(10, np.float32)
    mod["saxpy"](10, 3.0, np.arange(10, dtype=np.float32), y, grid=1, block=16)
    np.testing.assert_array_equal(y, 3 * np.arange(10) + 1)


def test_corrupt_object_is_an_artifact_error():
    from polykern_llvm.runtime import LLVMModule

    good = pk.build([saxpy], targets=["llvm"]).on("llvm")
    with pytest.raises(ArtifactError, match="ELF"):
        LLVMModule(b"\x7fELF" + b"\x02\x01" + b"\xff" * 10, "o", good.functions)
    truncated = good.payload[:200]
    with pytest.raises(ArtifactError):
        LLVMModule(truncated, "o", good.functions)


def test_unresolvable_symbol_is_refused_not_fatal():
    """An object needing a symbol this process lacks would abort() inside the JIT linker;
    the runtime detects it first."""
    from polykern.codegen.llvm_target import compile_ir, host_triple
    from polykern_llvm.runtime import LLVMModule

    ir = textwrap.dedent("""
        declare void @polykern_no_such_symbol()
        define void @saxpy__range(ptr %a, ptr %l, i64 %b, i64 %e) {
          call void @polykern_no_such_symbol()
          ret void
        }""")
    obj = compile_ir(ir, host_triple()).obj
    good = pk.build([saxpy], targets=["llvm"]).on("llvm")
    m = LLVMModule(obj, "o", good.functions)
    assert not m.is_runnable
    with pytest.raises(DeviceError, match="polykern_no_such_symbol"):
        m["saxpy"]


def test_missing_cpu_features_are_refused():
    import llvmlite.binding as llvm

    from polykern.codegen.llvm_target import ensure_initialized

    ensure_initialized()
    host = llvm.get_host_cpu_features()
    lacking = [f for f in ("avx512fp16", "amx-tile", "avx512vp2intersect", "avx512f", "avx2") if host.get(f) is False]
    if host_machine()[0] != EM_X86_64 or not lacking:
        pytest.skip("needs an x86-64 host that lacks one of the probed features")
    mod = pk.build([saxpy], targets=[f"llvm -mattr=+{lacking[0]}"])
    dev = mod.on("llvm")
    assert not dev.is_runnable
    with pytest.raises(DeviceError, match=lacking[0]):
        dev["saxpy"]


def test_output_is_deterministic_and_path_free(tmp_path):
    a = pk.build([saxpy, block_sum], targets=["llvm", AARCH64])
    b = pk.build([saxpy, block_sum], targets=["llvm", AARCH64])
    assert a.export() == b.export()
    for dev in a.imports:
        for needle in (b"/work", b"/tmp", b"/home", b"/root", os.getcwd().encode(), b"<string>"):
            assert needle not in dev.payload
    # A fresh interpreter in another directory produces the same bytes.
    code = ("import sys, polykern as pk; sys.path.insert(0, %r); import test_cross as t; "
            "sys.stdout.buffer.write(pk.build([t.saxpy, t.block_sum], targets=['llvm', %r]).export())"
            % (os.path.dirname(__file__), AARCH64))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, check=True).stdout
    assert out == a.export()


def test_target_attributes():
    assert str(Target("llvm -mtriple=aarch64-linux-gnu -opt=2")) == "llvm -mtriple=aarch64-linux-gnu -opt=2"
    with pytest.raises(TargetError, match="opt"):
        Target("llvm -opt=7")
    with pytest.raises(TargetError, match="ELF"):
        pk.build([saxpy], targets=["llvm -mtriple=x86_64-apple-darwin"])
    with pytest.raises(TargetError, match="no target"):
        pk.build([saxpy], targets=["llvm -mtriple=nonsense-unknown-linux-gnu"])
    o0 = pk.build([saxpy], targets=["llvm -opt=0"]).on("llvm")
    y = np.zeros(3, np.float32)
    o0["saxpy"](3, 2.0, np.ones(3, np.float32), y, grid=1, block=4)
    assert (y == 2).all()


def test_fallback_contract():
    build = registry.get("target.build.llvm")
    check_fallback_contract("llvm", lambda: build(_funcs(), Target("llvm")))
    with forced_fallback():
        fb = build(_funcs(), Target("llvm"))
    assert type(fb).__name__ == "LLVMFallbackModule" and "saxpy__range:" in fb.inspect_source()


def test_cli_inspect_shows_cross_assembly(cross, tmp_path):
    path = tmp_path / "cross.kbin"
    cross.export(str(path))
    out = subprocess.run([sys.executable, "-m", "polykern", "inspect", "--source", "asm", str(path)],
                         capture_output=True, text=True, check=True).stdout
    assert "saxpy__range:" in out and "\tret" in out
    summary = subprocess.run([sys.executable, "-m", "polykern", "inspect", str(path)],
                             capture_output=True, text=True, check=True).stdout
    assert "AArch64" in summary and "llvm -mtriple=aarch64-linux-gnu" in summary
