"""divisibility.py proves offsets multiples of 8 for ldmatrix (16-byte rows). A cast through bool is not
one: ``i32(bool_(8 * x))`` is 1 for x != 0, yet it was proven a multiple of 8 and the fragment load became
an ldmatrix of misaligned rows (found red-teaming the matrix fragments)."""
import pytest

import polykern as pk
from polykern import Buffer, bool_, f16, f32, i32, i64, u8
from polykern.ir import nodes as ir
from polykern_cuda.divisibility import Divisibility


@pk.func
def _zero(off: i32) -> i32:
    return 0


@pk.func
def _through_bool(off: i32) -> i32:
    return i32(bool_(off * 8))


@pk.func
def _through_i64(off: i32) -> i32:
    return i32(i64(off * 8))


def _fragment_kernel(cast_name):
    offset_of = {"none": _zero, "bool": _through_bool, "int": _through_i64}[cast_name]

    @pk.kernel
    def frag(x: Buffer[f16, "readonly"], y: Buffer[f32], off: i32):
        t = pk.shared(f16, 1024)
        l = pk.local_id(0)
        for j in range(32):
            t[l * 32 + j] = x[l * 32 + j]
        pk.barrier()
        a = pk.frag_a(f16, 16, 8, 16)
        b = pk.frag_b(f16, 16, 8, 16)
        acc = pk.frag_acc(f32, 16, 8, 16)
        pk.frag_fill(acc, 0.0)
        o = offset_of(off)
        pk.frag_load(a, t, o, 24)
        pk.frag_load(b, t, 512, 24, "col")
        acc = pk.mma(a, b, acc)
        pk.frag_store(y, 0, 8, acc)

    return frag


def _first_load_offset(fn):
    return next(s for s in ir.walk_stmts(fn.body) if isinstance(s, ir.MatrixOp) and s.op == "load").args[0]


@pytest.mark.parametrize("cast,proven", [("bool", False), ("int", True)])
def test_an_offset_through_a_cast(cast, proven):
    fn = _fragment_kernel(cast).ir
    assert Divisibility(fn).multiple_of(_first_load_offset(fn), 8) is proven


def test_casts_of_a_multiple():
    div = Divisibility(_fragment_kernel("none").ir)
    eight = ir.BinOp("mul", ir.Var("x", i32), ir.Const(8, i32))
    assert not div.multiple_of(ir.Cast(i32, ir.Cast(bool_, eight)), 8)
    assert div.multiple_of(ir.Cast(u8, eight), 8)  # a narrower integer keeps the low bits


def test_no_ldmatrix_for_an_offset_through_bool():
    from polykern_cuda import toolchain

    if toolchain.available_compiler() is None:
        pytest.skip("neither NVRTC nor nvcc is installed here")
    ptx = pk.build([_fragment_kernel("bool")], ["cuda -arch=sm_80"]).on("cuda").inspect_source("ptx")
    assert ptx.count("ldmatrix") == 1  # B's load only
