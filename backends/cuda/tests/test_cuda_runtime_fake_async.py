"""Host-side tests of the CUDA runtime plugin against a FAKE pycuda driver (fake_cuda.py; no GPU, no
libcuda), part two: asynchronous launches and their fast path, event ordering of foreign streams,
cubin architecture checks, the fast-path converters against check_args, checked mode. They prove
nothing about the real driver (test_cuda_runtime.py, on a GPU machine).
"""
from __future__ import annotations

import struct

import numpy as np
import pytest

import polykern as pk
from polykern.errors import DeviceError, LaunchError
from polykern.ir.types import bool_, f16, f32, i8, i32, i64
from polykern.module import ArgInfo, FunctionInfo
import polykern_cuda
from polykern_cuda import toolchain

from fake_cuda import CAI, SAXPY_INFO, emu_scale_oob, fake, make_module, ptx_for, saxpy  # noqa: F401  (fake: the fixture)


# ============================================================== asynchronous launches and the fast path (FAKE)
def _count_check_args(monkeypatch):
    """Counts the launches that took the slow path (the staged launch's check_args)."""
    from polykern.runtime import staged_launch as kmod

    calls = []
    real = kmod.check_args

    def counting(*a, **kw):
        calls.append(a[0].name)
        return real(*a, **kw)

    monkeypatch.setattr(kmod, "check_args", counting)
    return calls


def test_device_array_launches_are_asynchronous_and_take_the_fast_path(fake, monkeypatch):
    gpu, rt = fake
    slow = _count_check_args(monkeypatch)
    k = make_module(rt)["saxpy"]
    x = rt.to_device(np.arange(16, dtype=np.float32))
    y = rt.zeros(16, np.float32)
    syncs, pushes = gpu.calls["sync"], gpu.calls["push"]
    k(16, 1.0, x, y, grid=1, block=16)  # a first grid/block: checked on the slow path
    assert len(slow) == 1
    for _ in range(3):
        k(16, 1.0, x, y, grid=1, block=16)
    k(np.int32(16), np.float32(1.0), x, y, grid=(1,), block=(16, 1, 1))  # same dims, NumPy scalars
    assert len(slow) == 1 and gpu.calls["launch"] == 5
    assert gpu.calls["sync"] == syncs, "a launch without host arrays must not wait for the device"
    np.testing.assert_array_equal(y.numpy(), 5 * np.arange(16))
    # outside any context the fast path pushes polykern's; where it is current, it pushes nothing
    assert gpu.calls["push"] - pushes >= 4
    with rt.context():
        pushes = gpu.calls["push"]
        k(16, 1.0, x, y, grid=1, block=16)
        assert gpu.calls["push"] == pushes
    assert rt.stats()["launches"] == 6


def test_numpy_launches_stay_synchronous(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    for _ in range(2):
        syncs = gpu.calls["sync"]
        y = np.ones(8, np.float32)
        k(8, 2.0, np.ones(8, np.float32), y, grid=1, block=8)
        assert gpu.calls["sync"] == syncs + 1
        np.testing.assert_array_equal(y, 3)


def test_a_fault_of_an_asynchronous_launch_surfaces_at_synchronize(fake):
    gpu, rt = fake
    gpu.kernels["oob"] = emu_scale_oob
    info = FunctionInfo("oob", (ArgInfo.buffer("x", f32),), (), 0, {"entry": "oob"})
    m = rt.create(ptx_for("oob"), "ptx", {"oob": info}, {})
    x = rt.zeros(4, np.float32)
    m["oob"](x, grid=1, block=1)  # returns: the kernel is only queued
    with pytest.raises(DeviceError) as e:
        polykern_cuda.synchronize()
    assert (e.value.code, e.value.name) == (700, "CUDA_ERROR_ILLEGAL_ADDRESS") and e.value.sticky
    assert "asynchronous kernel launched earlier failed" in str(e.value)
    rt.synchronize()  # nothing pending any more
    # once the context is lost, the next launch fails and says the fault may be an earlier launch's
    gpu.launch_error = "an illegal memory access was encountered"
    with pytest.raises(DeviceError, match="launching kernel 'oob'.*asynchronous.*launched earlier") as e:
        m["oob"](x, grid=1, block=1)
    assert e.value.code == 700 and e.value.sticky


ALL_SCALARS = FunctionInfo("all_scalars", (
    ArgInfo.scalar("b", bool_), ArgInfo.scalar("h", f16), ArgInfo.scalar("c", i8), ArgInfo.scalar("n", i32),
    ArgInfo.buffer("p", f32), ArgInfo.scalar("m", i64), ArgInfo.scalar("u", pk.u64), ArgInfo.scalar("f", f32),
    ArgInfo.scalar("d", pk.f64), ArgInfo.scalar("s", pk.u16), ArgInfo.scalar("z", bool_)), (), 0,
    {"entry": "all_scalars"})


def test_fast_path_packs_exactly_what_the_checked_path_packs(fake, monkeypatch):
    gpu, rt = fake
    slow = _count_check_args(monkeypatch)
    m = rt.create(ptx_for("all_scalars"), "ptx", {"all_scalars": ALL_SCALARS}, {})
    k = m["all_scalars"]
    p = rt.zeros(4, np.float32)
    rng = np.random.default_rng(7)
    cases = [(True, 0.1, -128, 2 ** 31 - 1, p, -(2 ** 63), 2 ** 64 - 1, 1e-40, -0.0, 65535, False),
             (np.bool_(False), np.float16(-65504), np.int8(127), np.int32(-7), p, np.int64(5), np.uint64(9),
              np.float32(3.4e38), float("inf"), np.uint16(1), True),
             (False, float("nan"), 0, 0, p, 0, 0, float("-inf"), float("nan"), 0, True),
             (True, 6e-8, 1, 1, p, 1, 1, 16777217, 2 ** 80, 2, False)]
    cases += [(bool(rng.integers(2)), float(rng.standard_normal() * 10.0 ** rng.integers(-8, 4)), 3, 4, p, 5, 6,
               float(rng.standard_normal() * 10.0 ** rng.integers(-40, 37)), float(rng.standard_normal()), 7, True)
              for _ in range(200)]
    k(*cases[0], grid=1, block=1)  # remember the dims
    for args in cases:
        before = len(slow)
        k(*args, grid=1, block=1)
        assert len(slow) == before, f"fast path not taken for {args}"
        fast = gpu.launches[-1][3]
        want = rt.create(ptx_for("all_scalars"), "ptx", {"all_scalars": ALL_SCALARS}, {})["all_scalars"]
        want(*args, grid=1, block=1)  # a new kernel: its first launch is the checked (slow) path
        assert len(slow) == before + 1
        assert fast == gpu.launches[-1][3], args


def test_fast_path_keeps_every_launch_error(fake, monkeypatch):
    """After a good launch (dims cached, fast path armed), every mistake still raises the LaunchError
    that check_args raises, and nothing is launched."""
    from polykern.runtime.launch import check_args

    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = rt.to_device(np.ones(8, np.float32)), rt.zeros(8, np.float32)
    k(8, 1.0, x, y, grid=1, block=8)
    freed = rt.zeros(8, np.float32)
    freed.free()
    ro = CAI(gpu, 8, readonly=True)
    bad = [
        ((8, 1.0, x), dict(grid=1, block=8), "takes 4 arguments"),
        ((8.0, 1.0, x, y), dict(grid=1, block=8), "expected an integer for i32"),
        ((True, 1.0, x, y), dict(grid=1, block=8), "expected a i32 value, got bool"),
        ((2 ** 31, 1.0, x, y), dict(grid=1, block=8), "out of range for i32"),
        ((8, 1e39, x, y), dict(grid=1, block=8), "out of range for f32"),
        ((8, 10 ** 400, x, y), dict(grid=1, block=8), "too large for f32"),
        ((8, "1", x, y), dict(grid=1, block=8), "expected a scalar f32"),
        ((8, 1.0, x, rt.zeros(8, np.int32)), dict(grid=1, block=8), r"expected float32 elements \(f32\), got int32"),
        ((8, 1.0, x, freed), dict(grid=1, block=8), "freed"),
        ((8, 1.0, x, ro), dict(grid=1, block=8), "read-only but the kernel may write it"),
        ((8, 1.0, x, CAI(gpu, 8, dtype=np.float64)), dict(grid=1, block=8), "got float64"),
        ((8, 1.0, x, CAI(gpu, 8, strides=(8,))), dict(grid=1, block=8), "not C-contiguous"),
        ((8, 1.0, x, CAI(gpu, 8, ctx=0x9999)), dict(grid=1, block=8), "another CUDA context"),
        ((8, 1.0, x, [1.0] * 8), dict(grid=1, block=8), "expected an array"),
        ((8, 1.0, x, y), dict(grid=True, block=8), "not bool"),
        ((8, 1.0, x, y), dict(grid=(True,), block=8), "must contain ints"),
        ((8, 1.0, x, y), dict(grid=1, block=(8, 0)), r"dimensions must be in 1\.\."),
        ((8, 1.0, x, y), dict(grid=1, block=2048), "maximum block size"),
        ((8, 1.0, x, y), dict(grid=None, block=8), "grid= is required"),
    ]
    launches = gpu.calls["launch"]
    for args, dims, match in bad:
        with pytest.raises(LaunchError, match=match) as e:
            k(*args, **dims)
        if "maximum" not in match and "freed" not in match and "context" not in match:
            with pytest.raises(LaunchError) as want:  # the very message check_args gives
                check_args(SAXPY_INFO, args, dims["grid"], dims["block"])
            assert str(e.value) == str(want.value)
    assert gpu.calls["launch"] == launches
    k(8, 1.0, ro, y, grid=1, block=8)  # read-only memory for the readonly parameter is fine
    assert gpu.calls["launch"] == launches + 1


def test_dims_cache_never_turns_a_bool_into_a_dimension(fake):
    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    x, y = rt.to_device(np.ones(8, np.float32)), rt.zeros(8, np.float32)
    k(8, 1.0, x, y, grid=1, block=8)
    k(8, 1.0, x, y, grid=(1, 1, 1), block=(8, 1, 1))
    for grid in (True, (True,), (1, True), np.int64(1)):
        if isinstance(grid, np.integer):
            k(8, 1.0, x, y, grid=grid, block=8)  # NumPy ints are fine (checked path)
            continue
        with pytest.raises(LaunchError, match="bool|ints"):
            k(8, 1.0, x, y, grid=grid, block=8)


# ============================================================== cubin architecture check (pure + FAKE)
def fake_cubin(sm: int, abi: int = 8, accel: bool = False, tail: bytes = b"") -> bytes:
    """A 64-byte ELF header the way nvcc/NVRTC write a cubin's (EM_CUDA, SM in e_flags), then ``tail``."""
    if abi == 7:
        flags = sm | 0x400 | (0x800 if accel else 0)
    else:
        flags = 0x06000000 | (sm << 8) | 0x04
    hdr = bytearray(64)
    hdr[:4] = b"\x7fELF"
    hdr[4], hdr[5], hdr[6], hdr[7], hdr[8] = 2, 1, 1, 0x33, abi
    struct.pack_into("<HHI", hdr, 16, 2, 190, 1)
    struct.pack_into("<I", hdr, 48, flags)
    return bytes(hdr) + tail


@pytest.mark.parametrize("blob,built,cc,ok", [
    (fake_cubin(90), (), (9, 0), True),
    (fake_cubin(90, abi=7), (), (9, 0), True),
    (fake_cubin(120), (), (9, 0), False),          # another major
    (fake_cubin(120, abi=7), (), (9, 0), False),
    (fake_cubin(86), (), (8, 9), True),            # same major, newer minor device
    (fake_cubin(89), (), (8, 6), False),           # needs a newer minor
    (fake_cubin(80), (), (9, 0), False),
    (fake_cubin(90, abi=7, accel=True), (), (9, 0), True),
    (fake_cubin(100), ("sm_100a",), (10, 0), True),
    (fake_cubin(100), ("sm_100a",), (10, 3), False),  # "a": exactly that architecture
    (fake_cubin(100), ("sm_100",), (10, 3), True),
    (fake_cubin(90, abi=7, accel=True), (), (9, 1), False),
    (b"\x7fELF short", ("sm_120",), (9, 0), False),  # no header to read: the declared arch decides
    (b"\x7fELF short", (), (9, 0), True),            # nothing known: the driver decides
])
def test_cubin_compatibility_rules(fake, blob, built, cc, ok):
    from polykern_cuda.runtime import cubin

    arch = cubin.cubin_arch(blob, built)
    assert (arch is None or cubin.incompatibility(arch, cc) is None) == ok, (arch, cc)


def test_cubin_header_is_decoded_in_both_abi_layouts(fake):
    from polykern_cuda.runtime import cubin

    assert cubin.elf_arch(fake_cubin(90)) == (9, 0, "")
    assert cubin.elf_arch(fake_cubin(120)) == (12, 0, "")
    assert cubin.elf_arch(fake_cubin(75, abi=7)) == (7, 5, "")
    assert cubin.elf_arch(fake_cubin(90, abi=7, accel=True)) == (9, 0, "a")
    assert cubin.elf_arch(ptx_for("k")) is None and cubin.elf_arch(b"\x50\xed\x55\xba" + bytes(80)) is None


def test_foreign_arch_cubin_is_refused_before_the_driver_loads_it(fake):
    gpu, rt = fake
    info = FunctionInfo("saxpy", SAXPY_INFO.args, SAXPY_INFO.launch_tags, 0, {"entry": "saxpy", "arch": "sm_120"})
    # the fake driver would load this one (it names sm_90): only the header says sm_120
    m = rt.create(fake_cubin(120, tail=b" sm_90 entry=saxpy"), "cubin", {"saxpy": info}, {})
    with pytest.raises(DeviceError, match=r"sm_120 code.*not on sm_90.*built for sm_120; this device is sm_90") as e:
        m["saxpy"]
    assert (e.value.code, e.value.name) == (209, "CUDA_ERROR_NO_BINARY_FOR_GPU") and gpu.calls["load"] == 0
    ok = rt.create(fake_cubin(90, tail=b" sm_90 entry=saxpy"), "cubin", {"saxpy": SAXPY_INFO}, {})
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    ok["saxpy"](4, 3.0, x, y, grid=1, block=4)
    np.testing.assert_array_equal(y, 3)


# ============================================================== fast-path converters against check_args (pure)
_SCALAR_TYPES = [bool_, i8, pk.i16, i32, i64, pk.u8, pk.u16, pk.u32, pk.u64, f16, f32, pk.f64]
_VALUES = [0, 1, -1, 127, 128, -129, 255, 256, 2 ** 15, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 63, 2 ** 64,
           -(2 ** 63), 10 ** 40, True, False, 0.5, -0.0, 1e-45, 6e-8, 65504.0, 65519.0, 65520.0, 3.4028235e38,
           3.5e38, 1e308, float("inf"), float("-inf"), float("nan"), np.int32(7), np.int64(-3), np.uint64(2 ** 63),
           np.float32(1.5), np.float16(2.5), np.float64(0.1), np.bool_(True), np.int8(-8), np.uint16(9), "1", None,
           np.array(3), 1 + 2j]


@pytest.mark.parametrize("t", _SCALAR_TYPES, ids=str)
def test_scalar_converter_agrees_with_check_args(fake, t):
    """Whatever the fast path accepts, check_args accepts, and the bytes are the same."""
    from polykern.runtime.launch import MISS, check_args, scalar_converter
    from polykern_cuda.runtime.abi import packer

    info = FunctionInfo("k", (ArgInfo.scalar("v", t),))
    conv, st = scalar_converter(info.args[0]), packer(info)
    rng = np.random.default_rng(1)
    values = _VALUES + [float(v) for v in rng.standard_normal(300) * 10.0 ** rng.integers(-40, 40, 300)]
    accepted = 0
    for v in values:
        got = conv(v)
        try:
            _, _, (arg,) = check_args(info, (v,), 1, 1)
        except LaunchError:
            assert got is MISS, (t, v)
            continue
        if got is MISS:
            continue
        accepted += 1
        assert st.pack(got) == arg.tobytes(), (t, v)
    assert accepted >= 3  # bool: True, False, numpy.bool_


@pytest.mark.skipif(toolchain.available_compiler() is None, reason="neither NVRTC nor nvcc is installed here")
def test_real_cubin_of_another_arch_is_refused(fake):
    """A cubin the real NVRTC/nvcc made for sm_120, loaded on the (fake) sm_90 device: refused before
    the driver sees it (the fake driver would load it: the cubin's strings name sm_90 too)."""
    gpu, rt = fake
    m = pk.build([saxpy], targets=["cuda -arch=sm_120 -fmt=cubin"])
    fmt, blob = m.on("cuda").image
    assert fmt == "cubin" and blob.startswith(b"\x7fELF")
    with pytest.raises(DeviceError, match="built for sm_120; this device is sm_90") as e:
        m.on("cuda")["saxpy"]  # (the root's m["saxpy"] is a lazy Launcher: it loads nothing)
    assert e.value.name == "CUDA_ERROR_NO_BINARY_FOR_GPU" and gpu.calls["load"] == 0
    with pytest.raises(DeviceError, match="sm_120 code, which runs only on compute capability 12.x"):
        m["saxpy"](4, 1.0, np.ones(4, np.float32), np.ones(4, np.float32), grid=1, block=4)


def test_pointer_check_is_repeated_only_for_a_new_object_or_pointer(fake, monkeypatch):
    gpu, rt = fake
    from polykern_cuda.runtime import libcuda

    asked = []
    monkeypatch.setattr(libcuda, "pointer_context", lambda ptr: asked.append(ptr) or gpu.pointer_context(ptr))
    k = make_module(rt)["saxpy"]
    x, y = CAI(gpu, 8), CAI(gpu, 8)
    for _ in range(4):
        k(8, 1.0, x, y, grid=1, block=8)
    # the first launch misses the fast path (a new grid/block), asks which device the first array is on
    # (routing.quick_device: this one) and is checked on the slow path (pointer_info); the first fast one
    # asks once per array, and then the same live objects reporting the same pointers are not asked again
    assert asked == [x.ptr, x.ptr, y.ptr]
    z = CAI(gpu, 8, ctx=0x9999)  # a new object (another context): asked, and refused
    with pytest.raises(LaunchError, match="another CUDA context"):
        k(8, 1.0, x, z, grid=1, block=8)
    y.__cuda_array_interface__["data"] = (z.ptr, False)  # the same object, another pointer: asked again
    with pytest.raises(LaunchError, match="another CUDA context"):
        k(8, 1.0, x, y, grid=1, block=8)


def test_memory_no_context_owns_takes_the_fast_path(fake, monkeypatch):
    """VMM memory (cuMemCreate: XLA's buffers under polykern.jax) has no context; on this device the slow path
    accepts it, so the fast path does too (on the H200 every JAX call went the slow path: 442 us a call)."""
    from polykern.runtime.staged_launch import StagedLaunch

    gpu, rt = fake
    k = make_module(rt)["saxpy"]
    staged = []
    full = StagedLaunch.staged
    monkeypatch.setattr(StagedLaunch, "staged", lambda self, *a, **kw: staged.append(1) or full(self, *a, **kw))
    x, y = CAI(gpu, 8, ctx=0), CAI(gpu, 8, ctx=0)
    for _ in range(4):
        k(8, 1.0, x, y, grid=1, block=8)
    assert len(staged) == 1  # the first launch (a new grid/block) only
    launches = gpu.calls["launch"]
    k(8, 1.0, CAI(gpu, 8, ctx=0), CAI(gpu, 8, ctx=0), grid=1, block=8)  # new objects: checked, still fast
    assert len(staged) == 1 and gpu.calls["launch"] == launches + 1


# ============================================================== checked mode through this runtime (FAKE)
def test_checked_kernel_passes_hidden_arguments_and_reads_the_record(fake):
    """pk.build(..., bounds_check=True) on CUDA: the wrapper appends the buffer lengths (a u32 buffer)
    and the error record; the runtime copies the record back before the launch returns."""
    import copy as _copy

    from polykern.passes import run_default_passes
    from polykern.passes.bounds_check import bounds_check

    gpu, rt = fake
    base = FunctionInfo.from_ir(bounds_check(run_default_passes(_copy.deepcopy(saxpy.ir))))
    info = FunctionInfo(base.name, base.args, base.launch_tags, 0, dict(base.attrs, entry="saxpy", arch="sm_90"))
    write_id = next(k for k in range(int(info.attrs["bounds_accesses"]))
                    if '"y","write"' in info.attrs[f"bounds_at_{k}"])
    seen = []

    def emu_checked(gpu, params, grid, block):
        n, a, x, y, lens, err = struct.unpack_from("<ifQQQQ", params, 0)
        x_len, y_len = struct.unpack("<II", gpu.read(lens, 8))
        seen.append((n, x_len, y_len))
        if n > y_len:
            gpu.write(err, struct.pack("<iiii", write_id + 1, y_len, 0, 0))

    gpu.kernels["saxpy"] = emu_checked
    k = make_module(rt, infos={"saxpy": info})["saxpy"]
    k(4, 1.0, np.ones(4, np.float32), np.ones(4, np.float32), grid=1, block=4)
    with pytest.raises(LaunchError, match=r"kernel 'saxpy': out-of-bounds write to buffer 'y' at index 3 \(length 3\)"):
        k(5, 1.0, np.ones(5, np.float32), np.ones(3, np.float32), grid=1, block=8)
    assert seen == [(4, 4, 4), (5, 5, 3)]


@pk.kernel
def rev_tile(n: pk.i32, x: pk.Buffer[pk.f32], y: pk.Buffer[pk.f32]):
    tile = pk.shared_dynamic(pk.f32)
    i = pk.local_id(0)
    tile[i] = x[i]
    pk.barrier()
    y[i] = tile[pk.local_size(0) - 1 - i]


def test_dynamic_shared_memory_is_the_launchs_shared_bytes_with_opt_in(fake):
    """pk.shared_dynamic: sharedMemBytes = shared_size * element bytes (fast and slow paths); above 48 KiB
    the kernel opts in with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) once; over the device's
    opt-in limit (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) is a LaunchError before anything is launched."""
    gpu, rt = fake
    info = FunctionInfo.from_ir(rev_tile.ir)
    info = FunctionInfo(info.name, info.args, info.launch_tags, 0, dict(info.attrs, entry="rev_tile", arch="sm_90"))
    assert info.attrs["dynamic_shared"] == "3,4"
    mod = make_module(rt, names=("rev_tile",), infos={"rev_tile": info})
    k = mod.get_function("rev_tile")
    assert k.limit == 232448
    x = rt.to_device(np.zeros(64, np.float32))
    y = rt.empty(64, np.float32)
    k(64, x, y, grid=1, block=64, shared_size=64)            # slow path first, then the fast path
    k(64, x, y, grid=1, block=64, shared_size=256)
    k(64, np.zeros(64, np.float32), np.zeros(64, np.float32), grid=1, block=64, shared_size=20000)
    k(64, x, y, grid=1, block=64, shared_size=30000)
    k(64, x, y, grid=1, block=64, shared_size=100)
    assert gpu.shared == [256, 1024, 80000, 120000, 400]
    assert gpu.fn_attrs == {("rev_tile", 8): 120000}
    with pytest.raises(LaunchError, match="shared_size=60000 is 240000 bytes; the device's limit is 232448"):
        k(64, x, y, grid=1, block=64, shared_size=60000)
    assert len(gpu.shared) == 5
