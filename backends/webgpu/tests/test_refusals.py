"""What WGSL cannot express is refused at compile time with a KernelTypeError that names
webgpu and the feature, and points at the kernel source when the frontend gave a location."""
from __future__ import annotations

import pytest

import polykern as pk
from polykern import Buffer, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u64
from polykern.errors import KernelTypeError
from polykern.ir import nodes as ir
from polykern.ir.types import BufferType
from polykern_webgpu.wgsl_emit import emit_wgsl

from helpers import build, lower
from ir_kernels import KERNELS


def _copy_kernel(t):
    """``y[i] = x[i]`` over elements of type ``t``, as IR (annotations cannot close over ``t``)."""
    x, y = ir.Var("x", BufferType(t, True)), ir.Var("y", BufferType(t))
    i = ir.Var("i", i32)
    body = [ir.Assign("i", ir.SpecialReg("global_id", 0)),
            ir.If(ir.BinOp("lt", i, ir.Var("n", i32)), [ir.Store(y, i, ir.Load(x, i))])]
    return ir.Function("copy", [ir.Param("n", i32), ir.Param("x", x.type), ir.Param("y", y.type)], body,
                       locals={"i": i32})


@pytest.mark.parametrize("t,why", [(f64, "64-bit floating"), (i64, "64-bit integer"), (u64, "64-bit integer"),
                                   (i8, "8-bit"), (u8, "8-bit"), (i16, "16-bit"), (u16, "16-bit")])
def test_unsupported_buffer_types(t, why):
    with pytest.raises(KernelTypeError) as ei:
        build([_copy_kernel(t)])
    msg = str(ei.value)
    assert "webgpu does not support" in msg and str(t) in msg and why in msg


@pk.kernel
def uses_f64_local(n: i32, y: Buffer[f32]):
    i = pk.global_id(0)
    acc = f64(0.5)
    y[i] = f32(acc)


def test_unsupported_local_points_at_source():
    with pytest.raises(KernelTypeError) as ei:
        build([uses_f64_local])
    e = ei.value
    assert "f64" in str(e) and "webgpu" in str(e)
    assert e.loc is not None and e.loc.file.endswith("test_refusals.py")
    assert "acc = f64(0.5)" in e.loc.source_line


@pk.kernel
def uses_i64_scalar(n: i64, y: Buffer[f32]):
    y[0] = f32(n)


def test_unsupported_scalar_argument():
    with pytest.raises(KernelTypeError, match=r"webgpu does not support i64 \(argument 'n'\)"):
        build([uses_i64_scalar])


def test_f16_needs_target_attribute():
    with pytest.raises(KernelTypeError, match=r"shader-f16.*webgpu -shader_f16=true"):
        build([_copy_kernel(f16)])
    mod = build([_copy_kernel(f16)], "webgpu -shader_f16=true")
    assert "enable f16;" in mod.inspect_source("wgsl")
    assert mod.functions["copy"].attrs["features"] == "shader-f16"


def test_bool_buffers_refused():
    with pytest.raises(KernelTypeError, match="webgpu does not support bool buffers.*Buffer\\[u32\\]"):
        build([_copy_kernel(bool_)])


def _atomic_fn(elem, readonly=False):
    buf = ir.Var("b", BufferType(elem, readonly))
    body = [ir.ExprStmt(ir.Atomic("add", buf, ir.Const(0, i32), ir.Const(1, elem)))]
    return ir.Function("atom", [ir.Param("b", buf.type)], body)


def test_f16_atomics_refused():
    with pytest.raises(KernelTypeError, match=r"webgpu does not support atomic_add on f16 buffer 'b'"):
        emit_wgsl(_atomic_fn(f16), f16_ok=True)


def test_atomics_on_readonly_buffer_refused():
    with pytest.raises(KernelTypeError, match="readonly"):
        emit_wgsl(_atomic_fn(i32, readonly=True))


def test_supported_types_are_not_refused():
    """Control: the same checks let i32/u32/f32 kernels through."""
    for t in (i32, f32):
        assert "fn copy(" in emit_wgsl(lower(_copy_kernel(t)))[0]
    emit_wgsl(_atomic_fn(f32))  # emulated with compare-exchange
    emit_wgsl(KERNELS["atomics_mix"]())
