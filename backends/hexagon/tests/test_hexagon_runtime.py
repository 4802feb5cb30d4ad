"""The emulated Hexagon runtime (runtime/): builtins against Python, the launch protocol, errors.

Needs qemu-hexagon-static, clang and ld.lld (Debian: qemu-user-static clang lld); each test that
cannot run says so. The conformance suite (tests/test_conformance.py, ``*_hexagon``) runs every
case on this runtime as well.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import struct
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, f64, i32
from polykern.runtime import launch_stream as protocol
from polykern.errors import LaunchError
from polykern.testing import tier_skip

HERE = Path(__file__).resolve().parent
RUNTIME = HERE.parent / "polykern_hexagon" / "runtime"

try:
    from polykern_hexagon.runtime import toolchain

    TOOLS = toolchain.find_tools()
    WHY = ""
except ImportError as e:  # BackendUnavailableError is an ImportError
    TOOLS, WHY = None, str(e)

needs_runtime = tier_skip.skipif("hexagon-emu", TOOLS is None, reason=f"no emulated Hexagon runtime here: {WHY}")


# ------------------------------------------------------------------ harness protocol


def test_protocol_constants_match_the_harness_source():
    src = (RUNTIME / "harness.c").read_text()
    from polykern.runtime import launch_stream as p

    defines = dict(re.findall(r"#define (PK_\w+) (\w+)", src))
    assert int(defines["PK_MAGIC"].rstrip("u"), 16) == p.MAGIC
    assert struct.pack("<I", int(defines["PK_DONE"].rstrip("u"), 16)) == p.DONE
    assert int(defines["PK_RECORD"].rstrip("u")) == p.RECORD
    assert int(defines["PK_MAX_ARGS"].rstrip("u")) == p.MAX_ARGS


# ------------------------------------------------------------------ builtins against Python


def _check_exe(tmp_path_factory):
    tools = TOOLS
    folder = tmp_path_factory.mktemp("hexcheck")
    obj, exe = folder / "check.o", folder / "check.elf"
    r = subprocess.run([tools.clang, *[f for f in toolchain.CFLAGS if f != "-Werror"], "-O1", "-c",
                        str(HERE / "builtins_check.c"), "-o", str(obj)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    harness, builtins = toolchain.support_objects(tools)
    r = subprocess.run([tools.lld, "-static", "-e", "_start", harness, str(obj), builtins, "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(exe)


@pytest.fixture(scope="module")
def check_exe(tmp_path_factory):
    if TOOLS is None:
        tier_skip.skip("hexagon-emu", f"no emulated Hexagon runtime here: {WHY}")
    return _check_exe(tmp_path_factory)


OPS = {"udiv64": 0, "umod64": 1, "sdiv64": 2, "smod64": 3, "udiv32": 4, "umod32": 5, "sdiv32": 6, "smod32": 7,
       "ddiv": 8, "sqrt": 9, "fma": 10, "rint": 11, "floor": 12, "ceil": 13, "fmin": 14, "fmax": 15, "fmod": 16,
       "sqrtf": 17, "fmaf": 18, "dadd": 19, "dsub": 20, "dmul": 21}


def run_op(exe, op, a, b=None, c=None) -> np.ndarray:
    n = len(a)
    cols = [np.ascontiguousarray(v if v is not None else np.zeros(n), dtype=np.uint64) for v in (a, b, c)]
    data = protocol.encode([(protocol.SCALAR, struct.pack("<i", OPS[op])), (protocol.SCALAR, struct.pack("<i", n)),
                            *[(protocol.READ, x.tobytes()) for x in cols], (protocol.WRITE, bytes(8 * n))],
                           (1, 1, 1, 1, 1, 1))
    r = subprocess.run([TOOLS.qemu, "-cpu", toolchain.QEMU_CPU, exe], input=data, capture_output=True)
    assert r.returncode == 0, r.stderr
    out, = protocol.split_outputs(r.stdout, [8 * n])
    return np.frombuffer(out, dtype=np.uint64).copy()


def bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).view(np.uint64)


def same_f64(got_bits, want) -> None:
    got = got_bits.view(np.float64)
    want = np.asarray(want, dtype=np.float64)
    both_nan = np.isnan(got) & np.isnan(want)
    bad = ~both_nan & (got_bits != want.view(np.uint64))
    assert not bad.any(), list(zip(got[bad][:5], want[bad][:5]))


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, 1e-310, -1e-310, 5e-324,
                    2.0 ** 52, 2.0 ** 52 + 1, -(2.0 ** 53), 1.7976931348623157e308, math.inf, -math.inf, math.nan,
                    0.49999999999999994, 4503599627370495.5, 1e300, 1e-300, 7.0, 0.1])


def random_doubles(rng, n):
    raw = rng.integers(0, 2 ** 64, n, dtype=np.uint64).view(np.float64)
    moderate = rng.standard_normal(n) * 2.0 ** rng.integers(-40, 40, n)
    return np.concatenate([SPECIAL, raw, moderate])


def test_integer_division_matches_c(check_exe):
    rng = np.random.default_rng(7)
    n = 400
    a = rng.integers(0, 2 ** 64, n, dtype=np.uint64)
    b = rng.integers(1, 2 ** 64, n, dtype=np.uint64)
    b[:100] = rng.integers(1, 1000, 100, dtype=np.uint64)
    b[100:200] >>= np.uint64(33)
    b[b == 0] = 1
    a[:4] = [2 ** 63, 2 ** 63, 0, 2 ** 64 - 1]
    b[:4] = [2 ** 64 - 1, 3, 5, 1]  # INT64_MIN / -1 wraps (the codegen never passes it; C leaves it undefined)
    ua, ub = [int(x) for x in a], [int(x) for x in b]

    def s(x, w):
        return x - (1 << w) if x >> (w - 1) else x

    def cdiv(x, y):
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q

    m64, m32 = (1 << 64) - 1, (1 << 32) - 1
    assert run_op(check_exe, "udiv64", a, b).tolist() == [x // y for x, y in zip(ua, ub)]
    assert run_op(check_exe, "umod64", a, b).tolist() == [x % y for x, y in zip(ua, ub)]
    assert run_op(check_exe, "sdiv64", a, b).tolist() == [cdiv(s(x, 64), s(y, 64)) & m64 for x, y in zip(ua, ub)]
    assert run_op(check_exe, "smod64", a, b).tolist() == [
        (s(x, 64) - cdiv(s(x, 64), s(y, 64)) * s(y, 64)) & m64 for x, y in zip(ua, ub)]
    a32, b32 = [x & m32 for x in ua], [(y & m32) or 1 for y in ub]
    b32[1] = 3
    a, b = np.array(a32, np.uint64), np.array(b32, np.uint64)
    assert run_op(check_exe, "udiv32", a, b).tolist() == [x // y for x, y in zip(a32, b32)]
    assert run_op(check_exe, "umod32", a, b).tolist() == [x % y for x, y in zip(a32, b32)]
    assert run_op(check_exe, "sdiv32", a, b).tolist() == [cdiv(s(x, 32), s(y, 32)) & m32 for x, y in zip(a32, b32)]
    assert run_op(check_exe, "smod32", a, b).tolist() == [
        (s(x, 32) - cdiv(s(x, 32), s(y, 32)) * s(y, 32)) & m32 for x, y in zip(a32, b32)]


def test_f64_division_sqrt_rounding_min_max_fmod_are_exact(check_exe):
    rng = np.random.default_rng(11)
    x = random_doubles(rng, 300)
    y = np.concatenate([SPECIAL[::-1], random_doubles(rng, 300)[len(SPECIAL):]])
    y = np.resize(y, x.shape)
    with np.errstate(all="ignore"):
        same_f64(run_op(check_exe, "ddiv", bits(x), bits(y)), x / y)
        same_f64(run_op(check_exe, "sqrt", bits(x)), np.sqrt(x))
        same_f64(run_op(check_exe, "rint", bits(x)), np.rint(x))
        same_f64(run_op(check_exe, "floor", bits(x)), np.floor(x))
        same_f64(run_op(check_exe, "ceil", bits(x)), np.ceil(x))
        same_f64(run_op(check_exe, "fmin", bits(x), bits(y)), np.fmin(x, y))
        same_f64(run_op(check_exe, "fmax", bits(x), bits(y)), np.fmax(x, y))
        same_f64(run_op(check_exe, "fmod", bits(x), bits(y)), np.fmod(x, y))
    # minNum/maxNum order signed zeros
    z = np.array([0.0, -0.0]), np.array([-0.0, 0.0])
    assert np.signbit(run_op(check_exe, "fmin", bits(z[0]), bits(z[1])).view(np.float64)).all()
    assert not np.signbit(run_op(check_exe, "fmax", bits(z[0]), bits(z[1])).view(np.float64)).any()


def test_soft_f64_add_sub_mul_are_correctly_rounded(check_exe):
    """__hexagon_adddf3/subdf3/muldf3 (hexagonv65/v66 objects call them) against x86-64's IEEE ops,
    on random bit patterns, specials, subnormals and near-cancellations."""
    rng = np.random.default_rng(13)
    x = random_doubles(rng, 400)
    y = np.resize(np.concatenate([SPECIAL[::-1], random_doubles(rng, 400)[len(SPECIAL):]]), x.shape)
    close = x[len(SPECIAL):len(SPECIAL) + 100]
    y[len(SPECIAL):len(SPECIAL) + 100] = close * (1 + rng.standard_normal(100) * 2.0 ** -40)  # cancellation
    y[len(SPECIAL) + 100:len(SPECIAL) + 150] = x[len(SPECIAL) + 100:len(SPECIAL) + 150] * 2.0 ** -rng.integers(
        1, 70, 50)  # alignment shifts across the guard bits
    with np.errstate(all="ignore"):
        same_f64(run_op(check_exe, "dadd", bits(x), bits(y)), x + y)
        same_f64(run_op(check_exe, "dsub", bits(x), bits(y)), x - y)
        same_f64(run_op(check_exe, "dsub", bits(x), bits(x)), x - x)
        same_f64(run_op(check_exe, "dmul", bits(x), bits(y)), x * y)
        tiny = np.array([2.2250738585072014e-308, 1e-160, 5e-324, -3e-310])
        same_f64(run_op(check_exe, "dmul", bits(tiny), bits(tiny[::-1] * 1e-3)), tiny * (tiny[::-1] * 1e-3))


def exact_fma(a, b, c) -> float:
    if not all(map(math.isfinite, (a, b, c))):
        return a * b + c
    r = Fraction(a) * Fraction(b) + Fraction(c)
    if r == 0:
        return a * b + c  # the sign of an exact zero follows IEEE's rules, as unfused
    try:
        return float(r)  # Fraction -> float rounds correctly
    except OverflowError:
        return math.inf if r > 0 else -math.inf


def test_f64_fma_is_correctly_rounded(check_exe):
    rng = np.random.default_rng(3)
    n = 400
    a = rng.standard_normal(n) * 2.0 ** rng.integers(-300, 300, n)
    b = rng.standard_normal(n) * 2.0 ** rng.integers(-300, 300, n)
    c = rng.standard_normal(n) * 2.0 ** rng.integers(-600, 600, n)
    c[:150] = -(a[:150] * b[:150])  # cancellation: the result is the product's rounding error
    c[150:200] = -(a[150:200] * b[150:200]) * (1 + 2.0 ** -30)
    a[200:210] = [1.0, 1.0, 0.0, math.inf, math.nan, 1e308, -1e308, 3.0, 1 + 2 ** -52, 1 - 2 ** -53]
    b[200:210] = [1.0, -1.0, math.inf, 0.0, 1.0, 10.0, 10.0, 1 / 3, 1 - 2 ** -52, 1 + 2 ** -52]
    c[200:210] = [-1.0, 1.0, 1.0, 1.0, 1.0, -math.inf, 1e308, -1.0, -1.0, -1.0]
    want = np.array([exact_fma(float(x), float(y), float(z)) for x, y, z in zip(a, b, c)])
    normal = ~(np.abs(want) < 2.2250738585072014e-308) | (want == 0)  # subnormal results: see builtins.c
    got = run_op(check_exe, "fma", bits(a), bits(b), bits(c))
    same_f64(got[normal], want[normal])


def nearest_f32(r: Fraction) -> np.float32:
    f = np.float32(float(r))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    cands = [x for x in cands if np.isfinite(x)]
    best = min(cands, key=lambda x: (abs(Fraction(float(x)) - r), int(np.array(x).view(np.uint32)) & 1))
    return np.float32(best)


def test_f32_sqrt_and_fma(check_exe):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(300) * 2.0 ** rng.integers(-60, 60, 300)).astype(np.float32)
    y = (rng.standard_normal(300) * 2.0 ** rng.integers(-60, 60, 300)).astype(np.float32)
    z = (rng.standard_normal(300) * 2.0 ** rng.integers(-100, 100, 300)).astype(np.float32)
    z[:100] = -(x[:100] * y[:100])
    xs = np.abs(x)
    got = run_op(check_exe, "sqrtf", xs.view(np.uint32).astype(np.uint64)).astype(np.uint32).view(np.float32)
    assert np.array_equal(got, np.sqrt(xs))
    got = run_op(check_exe, "fmaf", *(v.view(np.uint32).astype(np.uint64) for v in (x, y, z)))
    got = got.astype(np.uint32).view(np.float32)
    want = np.array([nearest_f32(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))
                     if (float(a) * float(b) + float(c)) != 0 else np.float32(a * b + c) for a, b, c in zip(x, y, z)],
                    np.float32)
    tiny = np.abs(want) < np.finfo(np.float32).tiny
    assert np.array_equal(got[~tiny], want[~tiny])


# ------------------------------------------------------------------ launches


@pk.kernel
def scale_add(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@needs_runtime
def test_kbin_round_trip_runs_on_the_emulator(tmp_path):
    path = tmp_path / "k.kbin"
    pk.build([scale_add], targets=["hexagon"]).export(str(path))
    loaded = pk.load(str(path))
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, np.float32)
    loaded.on("hexagon")["scale_add"](1000, 3.0, x, y, grid=16, block=64)
    assert np.array_equal(y, 3 * x + 1)


@needs_runtime
def test_read_only_buffers_are_not_copied_back_and_scalars_pass():
    mod = pk.build([scale_add], targets=["hexagon"]).on("hexagon")
    x = np.arange(10, dtype=np.float32)
    x.flags.writeable = False  # a read-only parameter accepts a read-only array
    y = np.zeros(10, np.float32)
    mod["scale_add"](7, -2.0, x, y, grid=1, block=16)
    assert np.array_equal(y[:7], -2 * x[:7]) and not y[7:].any()


@needs_runtime
def test_launch_errors_are_polykern_errors():
    mod = pk.build([scale_add], targets=["hexagon"]).on("hexagon")
    x = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match="takes 4 arguments"):
        mod["scale_add"](4, 1.0, x, grid=1, block=4)
    with pytest.raises(LaunchError, match="float32"):
        mod["scale_add"](4, 1.0, x, np.zeros(4, np.float64), grid=1, block=4)


@pk.kernel
def big_private(n: i32, y: Buffer[f32]):
    t = pk.local(f32, 4096)
    i = pk.global_id(0)
    t[i % 4096] = 1.0
    pk.barrier()
    if i < n:
        y[i] = t[i % 4096]


@needs_runtime
def test_stack_need_is_checked_before_running(monkeypatch):
    mod = pk.build([big_private], targets=["hexagon"]).on("hexagon")
    monkeypatch.setenv("POLYKERN_HEXAGON_STACK_MB", "2")
    with pytest.raises(LaunchError, match="POLYKERN_HEXAGON_STACK_MB"):
        mod["big_private"](1, np.zeros(1024, np.float32), grid=1, block=1024)


@pk.kernel
def f64_arith(n: i32, x: Buffer[f64, "readonly"], y: Buffer[f64, "readonly"], o: Buffer[f64]):
    i = pk.global_id(0)
    if i < n:
        o[i] = (x[i] + y[i]) * x[i] - y[i] / x[i]


@needs_runtime
@pytest.mark.parametrize("mcpu", ["hexagonv65", "hexagonv66", "hexagonv67", "hexagonv73"])
def test_every_dsp_version_runs(mcpu):
    """v65/v66 objects call the runtime's software f64 add/subtract/multiply; later ones have
    the instructions. Either way the results are IEEE's."""
    mod = pk.build([f64_arith], targets=[f"hexagon -mcpu={mcpu}"]).on("hexagon")
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(500) * 1e3, rng.standard_normal(500)
    o = np.zeros(500)
    mod["f64_arith"](500, x, y, o, grid=8, block=64)
    np.testing.assert_array_equal(o, (x + y) * x - y / x)


@needs_runtime
def test_a_failing_emulated_run_is_a_device_error():
    """The harness refuses a malformed launch with a message; the runtime turns a failed run into
    a DeviceError carrying QEMU's exit status and the harness's message."""
    kern = pk.build([scale_add], targets=["hexagon"]).on("hexagon")["scale_add"]
    r = subprocess.run([TOOLS.qemu, "-cpu", toolchain.QEMU_CPU, kern.exe], input=b"XXXX" + bytes(36),
                       capture_output=True)
    assert r.returncode == 3 and b"bad magic" in r.stderr
    short = protocol.encode([(protocol.SCALAR, b"\0" * 4)], (1, 1, 1, 1, 1, 1))[:-10]
    r = subprocess.run([TOOLS.qemu, "-cpu", toolchain.QEMU_CPU, kern.exe], input=short, capture_output=True)
    assert r.returncode == 3 and b"stdin ended" in r.stderr


def test_backends_names_the_package_to_install_without_qemu(tmp_path):
    """With no qemu-hexagon on PATH the runtime is unavailable and says what to install."""
    env = dict(os.environ, POLYKERN_HEXAGON_QEMU="no-such-qemu-hexagon")
    code = ("from polykern import backends; backends.load_all(); r = backends.record_for_kind('hexagon'); "
            "print(r.runtime_available, r.runtime_reason)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("False") and "no-such-qemu-hexagon" in out.stdout
    bindir = tmp_path / "bin"
    bindir.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "POLYKERN_HEXAGON_QEMU"}
    env["PATH"] = str(bindir)  # nothing on PATH: no qemu, no clang, no ld.lld
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("False") and "apt-get install qemu-user-static clang lld" in out.stdout


def test_codegen_never_realigns_the_stack():
    """The stack-realignment base register (r16) is what LLVM's Hexagon backend mis-orders: with
    barriers (per-work-item allocas) and an over-aligned array the frame was realigned and the
    caller's memory corrupted. Objects must never realign."""

    @pk.kernel
    def rot(n: i32, y: Buffer[f32]):
        s = pk.shared(f32, 64)
        t = pk.local_id(0)
        s[t] = f32(t)
        pk.barrier()
        y[pk.global_id(0)] = s[(t + 1) % 64]

    asm = pk.build([rot], targets=["hexagon"]).imports[0].inspect_source()
    assert "rot__range" in asm and not re.search(r"r29 = and\(r29,#-", asm)


@pk.kernel
def nan_math(x: Buffer[f32, "readonly"], o: Buffer[f32]):
    i = pk.global_id(0)
    v = x[i]
    o[i * 4 + 0] = pk.exp(v)
    o[i * 4 + 1] = pk.exp2(v)
    o[i * 4 + 2] = pk.tanh(v)
    o[i * 4 + 3] = pk.pow(v, 2.0)


@needs_runtime
def test_math_of_nan_is_nan():
    """The portable math's range clamps keep NaN on Hexagon too (LLVM's Hexagon backend turned the
    clamp into sfmin/sfmax, which drop a NaN: exp(nan) was 0, tanh(nan) 1)."""
    mod = pk.build([nan_math], targets=["hexagon"]).on("hexagon")
    x = np.array([np.nan, 0.5], np.float32)
    o = np.zeros(8, np.float32)
    mod["nan_math"](x, o, grid=1, block=2)
    assert np.isnan(o[:4]).all(), o[:4]
    np.testing.assert_allclose(o[4:], [np.exp(0.5), 2 ** 0.5, np.tanh(0.5), 0.25], rtol=1e-6)


@needs_runtime
def test_concurrent_launches_from_threads():
    """Each launch is its own emulated process; the kernel is linked once (lazily, thread-safe)."""
    from concurrent.futures import ThreadPoolExecutor

    mod = pk.build([scale_add], targets=["hexagon"]).on("hexagon")

    def one(k):
        x = np.full(300, k, np.float32)
        y = np.ones(300, np.float32)
        mod["scale_add"](300, 2.0, x, y, grid=5, block=64)
        return bool(np.array_equal(y, 2 * x + 1))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(one, range(8)))
    assert len({mod["scale_add"].exe for _ in range(3)}) == 1
