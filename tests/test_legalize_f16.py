"""passes/legalize_f16.py: the one definition of rounding to f16 on the bits, selected per target.

The sweep over every value class on every runtime is tests/test_f16_conversion_sweep.py; this file checks
the selection (which target kinds declare the pass), that no conversion to f16 is left for an emitter of a
declaring target, and the ``ir.Bitcast`` node the pass writes (verifier, printer, interpreter)."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, f64, i32
from runtimes import runnable_targets
from polykern.errors import CompileError
from polykern.interpreter.values import bitcaster
from polykern.ir import nodes as ir
from polykern.ir.printer import expr_str
from polykern.ir.types import SCALAR_TYPES
from polykern.ir.verifier import verify
from polykern.passes import run_default_passes
from polykern.passes.clone import clone_function
from polykern.passes.legalize_f16 import legalize_f16, needs_soft_f16


@pk.kernel
def conversions(a: Buffer[f32, "readonly"], d: Buffer[f64, "readonly"], n: Buffer[i32, "readonly"],
                o: Buffer[f16]):
    g = pk.global_id(0)
    o[g] = f16(a[g]) + f16(d[g]) + f16(n[g])
    while f16(a[g] * 2.0) < o[g] and (g < 3 and f16(d[g]) > o[g]):
        o[g] = o[g] / f16(2.0)


def _legalized(kind):
    pk.backends.load_all()
    return verify(legalize_f16(clone_function(run_default_passes(clone_function(conversions.ir))), kind))


def test_selection_is_the_backends_declaration():
    pk.backends.load_all()
    assert needs_soft_f16("vulkan") and needs_soft_f16("webgpu")
    assert not needs_soft_f16("llvm") and not needs_soft_f16("nvptx") and not needs_soft_f16("cuda")


@pytest.mark.parametrize("kind", ["vulkan", "webgpu"])
def test_no_conversion_to_f16_is_left(kind):
    fn = _legalized(kind)
    exprs = list(ir.walk_all_exprs(fn.body))
    left = [expr_str(e) for e in exprs if isinstance(e, ir.Cast) and e.to == f16 and e.a.type != f16]
    assert not left, left
    assert any(isinstance(e, ir.Bitcast) and e.to == f16 for e in exprs)
    if kind == "webgpu":  # its f16 division is computed in f32
        assert not any(isinstance(e, ir.BinOp) and e.op == "div" and e.type == f16 for e in exprs)


def test_other_targets_keep_the_conversion():
    fn = _legalized("llvm")
    assert any(isinstance(e, ir.Cast) and e.to == f16 for e in ir.walk_all_exprs(fn.body))
    assert not any(isinstance(e, ir.Bitcast) for e in ir.walk_all_exprs(fn.body))


def test_bitcast_is_verified_printed_and_interpreted():
    u32 = SCALAR_TYPES["u32"]
    e = ir.Bitcast(f16, ir.Const(0x7C01 | 0x10000, u32))
    assert expr_str(e) == "bitcast<f16>(" + repr(0x17C01) + ":u32)"
    assert np.isnan(bitcaster(u32, f16)(0x17C01)) and bitcaster(u32, f16)(0x3C00) == 1.0
    assert bitcaster(f16, u32)(-2.0) == 0xC000 and bitcaster(f32, u32)(1.0) == 0x3F800000
    fn = _legalized("vulkan")
    fn.body.insert(0, ir.ExprStmt(ir.Bitcast(i32, ir.Const(1.0, f32))))
    with pytest.raises(CompileError, match="bitcast from f32 to i32"):
        verify(fn)


@pk.kernel
def bf16_round_trip(a: Buffer[f32, "readonly"], o: Buffer[pk.bf16]):
    g = pk.global_id(0)
    o[g] = pk.bf16(a[g]) * pk.bf16(a[g])


@pytest.mark.parametrize("kind", ["llvm", "cuda", "opencl", "metal", "vulkan"])
def test_bf16_conversions_are_written_on_the_bits_everywhere(kind):
    pk.backends.load_all()
    fn = verify(legalize_f16(clone_function(run_default_passes(clone_function(bf16_round_trip.ir))), kind))
    exprs = list(ir.walk_all_exprs(fn.body))
    assert not [expr_str(e) for e in exprs if isinstance(e, ir.Cast) and pk.bf16 in (e.to, e.a.type)]
    assert any(isinstance(e, ir.Bitcast) and e.to == pk.bf16 for e in exprs)


def test_an_unlegalized_bf16_conversion_is_a_named_error():
    from polykern_cuda.codegen import cuda_source

    with pytest.raises(pk.errors.KernelTypeError, match="f32 -> bf16 conversion"):
        cuda_source([run_default_passes(clone_function(bf16_round_trip.ir))])


@pk.kernel
def halvings(a: Buffer[f32, "readonly"], n: i32, o: Buffer[f32]):
    """Conversions in a while condition and in a short-circuit right operand (guarding a load): their
    temporaries are evaluated on every test and only when the left operand allows."""
    g = pk.global_id(0)
    x = a[g]
    k = 0
    while f16(x) > f16(1.0) and (g < n and f16(a[g + 1]) > f16(0.0)):
        x = x * 0.5
        k += 1
    o[g] = f32(k)


@pytest.mark.parametrize("target,kind", [pytest.param(t, k, id=k) for t, k, s in runnable_targets()
                                         if k in ("llvm", "vulkan", "webgpu") and not s.get("f16")])
def test_conversions_in_loop_conditions_and_short_circuits(target, kind):
    a = np.linspace(0.5, 3000.0, 64).astype(np.float32)
    a[7] = -1.0  # g = 6 stops at once
    o = np.full(64, -1.0, np.float32)
    pk.build([halvings], targets=[target]).on(kind)["halvings"](a, np.int32(63), o, grid=1, block=64)
    want = []
    for g in range(64):
        x, k = a[g], 0
        while np.float16(x) > 1.0 and g < 63 and np.float16(a[g + 1]) > 0.0:
            x, k = np.float32(x * np.float32(0.5)), k + 1
        want.append(k)
    np.testing.assert_array_equal(o, np.array(want, np.float32))
