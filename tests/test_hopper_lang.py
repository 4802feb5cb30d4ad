"""Hopper's matrix path in the language (docs/language.md 5.3): the frontend's located errors, the targets
that refuse such kernels by name, and the CUDA C for ``cuda -arch=sm_90a``, assembled by ptxas."""
import os
import sys

import pytest

import polykern as pk
from polykern import Buffer, capabilities, f16, f32, i32
from polykern.errors import KernelTypeError
from runtimes import all_target_kinds
from hopper_support import assemble_sm90a, located_error

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import gemm_hopper as G  # noqa: E402


def test_swizzle_is_a_string_literal():
    sw = "128B"  # a Python value the kernel closes over is not a literal

    @pk.kernel
    def k(M: i32, A: Buffer[f16, "readonly"]):
        ta = pk.tensor_map(A, (M, 64), (64, 64), sw)  # noqa: F841

    assert "the swizzle of pk.tensor_map() is a string literal" in located_error(k, "pk.tensor_map(A, (M, 64), (64, 64), sw)")


def test_swizzled_box_rows_are_128_bytes():
    @pk.kernel
    def k(M: i32, A: Buffer[f16, "readonly"]):
        ta = pk.tensor_map(A, (M, 64), (64, 32), "128B")  # noqa: F841

    assert "a 128B swizzled box has rows of 128 bytes: 64 f16 columns, got 32" in located_error(k, "(64, 32)")


def test_swizzled_array_is_not_indexed():
    @pk.kernel
    def k(M: i32, A: Buffer[f16, "readonly"], C: Buffer[f16]):
        ta = pk.tensor_map(A, (M, 64), (64, 64), "128B")
        tiles = pk.shared(f16, 4096)
        bars = pk.mbarriers(1)
        pk.tma_load(tiles, 0, ta, 0, 0, bars, 0)
        C[0] = tiles[5]

    assert "'tiles' holds swizzled tiles" in located_error(k, "C[0] = tiles[5]")


def test_unswizzled_copy_into_a_wgmma_operand_is_refused():
    """A "none" map's copy writes rows as they are; wgmma reads the 128-byte swizzled layout: on the GPU the
    product would be of permuted data while the IR interpreter (logical layout) gives the intended one."""
    @pk.kernel
    def k(M: i32, A: Buffer[f16, "readonly"], C: Buffer[f32]):
        pk.warpgroups(1)
        ta = pk.tensor_map(A, (M, 64), (64, 64), "none")
        tiles = pk.shared(f16, 8192)
        bars = pk.mbarriers(1)
        acc = pk.wg_acc(f32, 64, 64)
        pk.tma_load(tiles, 0, ta, 0, 0, bars, 0)
        pk.wgmma(acc, tiles, 0, tiles, 0)

    assert "tensor map 'ta' copies without swizzle into it" in located_error(k, "pk.tma_load(tiles, 0, ta, 0, 0, bars, 0)")


def test_wgmma_needs_warpgroups():
    @pk.kernel
    def k(C: Buffer[f32]):
        tiles = pk.shared(f16, 8192)
        acc = pk.wg_acc(f32, 64, 64)
        pk.wgmma(acc, tiles, 0, tiles, 0)

    assert "pk.wgmma() is a warpgroup operation: declare the block's warpgroups first" in located_error(
        k, "pk.wgmma(acc, tiles, 0, tiles, 0)")


def test_hopper_builtin_in_a_device_function():
    @pk.func
    def wait(parity: i32):
        bars = pk.mbarriers(1)
        pk.mbarrier_wait(bars, 0, parity)

    @pk.kernel
    def k(C: Buffer[f32]):
        wait(0)

    assert "pk.mbarriers() is a kernel's declaration, not allowed in a @pk.func device function: declare it in " \
        "the kernel and pass it to the function as a pk.MBarriers parameter" in located_error(k, "bars = pk.mbarriers(1)")

    @pk.func
    def wait_only(parity: i32):
        pk.mbarrier_wait(full, 0, parity)  # noqa: F821 - the kernel's barriers are not the function's

    @pk.kernel
    def k2(C: Buffer[f32]):
        full = pk.mbarriers(1)  # noqa: F841
        wait_only(0)

    assert "'full' is not a barrier set (a device function takes the kernel's as a pk.MBarriers parameter)" in located_error(
        k2, "pk.mbarrier_wait(full, 0, parity)")


def test_constant_operand_offset_is_refused_at_compile_time():
    @pk.kernel
    def k(C: Buffer[f32]):
        pk.warpgroups(1)
        tiles = pk.shared(f16, 8192)
        acc = pk.wg_acc(f32, 64, 64)
        pk.wgmma(acc, tiles, 8, tiles, 0)

    assert "the A operand starts at element 8" in located_error(k, "pk.wgmma(acc, tiles, 8, tiles, 0)")


# ------------------------------------------------------------------ targets
# the target kinds whose Capabilities have no Hopper support (llvm, opencl, vulkan, webgpu, metal, rocm, ...)
NO_HOPPER = [k for k in all_target_kinds() if capabilities.of(k).hopper is None]


def test_only_the_cuda_kinds_have_hopper_operations():
    assert set(all_target_kinds()) - set(NO_HOPPER) == {"cuda", "nvptx"}


@pytest.mark.parametrize("target, why", [
    *[pytest.param(t, f"which target '{t}' ({t}) has no code for: they compile for 'cuda -arch=sm_90a'", id=t)
      for t in NO_HOPPER],
    ("nvptx", "they need the architecture-specific target sm_90a (wgmma and setmaxnreg exist only on sm_90 parts), "
              "not sm_90: build for 'nvptx -arch=sm_90a'"),
    ("cuda -arch=sm_90", "they need the architecture-specific target sm_90a (wgmma and setmaxnreg exist only on sm_90 "
                         "parts), not sm_90: build for 'cuda -arch=sm_90a'"),
])
def test_other_targets_refuse_by_name(target, why):
    with pytest.raises(KernelTypeError) as e:
        pk.build(G.make_gemm(64, 2), targets=target)
    assert "kernel 'gemm_hopper' uses Hopper operations (pk.mbarrier_init ...)" in e.value.message  # as written
    assert why in e.value.message
    assert e.value.loc is not None and e.value.loc.file.endswith("gemm_hopper.py")


def test_checked_mode_refuses():
    with pytest.raises(KernelTypeError, match=r"checked mode \(bounds_check\) does not cover them yet"):
        pk.build(G.make_gemm(64, 2), targets="cuda -arch=sm_90a -fmt=cuda", bounds_check=True)


@pytest.mark.parametrize("bn, stages", [(64, 2), (256, 4)])
def test_cuda_c_for_sm90a_assembles(bn, stages, tmp_path):
    src = pk.build(G.make_gemm(bn, stages), targets="cuda -arch=sm_90a -fmt=cuda").on("cuda").inspect_source("cuda")
    for needle in ("wgmma.mma_async.sync.aligned.m64n%dk16.f32.f16.f16" % bn, "cp.async.bulk.tensor.2d",
                   "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx", "setmaxnreg.dec", "setmaxnreg.inc",
                   "wgmma.commit_group", "wgmma.wait_group.sync.aligned 0", "__launch_bounds__(384, 1)"):
        assert needle in src, needle
    assemble_sm90a(src, tmp_path)


