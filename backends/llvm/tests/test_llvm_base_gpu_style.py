"""The shared emitter (polykern.codegen.llvm_emitter) in its GPU style, as the NVPTX, AMDGPU and
Hexagon backends use it: minimal subclasses fill the hooks (address spaces, calling convention,
special registers, barrier) and LLVM compiles the result. PTX is validated by ptxas where it
is installed. These subclasses are examples, not the real GPU backends."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from llvmlite import ir as ll

import polykern as pk
from polykern import Buffer, f16, f32, i32
from polykern.codegen.llvm_emitter import LLVMKernelEmitter
from polykern.codegen.llvm_types import I32, VOID
from polykern.codegen.llvm_target import compile_ir, data_layout, target_machine
from polykern.ir.verifier import verify
from polykern.passes import run_default_passes


@pk.kernel
def gpu_kernel(n: i32, x: Buffer[f32, "readonly"], h: Buffer[f16], out: Buffer[f32]):
    s = pk.shared(f32, 64)
    p = pk.local(f32, 4)
    t = pk.local_id(0)
    i = pk.global_id(0)
    if pk.group_id(0) * pk.local_size(0) >= n:  # uniform: a whole workgroup returns before the barrier
        return
    p[t % 4] = x[i]
    s[t] = p[t % 4] * f32(h[i])
    pk.barrier()
    k = 0
    while k < 4:
        k += 1
        if k == 3:
            break
    if t == 0 and s[0] > 0.0:
        pk.atomic_add(out, 0, s[0] + s[1] + f32(k))
    h[i] = f16(pk.sqrt(pk.abs(x[i])))


class NVPTXStyle(LLVMKernelEmitter):
    GLOBAL_AS, SHARED_AS = 1, 3
    _REG = {"local_id": "tid", "group_id": "ctaid", "local_size": "ntid", "num_groups": "nctaid"}

    def declare_kernel(self, fn):
        f = super().declare_kernel(fn)
        f.calling_convention = "ptx_kernel"
        return f

    def read_special_reg(self, kind, dim):
        return self.call_intrinsic(f"llvm.nvvm.read.ptx.sreg.{self._REG[kind]}.{'xyz'[dim]}", I32, [])

    def emit_barrier(self):
        self.call_intrinsic("llvm.nvvm.barrier0", VOID, [])


class AMDGPUStyle(LLVMKernelEmitter):
    GLOBAL_AS, SHARED_AS, PRIVATE_AS = 1, 3, 5

    def declare_kernel(self, fn):
        f = super().declare_kernel(fn)
        f.calling_convention = "amdgpu_kernel"
        return f

    def read_special_reg(self, kind, dim):
        if kind == "local_id":
            return self.call_intrinsic(f"llvm.amdgcn.workitem.id.{'xyz'[dim]}", I32, [])
        if kind == "group_id":
            return self.call_intrinsic(f"llvm.amdgcn.workgroup.id.{'xyz'[dim]}", I32, [])
        return ll.Constant(I32, 64)  # a real backend reads the dispatch packet

    def emit_barrier(self):
        self.call_intrinsic("llvm.amdgcn.s.barrier", VOID, [])


def _emit(cls, triple, cpu, features=""):
    fn = run_default_passes(verify(gpu_kernel.ir))
    tm = target_machine(triple, cpu, features, 3)
    em = cls(triple, data_layout(tm)).emit([fn])
    return em.render(), compile_ir(em.render(), triple, cpu, features, 3, tm=tm, emit_object=cls is AMDGPUStyle)


def test_nvptx_style_kernel():
    _, out = _emit(NVPTXStyle, "nvptx64-nvidia-cuda", "sm_90", "+ptx80")
    ptx = out.asm
    assert ".visible .entry gpu_kernel(" in ptx
    assert "bar.sync" in ptx and ".shared" in ptx and "atom.global.add.f32" in ptx
    assert "ld.global" in ptx and "st.global" in ptx
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed: PTX checked textually only")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        with open(f"{d}/k.ptx", "w") as fh:
            fh.write(ptx)
        r = subprocess.run(["ptxas", "-arch=sm_90", f"{d}/k.ptx", "-o", f"{d}/k.cubin"], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr


def test_amdgpu_style_kernel_with_private_address_space():
    text, out = _emit(AMDGPUStyle, "amdgcn-amd-amdhsa", "gfx90a")
    assert "alloca float, i64 4, align 16, addrspace(5)" in text  # the private array
    assert out.obj[:4] == b"\x7fELF" and int.from_bytes(out.obj[18:20], "little") == 224  # EM_AMDGPU
    assert "s_barrier" in out.asm and "gpu_kernel" in out.asm
    assert "addrspace(3)" in text and "amdgpu_kernel" in out.ll
