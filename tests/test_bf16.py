"""bf16 (docs/language.md "bf16"): the host rounding, the conversions and the arithmetic on every runtime
present, against the definition (f32 computed, rounded once to bf16, RNE, NaN stays NaN), the oracle,
launch checks and the refusals."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, bf16, f16, f32, f64, i32, u8
from polykern.errors import KernelTypeError, LaunchError
from polykern.ir.bfloat16 import BF16_DTYPE, bits_to_f32, f32_to_bits
from polykern.testing.compare import compare
from polykern.testing.interp import interpret
from polykern.testing import tier_skip
from conformance.kernels_bf16 import bf16_convert as convert
from runtimes import runnable_targets

BF16_TARGETS = [pytest.param(t, k, id=t.split()[0]) for t, k, skips in runnable_targets() if "bf16" not in skips]

# (f32 bits, bf16 bits): ties to even, carries into the exponent, overflow to inf, subnormals, NaN
ROUNDING = [
    (0x3F800000, 0x3F80),  # 1.0 exact
    (0x3F808000, 0x3F80),  # 1 + 2^-8: a tie, the even neighbour is below
    (0x3F818000, 0x3F82),  # a tie, the even neighbour is above
    (0x3F808001, 0x3F81),  # just above the tie
    (0x3F807FFF, 0x3F80),  # just below the tie
    (0xBF818000, 0xBF82),  # negative tie: to even (magnitude up)
    (0x3FFF8000, 0x4000),  # a tie that carries into the exponent
    (0x7F7F7FFF, 0x7F7F),  # largest value that rounds down to the largest finite bf16
    (0x7F7F8000, 0x7F80),  # overflow: the tie above the largest finite bf16 rounds to inf
    (0xFF7FFFFF, 0xFF80),  # -f32 max -> -inf
    (0x7F800000, 0x7F80),  # inf
    (0xFF800000, 0xFF80),  # -inf
    (0x00000000, 0x0000),  # +0
    (0x80000000, 0x8000),  # -0
    (0x00008000, 0x0000),  # subnormal tie at the smallest bf16 subnormal's half: to even (0)
    (0x00018000, 0x0002),  # subnormal tie: to even (up)
    (0x00010001, 0x0001),  # subnormal, rounds down
    (0x807FFFFF, 0x8080),  # -largest f32 subnormal rounds up to -smallest normal bf16
    (0x7FC00000, 0x7FC0),  # quiet NaN
    (0x7F800001, 0x7FC0),  # signalling NaN, payload below bit 16: quiet, not inf
    (0xFFFF0000, 0xFFFF),  # negative NaN with a full payload: kept
    (0x7FBF8000, 0x7FFF),  # NaN whose rounding would carry: payload kept, quiet bit set
]


def _f32(bits):
    return np.asarray(bits, np.uint32).view(np.float32)


def test_host_rounding_table():
    got = f32_to_bits(_f32([b for b, _ in ROUNDING]))
    assert [hex(int(g)) for g in got] == [hex(w) for _, w in ROUNDING]
    assert pk.bf16(1.00390625) == np.float32(1.0) and pk.bf16(1e39) == np.float32(np.inf)
    assert bf16.max_value() == float(_f32(0x7F7F0000))


def test_host_rounding_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(7)
    bits = np.concatenate([rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32),
                           np.array([b for b, _ in ROUNDING], np.uint32)])
    x = bits.view(np.float32)
    ours = f32_to_bits(x)
    with np.errstate(invalid="ignore"):
        theirs = x.astype(ml_dtypes.bfloat16)
    nan = np.isnan(x)
    assert np.array_equal(ours[~nan], theirs.view(np.uint16)[~nan])
    assert np.isnan(bits_to_f32(ours[nan])).all()


def _conversion_inputs():
    rng = np.random.default_rng(3)
    bits = np.concatenate([np.array([b for b, _ in ROUNDING], np.uint32),
                           rng.integers(0, 1 << 32, 4000, dtype=np.uint64).astype(np.uint32)])
    return bits.view(np.float32)


@pytest.mark.parametrize("target,kind", BF16_TARGETS)
def test_conversion_is_exact_on_every_runtime(target, kind):
    x = _conversion_inputs()
    n = x.size
    z, back = pk.bf16_array(np.zeros(n, np.uint16)), np.zeros(n, np.float32)
    pk.build([convert], [target]).on(kind)["bf16_convert"](n, x, z, back, grid=(n + 63) // 64, block=64)
    want = f32_to_bits(x)
    bad = np.nonzero(z.view(np.uint16) != want)[0]
    assert not bad.size, [(hex(int(x.view(np.uint32)[i])), hex(int(z.view(np.uint16)[i])), hex(int(want[i])))
                          for i in bad[:8]]
    assert np.array_equal(back.view(np.uint32), want.astype(np.uint32) << 16)
    oracle = interpret(convert, [n, x, pk.bf16_array(np.zeros(n, np.uint16)), np.zeros(n, np.float32)],
                       grid=(n + 63) // 64, block=64)
    ref = oracle.buffers["h"].view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(ref[~nan], want[~nan]) and np.isnan(bits_to_f32(ref[nan])).all()


@pk.kernel
def arith(n: i32, a: Buffer[bf16, "readonly"], b: Buffer[bf16, "readonly"], o: Buffer[bf16], c: Buffer[i32],
          w: Buffer[f64]):
    i = pk.global_id(0)
    if i < n:
        x = a[i]
        y = b[i]
        o[i * 10] = x + y
        o[i * 10 + 1] = x - y
        o[i * 10 + 2] = x * y
        o[i * 10 + 3] = x / y
        o[i * 10 + 4] = pk.fma(x, y, bf16(0.3))
        o[i * 10 + 5] = -pk.sqrt(pk.abs(x))
        o[i * 10 + 6] = pk.max(x, y) * 2.0
        o[i * 10 + 7] = bf16(i * 1000003 + 16777217)        # i32 -> f32 -> bf16
        o[i * 10 + 8] = bf16(f64(x) * f64(y) + 1.0e-30)      # f64 -> f32 -> bf16
        o[i * 10 + 9] = bf16(f16(y)) if x < y else x         # bf16 -> f16 (RNE), back exactly
        c[i] = i32(x * bf16(64.0)) + i32(u8(y))
        w[i] = f64(x) + f64(y)


def _definition(a, b, n):
    """What arith computes, from the definition: f32 operations, each result rounded to bf16."""
    r = lambda v: bits_to_f32(f32_to_bits(np.asarray(v, np.float32)))  # noqa: E731
    x, y = bits_to_f32(a), bits_to_f32(b)
    i = np.arange(n)
    with np.errstate(all="ignore"):
        fma = (x.astype(np.float64) * y + np.float64(np.float32(r(0.3)))).astype(np.float32)  # exact product
        cols = [r(x + y), r(x - y), r(x * y), r(x / y), r(fma), r(-np.sqrt(np.abs(x))), r(np.maximum(x, y) * 2),
                r((i * 1000003 + 16777217).astype(np.int32).astype(np.float32)),
                r((x.astype(np.float64) * y + 1e-30).astype(np.float32)),
                np.where(x < y, y.astype(np.float16).astype(np.float32), x)]
        c = np.trunc(r(x * 64)).astype(np.int32) + np.trunc(y).astype(np.int32)
    return f32_to_bits(np.stack(cols, 1).reshape(-1)), c, x.astype(np.float64) + y


@pytest.mark.parametrize("target,kind", BF16_TARGETS)
def test_arithmetic_matches_definition_and_oracle(target, kind):
    rng = np.random.default_rng(11)
    n = 512
    a = f32_to_bits(rng.uniform(0.5, 100, n).astype(np.float32) * rng.choice([-1, 1], n))
    b = f32_to_bits(rng.uniform(1.0, 60, n).astype(np.float32))
    a[:4] = f32_to_bits(np.array([1.0, 3.0, 255.0, 1.5], np.float32))   # ties in + and *
    b[:4] = f32_to_bits(np.array([2.0 ** -8, 2.0 ** -7 * 3, 1.0, 1.0 + 2 ** -7], np.float32))
    args = lambda: [n, pk.bf16_array(a), pk.bf16_array(b), pk.bf16_array(np.zeros(10 * n, np.uint16)),  # noqa: E731
                    np.zeros(n, np.int32), np.zeros(n, np.float64)]
    got = args()
    pk.build([arith], [target]).on(kind)["arith"](*got, grid=n // 64, block=64)
    want, want_c, want_w = _definition(a, b, n)
    oracle = interpret(arith, args(), grid=n // 64, block=64)
    assert np.array_equal(oracle.buffers["o"].view(np.uint16), want)
    assert np.array_equal(oracle.buffers["c"], want_c) and np.array_equal(oracle.buffers["w"], want_w)
    result = compare(oracle, {"o": got[3], "c": got[4], "w": got[5]}, target.split()[0],
                     names=["o", "c", "w"])
    assert not result.mismatches, result.mismatches[:5]
    if target.split()[0] in ("llvm", "opencl"):  # CPU runtimes: every f32 operation exact, bit for bit
        assert np.array_equal(got[3].view(np.uint16), want)


@pk.kernel
def wide(x: Buffer[bf16, "readonly"], y: Buffer[bf16]):
    i = pk.global_id(0)
    a, b, c, d = pk.vload(x, i, 4)
    pk.vstore(y, i, (b, a + bf16(1.0), d, c))


@pytest.mark.parametrize("target,kind", BF16_TARGETS)
def test_wide_access_of_bf16(target, kind):
    """pk.vload/pk.vstore of bf16: groups of 16-bit elements (fused or not, the same bits)."""
    x = pk.bf16_array(np.arange(64, dtype=np.float32) * 1.5)
    y = pk.bf16_array(np.zeros(64, np.uint16))
    pk.build([wide], [target]).on(kind)["wide"](x, y, grid=4, block=4)
    v = bits_to_f32(x).reshape(16, 4)
    want = np.stack([v[:, 1], bits_to_f32(f32_to_bits(v[:, 0] + 1)), v[:, 3], v[:, 2]], 1).reshape(-1)
    np.testing.assert_array_equal(bits_to_f32(y), want)


def test_bf16_tie_in_kernel_arithmetic():
    """1 + 2^-8 is a tie in bf16: + rounds it to even (1.0); 1 + 3 * 2^-8 rounds up to 1 + 2^-6."""
    @pk.kernel
    def ties(o: Buffer[bf16]):
        one = bf16(1.0)
        o[0] = one + bf16(0.00390625)
        o[1] = one + bf16(0.01171875)
        o[2] = bf16(3.0e38) * bf16(2.0)          # overflow to inf
        o[3] = bf16(0.0) / bf16(0.0)             # NaN
        o[4] = bf16(1.0e-39) * bf16(0.5)         # a subnormal, halved: 2^-133 steps
    o = pk.bf16_array(np.zeros(5, np.uint16))
    pk.build([ties], ["llvm"])["ties"](o, grid=1, block=1)
    v = bits_to_f32(o)
    assert v[0] == 1.0 and v[1] == 1.0 + 2 ** -6 and v[2] == np.inf and np.isnan(v[3])
    assert v[4] == bits_to_f32(f32_to_bits(np.float32(bits_to_f32(f32_to_bits(np.float32(1e-39))) * 0.5)))


def test_launch_checks_bf16_arrays():
    @pk.kernel
    def copy(x: Buffer[bf16, "readonly"], y: Buffer[pk.u16]):
        y[0] = pk.u16(i32(f32(x[0])))
    k = pk.build([copy], ["llvm"])["copy"]
    with pytest.raises(LaunchError, match=r"argument 'x' .*expected bf16 elements .*got uint16"):
        k(np.zeros(2, np.uint16), np.zeros(2, np.uint16), grid=1, block=1)
    with pytest.raises(LaunchError, match=r"argument 'x' .*expected bf16 elements .*got float32"):
        k(np.zeros(2, np.float32), np.zeros(2, np.uint16), grid=1, block=1)
    with pytest.raises(LaunchError, match=r"argument 'y' .*expected uint16 elements \(u16\), got bf16"):
        k(pk.bf16_array(np.zeros(2, np.uint16)), pk.bf16_array(np.zeros(2, np.uint16)), grid=1, block=1)
    bits = np.array([0x4120, 0], np.uint16)  # 10.0
    y = np.zeros(2, np.uint16)
    k(pk.bf16_array(bits), y, grid=1, block=1)
    assert y[0] == 10
    assert pk.bf16_array(np.array([10.0, 1.00390625])).view(np.uint16).tolist() == [0x4120, 0x3F80]
    ml_dtypes = pytest.importorskip("ml_dtypes")
    y[:] = 0
    k(np.array([7.0, 0], ml_dtypes.bfloat16), y, grid=1, block=1)
    assert y[0] == 7


def test_refusals_are_located():
    @pk.kernel
    def scalar_param(s: bf16, o: Buffer[bf16]):
        o[0] = s

    @pk.kernel
    def atomic(o: Buffer[bf16]):
        pk.atomic_add(o, 0, bf16(1.0))

    @pk.kernel
    def subgroup(o: Buffer[bf16]):
        o[0] = pk.subgroup_add(o[0])

    with pytest.raises(KernelTypeError, match=r"test_bf16.py:\d+:\d+: parameter 's': a bf16 scalar cannot be a "
                                              r"kernel argument .*pass an f32 and convert with bf16\(s\)"):
        scalar_param.ir
    with pytest.raises(KernelTypeError, match=r"test_bf16.py:\d+:\d+: atomic_add\(\) is not defined for bf16"):
        atomic.ir
    with pytest.raises(KernelTypeError, match=r"test_bf16.py:\d+:\d+: subgroup_add\(\) is not defined for bf16"):
        subgroup.ir
    with pytest.raises(KernelTypeError, match=r"kernels_bf16.py:\d+:1: webgpu does not support bf16 \(buffer argument 'h'\)"):
        pk.build([convert], ["webgpu"])


def test_cli_run_makes_bf16_arguments(tmp_path, capsys):
    """`polykern run` fills a Buffer[bf16] with random bf16 values and prints them as values: bf16_convert's
    h (bf16(x)) and back (f32(h)) print the same numbers."""
    from polykern.cli import main

    path = str(tmp_path / "k.kbin")
    pk.build([convert], ["llvm"]).export(path)
    assert main(["run", path, "bf16_convert", "--n", "64"]) == 0
    lines = {ln.split("[:8]")[0].strip(): ln.split("=")[1].split("sum")[0].strip()
             for ln in capsys.readouterr().out.splitlines() if "[:8]" in ln}
    assert lines["h"] == lines["back"] and lines["h"] != lines["x"]



@pytest.mark.parametrize("runtime", ["polykern_opencl.runtime", "polykern_vulkan.runtime"])
def test_device_arrays_of_bf16(runtime):
    """DeviceArrays of pk.BF16_DTYPE: fill rounds the value to bf16 (it cast the float into the record:
    1.5 became the bits 0x0001), to_device/numpy keep the bits, kernels read and write them."""
    import importlib

    target = runtime.split(".")[0][len("polykern_"):]
    if target not in {t.split()[0] for t, _, _ in runnable_targets()}:
        tier_skip.skip_runtime(target, f"no {target} runtime here")
    rt = importlib.import_module(runtime)
    h = rt.empty(64, pk.BF16_DTYPE)
    h.fill(1.00390625)  # a tie: rounds to 1.0
    assert (h.numpy().view(np.uint16) == 0x3F80).all()
    x = np.linspace(-2, 2, 64).astype(np.float32)
    back = rt.zeros(64, np.float32)
    pk.build([convert], [target])["bf16_convert"](64, rt.to_device(x), h, back, grid=1, block=64)
    np.testing.assert_array_equal(h.numpy().view(np.uint16), f32_to_bits(x))
    np.testing.assert_array_equal(rt.to_device(pk.bf16_array(x)).numpy().view(np.uint16), f32_to_bits(x))


def test_dlpack_is_used_where_the_cuda_interface_refuses_the_dtype():
    """torch's __cuda_array_interface__ raises for bfloat16 (no typestr) while its DLPack export works: a
    launch takes the DLPack path then (here a host array behind both, with the CAI property raising)."""
    class Tensor:
        def __init__(self, a):
            self.a = a

        @property
        def __cuda_array_interface__(self):
            raise TypeError("dtype bfloat16 is not supported by __cuda_array_interface__")

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    x = np.linspace(-2, 2, 8).astype(np.float32)
    h, back = pk.bf16_array(np.zeros(8, np.uint16)), np.zeros(8, np.float32)
    pk.build([convert], ["llvm"])["bf16_convert"](8, Tensor(x), h, back, grid=1, block=8)
    np.testing.assert_array_equal(h.view(np.uint16), f32_to_bits(x))

    class NoDLPack:
        __cuda_array_interface__ = Tensor.__cuda_array_interface__

    # nothing to fall back on: a LaunchError naming the argument and the protocol
    with pytest.raises(LaunchError, match="cannot read its __cuda_array_interface__.*not supported by"):
        pk.build([convert], ["llvm"])["bf16_convert"](8, NoDLPack(), h, back, grid=1, block=8)
