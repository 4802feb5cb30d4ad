"""Wide access: ``pk.vload``/``pk.vstore`` (docs/language.md "Wide access", polykern/ir/vector.py).

Results against NumPy on every runtime here, the vector instructions in the code each backend emits
(PTX ``ld.global.v4.f32`` from CUDA C through nvcc/NVRTC, ``<4 x float>`` loads from LLVM for the CPU
and NVPTX, ``float4`` in OpenCL C), the launch-time alignment check on every runtime, and the
language's errors.
"""
import re
import shutil
import subprocess

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, f64, i32, i64, u8, u16
from polykern.errors import KernelSyntaxError, KernelTypeError, LaunchError
from polykern.ir import nodes as ir
from polykern.ir.vector import ALIGN_ATTR, iter_groups, lane_of
from runtimes import runnable_targets

TARGETS = runnable_targets()
_FEATURE = {"u8": "i8", "u16": "i16", "i64": "i64", "f64": "f64", "f16": "f16"}


@pk.kernel
def scale4(n4: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    k = pk.global_id(0)
    if k < n4:
        x0, x1, x2, x3 = pk.vload(x, k, 4)
        pk.vstore(y, k, (a * x0, a * x1, a * x2, a * x3 + 1.0))


def _swap2(T):
    @pk.kernel
    def swap2(n2: i32, x: Buffer[T], y: Buffer[T]):
        k = pk.global_id(0)
        if k < n2:
            a, b = pk.vload(x, k, 2)
            pk.vstore(y, k, (b, a + a))   # the values are evaluated before any lane is stored
            c, d = pk.vload(y, k, 2)
            pk.vstore(x, k, [d, c])
    return swap2


def _rev4(T):
    @pk.kernel
    def rev4(n4: i32, x: Buffer[T], y: Buffer[T]):
        k = pk.global_id(0)
        if k < n4:
            a, b, c, d = pk.vload(x, k, 4)
            pk.vstore(y, n4 - 1 - k, (d, c, b, a))
    return rev4


def _params(types):
    out = []
    for target, kind, skips in TARGETS:
        for T in types:
            reason = skips.get(_FEATURE.get(T.name, ""))
            marks = [pytest.mark.skip(reason=f"{target}: {reason}")] if reason else []
            out.append(pytest.param(target, T, marks=marks, id=f"{target}-{T.name}"))
    return out


def _data(T, n, seed=1):
    rng = np.random.default_rng(seed)
    if T.is_float:
        return rng.uniform(-100, 100, n).astype(T.numpy)
    return rng.integers(0, 100, n).astype(T.numpy)


# ------------------------------------------------------------------ results on every runtime


@pytest.mark.parametrize("target", [t for t, _, _ in TARGETS])
def test_scale4_matches_numpy(target):
    n = 4096
    x = _data(f32, n)
    y = np.zeros(n, np.float32)
    pk.build([scale4], [target])["scale4"](n // 4, np.float32(2.0), x, y, grid=n // 4 // 64, block=64)
    want = np.float32(2.0) * x
    want[3::4] += np.float32(1.0)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("target,T", _params([f32, i32, f64, i64, u8, u16, f16]))
def test_vload2_vstore2(target, T):
    n = 1024
    x = _data(T, n)
    x0 = x.copy()
    y = np.zeros(n, T.numpy)
    pk.build([_swap2(T)], [target])["swap2"](n // 2, x, y, grid=n // 2 // 32, block=32)
    want_y = np.empty_like(x0)
    want_y[0::2], want_y[1::2] = x0[1::2], x0[0::2] + x0[0::2]
    want_x = np.empty_like(x0)
    want_x[0::2], want_x[1::2] = want_y[1::2], want_y[0::2]
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(x, want_x)


@pytest.mark.parametrize("target,T", _params([f32, i32, u8, f64, f16]))
def test_vload4_reversed_groups(target, T):
    n = 512
    x = _data(T, n)
    y = np.zeros(n, T.numpy)
    pk.build([_rev4(T)], [target])["rev4"](n // 4, x, y, grid=n // 4 // 32, block=32)
    np.testing.assert_array_equal(y, x[::-1])


@pytest.mark.parametrize("target", [t for t, _, _ in TARGETS])
def test_checked_mode_keeps_meaning_and_catches_the_tail(target):
    """Bounds checks rewrite the scalar statements of a group (so it is no longer fused) and name the
    lane that runs past the end."""
    n = 64
    x = _data(f32, n)
    y = np.zeros(n, np.float32)
    mod = pk.build([scale4], [target], bounds_check=True)
    mod["scale4"](n // 4, np.float32(2.0), x, y, grid=1, block=16)
    want = np.float32(2.0) * x
    want[3::4] += np.float32(1.0)
    np.testing.assert_array_equal(y, want)
    with pytest.raises(LaunchError, match=r"'x'.*index 64"):
        mod["scale4"](n // 4 + 1, np.float32(2.0), x, y, grid=1, block=32)


# ------------------------------------------------------------------ alignment at launch


@pytest.mark.parametrize("target", [t for t, _, _ in TARGETS])
def test_misaligned_view_is_refused(target):
    n = 256
    buf = np.zeros(n + 4, np.float32)
    y = np.zeros(n, np.float32)
    k = pk.build([scale4], [target])["scale4"]
    with pytest.raises(LaunchError, match=r"argument 2 \('x'\) is at address 0x[0-9a-f]+, which is not aligned "
                                          r"to 16 bytes"):
        k(n // 4, np.float32(1.0), buf[1:n + 1], y, grid=1, block=64)
    with pytest.raises(LaunchError, match=r"argument 3 \('y'\).*16 bytes"):
        k(n // 4, np.float32(1.0), buf[4:], buf[2:n + 2], grid=1, block=64)
    k(n // 4, np.float32(1.0), buf[4:], y, grid=1, block=64)  # 16 bytes in: aligned, runs
    np.testing.assert_array_equal(y[0::4], buf[4::4][:n // 4])


def test_alignment_is_recorded_per_buffer():
    info = pk.build([scale4, _swap2(f64)], ["llvm"]).functions
    assert info["scale4"].attrs[ALIGN_ATTR] == "x=16,y=16"
    assert info["swap2"].attrs[ALIGN_ATTR] == "x=16,y=16"
    assert ALIGN_ATTR not in pk.build([_swap2(u8)], ["llvm"]).functions["swap2"].attrs or \
        pk.build([_swap2(u8)], ["llvm"]).functions["swap2"].attrs[ALIGN_ATTR] == "x=2,y=2"


def test_alignment_travels_in_the_artifact():
    data = pk.build([scale4], ["llvm"]).export()
    mod = pk.load(data)
    assert mod.functions["scale4"].attrs[ALIGN_ATTR] == "x=16,y=16"
    buf = np.zeros(20, np.float32)
    with pytest.raises(LaunchError, match="not aligned to 16 bytes"):
        mod["scale4"](4, np.float32(1.0), buf[2:18], np.zeros(16, np.float32), grid=1, block=4)


# ------------------------------------------------------------------ the code each backend emits


def test_ir_groups_are_found_and_broken_by_rewrites():
    fn = scale4.ir
    body = fn.body[1].then
    groups = [g for g, _ in iter_groups(body) if g is not None]
    assert [(g.kind, g.base.name, g.n) for g in groups] == [("load", "x", 4), ("store", "y", 4)]
    # a rewritten lane (here: a different index) is no longer a group
    import copy
    changed = copy.deepcopy(body)
    lane2 = [s for s in changed if lane_of(s) is not None and isinstance(s, ir.Store)][2]
    lane2.index = ir.Const(2, lane2.index.type)
    assert [g.kind for g, _ in iter_groups(changed) if g is not None] == ["load"]


def test_cuda_ptx_has_vector_loads_and_stores():
    from polykern_cuda import toolchain

    if toolchain.available_compiler() is None:
        pytest.skip("neither NVRTC nor nvcc is installed here")
    dev = pk.build([scale4], ["cuda -arch=sm_90"]).on("cuda")
    src = dev.inspect_source("cuda")
    assert "((const float4*)x)[" in src and "make_float4(" in src
    ptx = dev.inspect_source("ptx")
    assert re.search(r"ld\.global(\.nc)?\.v4\.f32", ptx), ptx
    assert "st.global.v4.f32" in ptx


def test_cuda_f16_groups_are_ushort_vectors():
    """f16 is stored as its bits in CUDA C: a group is one ushort4 access, its lanes converted."""
    from polykern_cuda import toolchain

    if toolchain.available_compiler() is None:
        pytest.skip("neither NVRTC nor nvcc is installed here")
    dev = pk.build([_rev4(f16)], ["cuda -arch=sm_90"]).on("cuda")
    src = dev.inspect_source("cuda")
    assert "((ushort4*)x)[" in src and "make_ushort4(" in src and "pk_h2f(" in src
    ptx = dev.inspect_source("ptx")
    assert re.search(r"ld\.global(\.nc)?\.v4\.(u16|b16)", ptx), ptx
    assert re.search(r"st\.global\.v4\.(u16|b16)", ptx), ptx


def test_nvptx_has_vector_loads_and_stores():
    """The LLVM IR addresses <4 x float> with align 16 (the optimizer may split the load into aligned
    scalar loads, which NVPTX's load/store vectorizer joins again): the PTX has the v4 accesses."""
    dev = pk.build([scale4], ["nvptx -arch=sm_90"]).on("cuda")
    ll = dev.inspect_source("llvm")
    assert "getelementptr inbounds <4 x float>, ptr addrspace(1) %x" in ll
    assert re.search(r"store <4 x float> %[^,]+, ptr addrspace\(1\) %[^,]+, align 16", ll)
    ptx = dev.inspect_source("ptx")
    assert re.search(r"ld\.global(\.nc)?\.v4\.(f32|b32)", ptx) and re.search(r"st\.global\.v4\.(f32|b32)", ptx)


def test_cpu_llvm_has_aligned_vector_loads():
    ll = pk.build([scale4], ["llvm"]).on("llvm").inspect_source("ll")
    assert re.search(r"load <4 x float>, ptr %[^,]+, align 16", ll)
    assert re.search(r"store <4 x float> %[^,]+, ptr %[^,]+, align 16", ll)


def test_opencl_c_casts_to_vector_pointers():
    src = pk.build([scale4], ["opencl"]).on("opencl").inspect_source("cl")
    assert "((__global const float4*)x)[" in src
    assert "((__global float4*)y)[" in src and "(float4)(" in src


def test_types_without_a_vector_type_stay_scalar():
    """f64 x 4 is 32 bytes (no 16-byte vector): CUDA C emits scalar accesses, with the same meaning."""
    @pk.kernel
    def wide64(x: Buffer[f64], y: Buffer[f64]):
        k = pk.global_id(0)
        a, b, c, d = pk.vload(x, k, 4)
        pk.vstore(y, k, (a, b, c, d))

    src = pk.build([wide64], ["cuda -arch=sm_90"]).on("cuda").inspect_source("cuda")
    assert "double4" not in src and "x[" in src


# ------------------------------------------------------------------ errors


def _error(src_fn, exc=KernelTypeError):
    with pytest.raises(exc) as e:
        src_fn.ir
    return e.value


def test_errors_are_located():
    @pk.kernel
    def bad_width(x: Buffer[f32]):
        a, b, c = pk.vload(x, 0, 3)
        x[0] = a + b + c

    e = _error(bad_width)
    assert "width must be 2 or 4, got 3" in str(e) and e.loc.line > 0

    @pk.kernel
    def bad_unpack(x: Buffer[f32]):
        a, b = pk.vload(x, 0, 4)
        x[0] = a + b

    assert "gives 4 values: unpack them into 4 names" in str(_error(bad_unpack))

    @pk.kernel
    def in_expr(x: Buffer[f32]):
        x[0] = pk.vload(x, 0, 2)

    assert "pk.vload() is a statement of its own" in str(_error(in_expr, KernelSyntaxError))

    @pk.kernel
    def readonly(x: Buffer[f32, "readonly"]):
        pk.vstore(x, 0, (1.0, 2.0))

    assert "cannot write to readonly Buffer 'x'" in str(_error(readonly))

    @pk.kernel
    def three(x: Buffer[f32]):
        pk.vstore(x, 0, (1.0, 2.0, 3.0))

    assert "a tuple of 2 or 4" in str(_error(three))

    @pk.kernel
    def wrong_type(x: Buffer[f32], n: i32):
        pk.vstore(x, 0, (n, n))

    assert "cannot store i32 into" in str(_error(wrong_type))


# ------------------------------------------------------------------ arrays of vectors (Vulkan, WebGPU)


@pk.kernel
def mixed(n4: i32, x: Buffer[f32], y: Buffer[f32]):
    """x is read by groups and by a scalar access: it stays an array of scalars; y is written by groups
    only: an array of vectors on Vulkan and WebGPU."""
    k = pk.global_id(0)
    if k < n4:
        a, b, c, d = pk.vload(x, k, 4)
        pk.vstore(y, k, (a + x[0], b, c, d))


def test_vulkan_and_webgpu_declare_vector_arrays():
    wgsl = pk.build([scale4, mixed], ["webgpu"]).on("webgpu")
    src = wgsl.inspect_source()
    assert re.search(r"var<storage, read> x: array<vec4<f32>>;", src)
    assert re.search(r"var<storage, read_write> x: array<f32>;", src)  # mixed: scalar x
    assert src.count("y: array<vec4<f32>>") == 2
    spv = pk.build([scale4], ["vulkan"]).on("vulkan")
    text = spv.inspect_source()
    assert "OpTypeRuntimeArray %v4float" in text and "OpDecorate %_runtimearr_v4float ArrayStride 16" in text
    assert "OpCompositeConstruct %v4float" in text
    val = shutil.which("spirv-val")
    if val is not None:
        for name, blob in spv.payload.items():
            r = subprocess.run([val, "--target-env", "vulkan1.1", "-"], input=blob, capture_output=True)
            assert r.returncode == 0, (name, r.stderr.decode())


@pytest.mark.parametrize("target", [t for t, _, _ in TARGETS])
def test_mixed_scalar_and_vector_access(target):
    n = 256
    x = _data(f32, n)
    y = np.zeros(n, np.float32)
    pk.build([mixed], [target])["mixed"](n // 4, x, y, grid=n // 4 // 16, block=16)
    want = x.copy()
    want[0::4] += x[0]
    np.testing.assert_array_equal(y, want)


def test_metal_casts_to_vector_pointers():
    src = pk.build([scale4], ["metal"]).on("metal").inspect_source()
    assert "((device const float4*)x)[" in src and "float4(" in src


def test_rocm_has_dwordx4_accesses():
    from polykern.testing.tier_skip import skip_if_absent
    skip_if_absent("ld.lld")  # the hsaco is linked (the GPU machine has no ld.lld)
    asm = pk.build([scale4], ["rocm -mcpu=gfx90a"]).on("rocm").inspect_source("asm")
    assert "global_load_dwordx4" in asm and "global_store_dwordx4" in asm


def test_vector_buffers_need_one_width_and_no_scalar_access():
    from polykern.ir.vector import vector_buffers

    @pk.kernel
    def widths(x: Buffer[f32], y: Buffer[f32], z: Buffer[f32]):
        k = pk.global_id(0)
        for j in range(2):
            a, b = pk.vload(x, k + j, 2)          # x: groups of 2 and of 4 -> scalar
            c, d, e, f = pk.vload(x, k, 4)
            pk.vstore(y, k, (a, b, c, d + e + f))   # y: groups of 4 only, in a loop -> vector
        pk.atomic_add(z, 0, 1.0)                    # z: atomics -> scalar
        g, h = pk.vload(z, k, 2)
        pk.vstore(z, k + 1, (g, h))

    assert vector_buffers(widths.ir) == {"y": 4}
