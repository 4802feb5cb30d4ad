"""Specialization (lang/specialize.py): pk.constexpr and pk.dtype parameters, kernel.specialize, names,
the artifact's record, constexpr sizes and unrolled loops, on every runtime here, and the errors."""
import inspect

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, f64, i32, u8
from polykern.errors import KernelTypeError
from polykern.ir import nodes as ir
from polykern.passes.unroll import MAX_TRIPS, REGISTER_TRIPS
from polykern.testing.interp import interpret
from runtimes import compile_targets, runnable_targets

import lang_future_kernels

RUNTIMES = runnable_targets()


def _targets(T=None):
    out = []
    for target, kind, skips in RUNTIMES:
        reason = skips.get(T.name) if T is not None else None
        marks = [pytest.mark.skip(reason=f"{kind}: {reason}")] if reason else []
        out.append(pytest.param(target, kind, id=kind, marks=marks))
    return out


@pk.kernel
def axpy(T: pk.dtype, n: i32, a: "T", x: Buffer["T", "readonly"], y: Buffer["T"]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@pk.func
def tile_total(t: pk.Shared["T"], T: pk.dtype, N: pk.constexpr) -> "T":
    s: "T" = 0
    for k in range(N):
        s += t[k]
    return s


@pk.kernel
def block_sums(T: pk.dtype, BLOCK: pk.constexpr, x: Buffer["T", "readonly"], out: Buffer["T"]):
    tile = pk.shared(T, BLOCK)
    regs = pk.local(T, BLOCK // 8)
    lid = pk.local_id(0)
    tile[lid] = x[pk.global_id(0)]
    pk.barrier()
    if lid == 0:
        for r in range(BLOCK // 8):  # constexpr bounds: unrolled
            part: "T" = 0
            for k in range(8):
                part += tile[r * 8 + k]
            regs[r] = part
        acc = T(0)
        for r in range(BLOCK // 8):
            acc += regs[r]
        out[pk.group_id(0) * 2] = acc
        out[pk.group_id(0) * 2 + 1] = tile_total(tile, T, BLOCK)


def _name_kinds():
    return [(f32, "f32"), (i32, "i32")]


@pytest.mark.parametrize("T", [f32, i32, f16], ids=str)
@pytest.mark.parametrize("target,kind", _targets())
def test_axpy_per_type_on_runtime(target, kind, T):
    k = axpy.specialize(T=T)
    try:
        mod = pk.build([k], targets=[target]).on(kind)
    except KernelTypeError as e:
        if T.name in str(e):
            pytest.skip(f"{kind}: {e}")
        raise
    n = 50
    x = (np.arange(64) % 7).astype(T.numpy)
    y = (np.arange(64) % 5).astype(T.numpy)
    want = y.copy()
    want[:n] = (T.numpy.type(3) * x[:n] + y[:n]).astype(T.numpy)
    mod[k.name](n, T(3), x, y, grid=1, block=64)
    assert y.tolist() == want.tolist()


@pytest.mark.parametrize("block", [16, 128])
@pytest.mark.parametrize("target,kind", _targets())
def test_constexpr_sizes_and_loops_on_runtime(target, kind, block):
    k = block_sums.specialize(BLOCK=block, T=i32)
    mod = pk.build([k], targets=[target]).on(kind)
    x = np.arange(4 * block, dtype=np.int32) % 13
    out = np.zeros(8, np.int32)
    mod[k.name](x, out, grid=4, block=block)
    sums = x.reshape(4, block).sum(axis=1)
    assert out.tolist() == np.repeat(sums, 2).tolist()
    oracle = interpret(k, [x, np.zeros(8, np.int32)], grid=4, block=block).buffers["out"]
    assert oracle.tolist() == out.tolist()


def _loops(fn):
    return [s for s in ir.walk_stmts(fn.body) if isinstance(s, (ir.For, ir.While))]


def test_constexpr_loops_unroll_up_to_the_limit():
    small = block_sums.specialize(T=f32, BLOCK=16).ir
    # range(BLOCK // 8) twice and range(N) in tile_total unroll; range(8) (literal bounds) stays a loop
    assert [s.stop.value for s in _loops(small)] == [8, 8]
    # loops whose variable indexes the pk.local array regs unroll up to REGISTER_TRIPS (constant indices keep
    # it in registers); tile_total's loop over the shared tile stays a loop past MAX_TRIPS
    mid = block_sums.specialize(T=f32, BLOCK=8 * (MAX_TRIPS + 1)).ir
    assert sorted(s.stop.value for s in _loops(mid)) == [8] * (MAX_TRIPS + 1) + [8 * (MAX_TRIPS + 1)]
    big = block_sums.specialize(T=f32, BLOCK=8 * (REGISTER_TRIPS + 1)).ir
    assert sorted(s.stop.value for s in _loops(big)) == [8, REGISTER_TRIPS + 1, REGISTER_TRIPS + 1,
                                                         8 * (REGISTER_TRIPS + 1)]
    assert big.arrays["tile"].size == 8 * (REGISTER_TRIPS + 1) and big.arrays["regs"].size == REGISTER_TRIPS + 1


@pk.kernel
def unroll_value(N: pk.constexpr, y: Buffer[i32]):
    i = 0
    for i in range(N):
        y[i] = i
    y[7] = i  # the loop leaves i at its last value + 1, unrolled or not


def test_unrolled_loop_leaves_the_loop_variable_as_a_loop_does():
    for n in (0, 3):
        k = unroll_value.specialize(N=n)
        assert not _loops(k.ir)
        got = interpret(k, [np.full(8, -1, np.int32)], grid=1, block=1).buffers["y"]
        assert got.tolist() == [*range(n), *[-1] * (7 - n), n]


def test_names_are_deterministic_distinct_identifiers():
    assert axpy.specialize(T=f16).name == "axpy__T_f16"
    a = block_sums.specialize(BLOCK=128, T=f32)
    b = block_sums.specialize(T=f32).specialize(BLOCK=128)
    assert a.name == b.name == "block_sums__T_f32__BLOCK_128"
    assert block_sums.specialize(T=f32, BLOCK=64).name != a.name
    assert unroll_value.specialize(N=-3).name == "unroll_value__N_m3"
    assert unroll_value.specialize(N=1.5).name == "unroll_value__N_1p5"
    assert unroll_value.specialize(N=True).name == "unroll_value__N_True"
    assert unroll_value.specialize(N=np.int64(4)).name == "unroll_value__N_4"
    assert axpy.specialize(T=np.float64).name == "axpy__T_f64"
    for k in (a, unroll_value.specialize(N=-2.5e-3)):
        assert k.name.isidentifier() and k.name.isascii(), k.name


def test_artifact_records_the_values(tmp_path):
    k = block_sums.specialize(T=f32, BLOCK=32)
    pk.build([k], targets=["llvm"]).export(str(tmp_path / "k.kbin"))
    info = pk.load(str(tmp_path / "k.kbin")).function_info("block_sums__T_f32__BLOCK_32")
    assert info.attrs["specialization"] == "T=f32,BLOCK=32"
    assert [a.name for a in info.args] == ["x", "out"]


def test_unspecialized_kernel_is_refused_naming_the_missing_parameters():
    with pytest.raises(KernelTypeError) as e:
        pk.build([block_sums], targets=["llvm"])
    assert "T (pk.dtype), BLOCK (pk.constexpr)" in e.value.message
    assert "block_sums.specialize(T=..., BLOCK=...)" in e.value.message
    with pytest.raises(KernelTypeError, match=r"without a value: BLOCK \(pk.constexpr\);"):
        pk.build([block_sums.specialize(T=f32)], targets=["llvm"])


@pytest.mark.parametrize("call,text", [
    (lambda: axpy.specialize(U=f32), "has no pk.constexpr or pk.dtype parameter 'U' (its parameters fixed at "
                                     "build time: T)"),
    (lambda: axpy.specialize(T=f32).specialize(T=f64), "already fixes 'T' = f32"),
    (lambda: axpy.specialize(T=3), "pk.dtype parameter 'T' takes a scalar type"),
    (lambda: unroll_value.specialize(N="4"), "pk.constexpr parameter 'N' takes a Python number or bool"),
])
def test_bad_specializations(call, text):
    with pytest.raises(KernelTypeError) as e:
        call()
    assert text in str(e.value)


def _line_of(obj, text):
    lines, first = inspect.getsourcelines(obj.pyfunc)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_float_constexpr_used_as_a_size_is_located():
    with pytest.raises(KernelTypeError) as e:
        block_sums.specialize(T=f32, BLOCK=1.5).ir
    assert e.value.loc.line == _line_of(block_sums, "tile = pk.shared(T, BLOCK)")
    assert "'BLOCK' is 1.5 (float)" in e.value.message


@pk.kernel
def wrong_type_use(T: pk.dtype, x: Buffer["T"]):
    x[0] = x[0] + 0.5


def test_type_errors_of_a_specialization_are_located():
    wrong_type_use.specialize(T=f32).ir  # fine
    with pytest.raises(KernelTypeError, match="float literal 0.5 with the u8 operand") as e:
        wrong_type_use.specialize(T=u8).ir
    assert e.value.loc.line == _line_of(wrong_type_use, "x[0] + 0.5")


@pk.kernel
def nonconst_arg(n: i32, x: Buffer[f32]):
    x[0] = tile_total_caller(x, n)


@pk.func
def tile_total_caller(x: Buffer[f32], N: pk.constexpr) -> f32:
    return x[N]


def test_constexpr_argument_of_a_function_must_be_constant():
    with pytest.raises(KernelTypeError, match="argument 'N' of tile_total_caller\\(\\) is a pk.constexpr") as e:
        nonconst_arg.ir
    assert e.value.loc.line == _line_of(nonconst_arg, "tile_total_caller(x, n)")


@pytest.mark.parametrize("target,kind", _targets())
def test_string_annotations_under_future_import(target, kind):
    k = lang_future_kernels.future_scale.specialize(T=f32, K=3)
    assert k.name == "future_scale__T_f32__K_3"
    mod = pk.build([k], targets=[target]).on(kind)
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    mod[k.name](6, x, y, grid=1, block=8)
    assert y.tolist() == [6 * v if v < 6 else 0 for v in range(8)]


@pk.kernel
def doc_block_sum(T: pk.dtype, BLOCK: pk.constexpr, x: Buffer["T", "readonly"], out: Buffer["T"]):
    tile = pk.shared(T, BLOCK)          # the example of docs/language.md section 4
    regs = pk.local(T, BLOCK // 32)
    lid = pk.local_id(0)
    tile[lid] = x[pk.global_id(0)]
    pk.barrier()
    if lid == 0:
        acc: "T" = 0
        for k in range(BLOCK):
            acc += tile[k]
        out[pk.group_id(0)] = T(acc)


def test_the_documented_example():
    k = doc_block_sum.specialize(T=pk.f16, BLOCK=128)
    assert k.name == "doc_block_sum__T_f16__BLOCK_128"
    assert [s.stop.value for s in _loops(k.ir)] == [128]  # more than MAX_TRIPS iterations: a loop
    assert not _loops(doc_block_sum.specialize(T=pk.f16, BLOCK=32).ir)
    mod = pk.build([k], targets=["llvm"])
    x = (np.arange(256) % 4).astype(np.float16)
    out = np.zeros(2, np.float16)
    mod[k.name](x, out, grid=2, block=128)
    assert out.tolist() == [192.0, 192.0]


def test_a_module_build_skips_unspecialized_kernels():
    ns = {"generic": axpy, "f32_axpy": axpy.specialize(T=f32)}
    root = pk.build(ns, targets=["llvm"])
    assert "axpy__T_f32" in root and "axpy" not in root
    with pytest.raises(pk.errors.PolykernError, match=r"got no kernels; axpy needs .specialize\(T\)"):
        pk.build({"generic": axpy}, targets=["llvm"])


COMPILE_TARGETS = compile_targets()  # one per registered target kind


@pytest.mark.parametrize("target", COMPILE_TARGETS)
def test_specialized_kernels_with_functions_compile_for_every_backend(target, monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")  # compile only, where no toolchain is here
    if target.startswith("rocm"):
        from polykern.testing.tier_skip import skip_if_absent
        skip_if_absent("ld.lld")  # the hsaco is linked (the GPU machine has no ld.lld)
    k = block_sums.specialize(T=f32, BLOCK=64)
    root = pk.build([k], targets=[target])
    assert k.name in root
