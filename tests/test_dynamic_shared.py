"""Dynamic shared memory: ``pk.shared_dynamic(T)`` sized at launch with ``shared_size=`` (docs/language.md
"Dynamic shared memory", polykern/ir/dynamic_shared.py, polykern/runtime/shared_launch.py).

Results against NumPy on every runtime here for several sizes (one pipeline per size on Vulkan and
WebGPU), the refusals at launch (no size, a bad size, over the device's limit, a size for a kernel
without the array), checked mode, the artifact, and what each code generator emits.
"""
import re
import shutil
import subprocess

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, f64, i32
from polykern.errors import KernelSyntaxError, KernelTypeError, LaunchError
from polykern.testing import tier_skip
from dynamic_shared_kernels import rev_tile
from runtimes import runnable_targets

TARGETS = [t for t, _, _ in runnable_targets()]


@pk.kernel
def tile_sums(n: i32, per: i32, x: Buffer[f64], out: Buffer[f64]):
    """Each work-item stages ``per`` values in its slice of the dynamic array (length block * per),
    then work-item 0 sums the whole tile: a tile size that is a launch choice."""
    tile = pk.shared_dynamic(f64)
    fixed = pk.shared(i32, 4)
    l = pk.local_id(0)
    b = pk.local_size(0)
    base = pk.group_id(0) * b * per
    for j in range(per):
        k = base + l * per + j
        tile[l * per + j] = x[k] if k < n else 0.0
    if l == 0:
        fixed[0] = b * per
    pk.barrier()
    if l == 0:
        s = f64(0.0)
        for j in range(fixed[0]):
            s += tile[j]
        out[pk.group_id(0)] = s


@pytest.mark.parametrize("target", TARGETS)
def test_tiles_of_several_sizes(target):
    mod = pk.build([rev_tile], [target])
    for block in (1, 32, 64, 128):
        n = 4 * block
        x = np.arange(n, dtype=np.float32)
        y = np.zeros(n, np.float32)
        mod["rev_tile"](n, x, y, grid=n // block, block=block, shared_size=block)
        np.testing.assert_array_equal(y, x.reshape(-1, block)[:, ::-1].reshape(-1))


@pytest.mark.parametrize("target", TARGETS)
def test_tile_size_is_a_launch_choice(target):
    if target.startswith("webgpu"):
        pytest.skip("WGSL has no f64")
    mod = pk.build([tile_sums], [target])
    n = 1000
    x = np.random.default_rng(3).uniform(-1, 1, n)
    for block, per in ((16, 1), (16, 4), (32, 3)):
        tile = block * per
        groups = (n + tile - 1) // tile
        out = np.zeros(groups)
        mod["tile_sums"](n, per, x, out, grid=groups, block=block, shared_size=tile)
        pad = np.zeros(groups * tile)
        pad[:n] = x
        np.testing.assert_allclose(out, pad.reshape(groups, tile).sum(axis=1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_launch_refusals(target):
    k = pk.build([rev_tile], [target])["rev_tile"]
    x = np.zeros(64, np.float32)
    with pytest.raises(LaunchError, match=r"kernel 'rev_tile' has a pk.shared_dynamic array: give its length in "
                                          r"elements at launch, e.g. shared_size=256"):
        k(64, x, x.copy(), grid=1, block=64)
    for bad in (0, -3, True, 2.5, "64"):
        with pytest.raises(LaunchError, match="shared_size must be"):
            k(64, x, x.copy(), grid=1, block=64, shared_size=bad)
    with pytest.raises(LaunchError, match=r"shared_size=16777216 is 67108864 bytes; the (device's|language's) "
                                          r"(limit|limit of shared arrays) is \d+ bytes per workgroup"):
        k(64, x, x.copy(), grid=1, block=64, shared_size=1 << 24)
    with pytest.raises(LaunchError, match=r"takes 3 arguments \(n: i32, x: Buffer\[f32\], y: Buffer\[f32\]\) and "
                                          r"shared_size=, got 4"):
        k(64, x, x.copy(), 64, grid=1, block=64, shared_size=64)


def test_static_shared_counts_against_the_limit():
    @pk.kernel
    def both(x: Buffer[f32]):
        big = pk.shared(f32, 15000)
        dyn = pk.shared_dynamic(f32)
        i = pk.local_id(0)
        big[i] = 1.0
        dyn[i] = 2.0
        pk.barrier()
        x[i] = big[i] + dyn[i]

    k = pk.build([both], ["llvm"])["both"]
    x = np.zeros(8, np.float32)
    k(x, grid=1, block=8, shared_size=1000)  # 60000 + 4000 bytes: within 64 KiB
    assert (x == 3).all()
    with pytest.raises(LaunchError, match=r"shared_size=2000 is 8000 bytes plus 60000 bytes of static shared "
                                          r"arrays, 68000 in all; the language's limit of shared arrays is 65536"):
        k(x, grid=1, block=8, shared_size=2000)


def test_size_for_a_kernel_without_the_array_is_refused():
    @pk.kernel
    def plain(x: Buffer[f32]):
        x[pk.global_id(0)] = 1.0

    with pytest.raises(LaunchError, match="it has no launch option shared_size="):
        pk.build([plain], ["llvm"])["plain"](np.zeros(4, np.float32), grid=1, block=4, shared_size=4)


@pytest.mark.parametrize("target", TARGETS)
def test_checked_mode_names_the_shared_array_and_its_length(target):
    mod = pk.build([rev_tile], [target], bounds_check=True)
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    mod["rev_tile"](64, x, y, grid=2, block=32, shared_size=32)
    np.testing.assert_array_equal(y, x.reshape(2, 32)[:, ::-1].reshape(-1))
    with pytest.raises(LaunchError, match=r"out-of-bounds write to shared array 'tile' at index 16 \(length 16\)"):
        mod["rev_tile"](64, x, y, grid=2, block=32, shared_size=16)


def test_artifact_records_it_and_runs_after_load():
    mod = pk.build([rev_tile], ["llvm"])
    info = mod.functions["rev_tile"]
    assert info.attrs["dynamic_shared"] == "3,4" and info.shared_bytes == 0
    assert [a.name for a in info.args] == ["n", "x", "y", "shared_size"]
    loaded = pk.load(mod.export())
    assert loaded.functions["rev_tile"].attrs["dynamic_shared"] == "3,4"
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    loaded["rev_tile"](16, x, y, grid=2, block=8, shared_size=8)
    np.testing.assert_array_equal(y, x.reshape(2, 8)[:, ::-1].reshape(-1))


def test_hidden_size_parameter_avoids_the_kernels_names():
    @pk.kernel
    def named(shared_size: i32, x: Buffer[f32]):
        t = pk.shared_dynamic(f32)
        t[0] = f32(shared_size)
        x[0] = t[0]

    assert [p.name for p in named.ir.params] == ["shared_size", "x", "shared_size_1"]
    x = np.zeros(1, np.float32)
    pk.build([named], ["llvm"])["named"](7, x, grid=1, block=1, shared_size=1)
    assert x[0] == 7


# ------------------------------------------------------------------ what each backend emits


def test_cuda_extern_shared_and_ptx():
    from polykern_cuda import toolchain

    dev = pk.build([rev_tile], ["cuda -arch=sm_90"]).on("cuda")
    src = dev.inspect_source("cuda")
    assert "extern __shared__ __align__(16) unsigned char pk_dynamic_shared[]; float* tile = " \
           "(float*)pk_dynamic_shared;" in src
    if toolchain.available_compiler() is None:
        pytest.skip("neither NVRTC nor nvcc is installed here")
    assert ".extern .shared .align 16 .b8 pk_dynamic_shared[];" in dev.inspect_source("ptx")


def test_nvptx_extern_shared_assembles():
    ptx = pk.build([rev_tile], ["nvptx -arch=sm_90"]).on("cuda").inspect_source("ptx")
    assert ".extern .shared .align 16 .b8 pk_dynamic_shared_rev_tile[];" in ptx
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas is not installed here")
    r = subprocess.run([ptxas, "-arch=sm_90", "-", "-o", "/dev/null"], input=ptx.encode(), capture_output=True)
    assert r.returncode == 0, r.stderr.decode()


def test_opencl_metal_vulkan_webgpu_sources():
    cl = pk.build([rev_tile], ["opencl"]).on("opencl").inspect_source("cl")
    assert re.search(r"int shared_size, __local float\* tile\)", cl)
    msl = pk.build([rev_tile], ["metal"]).on("metal").inspect_source()
    assert "threadgroup float* tile [[threadgroup(0)]]" in msl
    spv = pk.build([rev_tile], ["vulkan"]).on("vulkan")
    text = spv.inspect_source()
    assert re.search(r"OpDecorate %\w+ SpecId 3", text), text[:2000]
    assert spv.functions["rev_tile"].attrs["spec_ids"].endswith(",shared_size=3")
    wgsl = pk.build([rev_tile], ["webgpu"]).on("webgpu").inspect_source()
    assert "override pk_shared_size: u32 = 1u;" in wgsl and "array<f32, pk_shared_size>" in wgsl


def test_vulkan_spirv_validates():
    val = shutil.which("spirv-val")
    if val is None:
        tier_skip.skip("spirv-val", "spirv-val is not installed here")
    dev = pk.build([rev_tile, tile_sums], ["vulkan"]).on("vulkan")
    for name, blob in dev.payload.items():
        r = subprocess.run([val, "--target-env", "vulkan1.1", "-"], input=blob, capture_output=True)
        assert r.returncode == 0, (name, r.stderr.decode())


# ------------------------------------------------------------------ language errors


def test_errors_are_located():
    @pk.kernel
    def two(x: Buffer[f32]):
        a = pk.shared_dynamic(f32)
        b = pk.shared_dynamic(f32)
        a[0] = 1.0
        b[0] = 1.0

    with pytest.raises(KernelTypeError, match="at most one pk.shared_dynamic array") as e:
        two.ir
    assert e.value.loc.line > 0

    @pk.kernel
    def sized(x: Buffer[f32]):
        a = pk.shared_dynamic(f32, 16)
        a[0] = 1.0

    with pytest.raises(KernelTypeError, match="takes the element type only"):
        sized.ir

    @pk.kernel
    def of_bool(x: Buffer[f32]):
        a = pk.shared_dynamic(pk.bool_)
        a[0] = True

    with pytest.raises(KernelTypeError, match="bool is not supported"):
        of_bool.ir

    @pk.kernel
    def in_expr(x: Buffer[f32]):
        x[0] = pk.shared_dynamic(f32)

    with pytest.raises((KernelSyntaxError, KernelTypeError), match="assigned directly to a name"):
        in_expr.ir


def test_interpreter_sizes_it_from_the_hidden_parameter():
    """The IR interpreter (the fuzz oracle) runs a pk.shared_dynamic kernel with the size argument."""
    from polykern.testing.interp import interpret

    x = np.arange(48, dtype=np.float32)
    res = interpret(rev_tile, [48, x, np.zeros(48, np.float32), 16], grid=3, block=16)
    np.testing.assert_array_equal(np.asarray(res.buffers["y"], np.float32), x.reshape(3, 16)[:, ::-1].reshape(-1))


def test_cli_run_passes_the_shared_size(tmp_path, capsys):
    from polykern.cli import main

    path = tmp_path / "k.kbin"
    pk.build([rev_tile], ["llvm"]).export(path)
    assert main(["run", str(path), "rev_tile", "--n", "256", "--block", "64"]) == 0
    assert main(["run", str(path), "rev_tile", "--n", "256", "--block", "64", "--shared-size", "64"]) == 0
    out = capsys.readouterr().out
    assert "ran rev_tile(n: i32, x: Buffer[f32], y: Buffer[f32])" in out
