"""passes/legalize_numerics.py: integer division, remainder, shifts, float -> int, fmod and pow written once
on the IR, selected by each target kind's ``Capabilities.ints`` / ``Capabilities.floats``.

Each rewrite is checked on small IR twice: its shape (nothing the target leaves undefined is left for the
emitter: a divisor that may be 0 or -1 under MIN, a shift amount that may reach the width, a float out of
range converted, an inexact remainder, ``pow`` of a negative base) and its meaning (the legalized IR run
by the interpreter gives, bit for bit, what the original IR gives over the edge values). The backends
runs are tests/test_conformance.py, tests/test_numerics.py and the fuzzer."""
import dataclasses
import itertools
import math

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32, f64, i8, i32, u8, u32
from polykern import capabilities
from polykern.capabilities import Capabilities, FloatSemantics, IntSemantics
from polykern.interpreter.program import Program
from polykern.ir import nodes as ir
from polykern.ir.printer import expr_str
from polykern.ir.verifier import verify
from polykern.passes import run_default_passes
from polykern.passes.clone import clone_function
from polykern.passes.legalize_numerics import legalize_with

ALL = (IntSemantics(), FloatSemantics())  # everything written by the pass (vulkan's declaration)
NATIVE = (IntSemantics("native", "native", "native", "native"),
          FloatSemantics("native", "native", "native", False, "native"))
LLVM_LIKE = (capabilities.LLVM_INTS, capabilities.GPU_LLVM_FLOATS)
WGSL_LIKE = (IntSemantics(division="native"), FloatSemantics())
C_LIKE = (capabilities.C_INTS, capabilities.LIBM_FLOATS)  # comparisons find NaN


@pk.kernel
def int_ops(a: Buffer[i32, "readonly"], b: Buffer[i32, "readonly"], o: Buffer[i32]):
    g = pk.global_id(0)
    o[6 * g] = a[g] // b[g]
    o[6 * g + 1] = a[g] % b[g]
    o[6 * g + 2] = a[g] << b[g]
    o[6 * g + 3] = a[g] >> b[g]
    o[6 * g + 4] = a[g] // -1 + a[g] % -1
    o[6 * g + 5] = a[g] % 7 + a[g] // 3


@pk.kernel
def narrow_ops(a: Buffer[i8, "readonly"], b: Buffer[i8, "readonly"], u: Buffer[u32, "readonly"],
               v: Buffer[u32, "readonly"], o: Buffer[i8], p: Buffer[u32]):
    g = pk.global_id(0)
    o[3 * g] = a[g] // b[g]
    o[3 * g + 1] = a[g] % b[g]
    o[3 * g + 2] = a[g] << b[g]
    p[3 * g] = u[g] // v[g]
    p[3 * g + 1] = u[g] % v[g]
    p[3 * g + 2] = u[g] >> v[g]


@pk.kernel
def float_ops(x: Buffer[f32, "readonly"], y: Buffer[f32, "readonly"], d: Buffer[f64, "readonly"],
              h: Buffer[f16, "readonly"], o: Buffer[f32], k: Buffer[i32], w: Buffer[u8], m: Buffer[f16]):
    g = pk.global_id(0)
    o[2 * g] = x[g] % y[g]
    o[2 * g + 1] = pk.pow(x[g], y[g])
    k[3 * g] = i32(x[g])
    k[3 * g + 1] = i32(d[g])
    k[3 * g + 2] = i32(h[g])
    w[g] = u8(y[g])
    m[g] = h[g] % h[g + 1] if g + 1 < 64 else h[g]
    o[2 * g] += pk.log(x[g]) + pk.log2(y[g])
    o[2 * g + 1] += x[g] / y[g] + pk.floor(x[g] / 3.0) + f32(h[g] / h[g + 1] if g + 1 < 64 else h[g])


def _legalized(kernel, semantics):
    fn = clone_function(run_default_passes(clone_function(kernel.ir)))
    return verify(legalize_with(fn, *semantics))


def _exprs(fn):
    return list(ir.walk_all_exprs(fn.body))


# ------------------------------------------------------------------ the shape of each rewrite


def _unguarded_divisions(fn):
    """Integer divisions whose divisor may be 0 (or -1 under a signed MIN)."""
    out = []
    for e in _exprs(fn):
        if isinstance(e, ir.BinOp) and e.op in ("div", "floordiv", "mod") and e.type.is_int:
            b = e.b
            safe_const = isinstance(b, ir.Const) and b.value != 0 and not (e.type.is_signed and b.value == -1)
            guarded = isinstance(b, ir.Select) and isinstance(b.a, ir.Const) and b.a.value == 1
            if not (safe_const or guarded):
                out.append(expr_str(e))
    return out


def _unmasked_shifts(fn):
    out = []
    for e in _exprs(fn):
        if isinstance(e, ir.BinOp) and e.op in ("shl", "shr"):
            s, top = e.b, e.type.bits - 1
            if isinstance(s, ir.Const) and 0 <= s.value <= top:
                continue
            if isinstance(s, ir.BinOp) and s.op == "and" and isinstance(s.b, ir.Const) and s.b.value <= top:
                continue
            out.append(expr_str(e))
    return out


def _unbounded_conversions(fn):
    """float -> int conversions of a value not first selected in range (else 0)."""
    return [expr_str(e) for e in _exprs(fn) if isinstance(e, ir.Cast) and e.a.type.is_float and e.to.is_int
            and not (isinstance(e.a, ir.Select) and isinstance(e.a.b, ir.Const) and e.a.b.value == 0)]


def test_every_undefined_case_is_written_for_a_target_that_declares_nothing_native():
    for k in (int_ops, narrow_ops, float_ops):
        fn = _legalized(k, ALL)
        assert not _unguarded_divisions(fn), _unguarded_divisions(fn)
        assert not _unmasked_shifts(fn), _unmasked_shifts(fn)
        assert not _unbounded_conversions(fn), _unbounded_conversions(fn)
        signed_mod = [expr_str(e) for e in _exprs(fn) if isinstance(e, ir.BinOp) and e.op == "mod"
                      and (e.type.is_float or e.type.is_signed)]
        assert not signed_mod, signed_mod


def test_a_native_declaration_leaves_the_operation_alone():
    for k in (int_ops, narrow_ops, float_ops):
        before = [expr_str(e) for e in _exprs(clone_function(run_default_passes(clone_function(k.ir))))]
        after = [expr_str(e) for e in _exprs(_legalized(k, NATIVE))]
        assert before == after


def test_llvm_keeps_its_remainder_and_saturating_conversion():
    fn = _legalized(int_ops, LLVM_LIKE)
    assert not _unguarded_divisions(fn) and not _unmasked_shifts(fn)
    assert any(isinstance(e, ir.BinOp) and e.op == "mod" and e.type.is_signed for e in _exprs(fn))
    fn = _legalized(float_ops, LLVM_LIKE)
    assert _unbounded_conversions(fn), "fptosi.sat keeps the promise: the conversion is left to it"
    assert not any(isinstance(e, ir.BinOp) and e.op == "mod" and e.type.is_float for e in _exprs(fn))


def test_wgsl_keeps_its_division_but_not_its_signed_remainder():
    fn = _legalized(int_ops, WGSL_LIKE)
    divs = [e for e in _exprs(fn) if isinstance(e, ir.BinOp) and e.op == "floordiv"]
    assert divs and all(not isinstance(e.b, ir.Select) for e in divs)
    assert not any(isinstance(e, ir.BinOp) and e.op == "mod" and e.type.is_signed for e in _exprs(fn))


def test_log_of_a_subnormal_is_scaled_first():
    fn = _legalized(float_ops, ALL)
    logs = [e for e in _exprs(fn) if isinstance(e, ir.Call) and e.func in ("log", "log2")]
    assert len(logs) == 2 and all(isinstance(e.args[0], ir.Select) for e in logs)
    assert not any(isinstance(e.args[0], ir.Select) for e in _exprs(_legalized(float_ops, LLVM_LIKE))
                   if isinstance(e, ir.Call) and e.func in ("log", "log2"))


def test_no_float_division_by_a_possible_positive_zero():
    fn = _legalized(float_ops, ALL)
    divs = [e for e in _exprs(fn) if isinstance(e, ir.BinOp) and e.op == "div" and e.type.is_float]
    assert divs and all(isinstance(e.b, ir.UnaryOp) and e.b.op == "neg" and isinstance(e.b.a, ir.Call)
                        and e.b.a.func == "abs" or isinstance(e.b, ir.Const) and e.b.value != 0
                        for e in divs), [expr_str(e) for e in divs]


def test_pow_runs_on_the_magnitude():
    fn = _legalized(float_ops, ALL)
    assigned = {s.name: s.value for s in ir.walk_stmts(fn.body) if isinstance(s, ir.Assign)}
    pows = [e for e in _exprs(fn) if isinstance(e, ir.Call) and e.func == "pow"]
    assert pows
    for p in pows:
        base = p.args[0]
        assert isinstance(base, ir.Var) and isinstance(assigned[base.name], ir.Call)
        assert assigned[base.name].func == "abs", expr_str(p)


# ------------------------------------------------------------------ the meaning is unchanged

INTS = [0, 1, -1, 2, -2, 7, -7, 31, 32, 33, 63, -32, 100, -(1 << 31), (1 << 31) - 1]
I8S = [0, 1, -1, 3, -3, 7, 8, 9, -128, 127, -8, 100]
U32S = [0, 1, 2, 7, 31, 32, 33, 64, 0xFFFFFFFF, 0x80000000, 12345]
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, -3.0, 7.25, 1e-40, -1e-40, 1e30, -1e30, 3e9, -3e9,
          2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0, 255.9, 256.0, -0.9, math.inf, -math.inf,
          math.nan, 65504.0, 1e-3, 1e5]


def _run(fn, args, n):
    with np.errstate(all="ignore"):
        r = Program(fn, judge=False).run(args, (n, 1, 1), (1, 1, 1))
    return {k: np.asarray(v) for k, v in r.buffers.items()}


def _same(a, b):
    for name in a:
        x, y = a[name], b[name]
        if x.dtype.kind == "f":
            assert np.array_equal(x.view(f"u{x.itemsize}"), y.view(f"u{y.itemsize}")) or \
                np.array_equal(x, y, equal_nan=True), (name, x, y)
        else:
            assert np.array_equal(x, y), (name, x, y)


def _pairs(values, dtype):
    a, b = zip(*itertools.product(values, values))
    return np.array(a, dtype=dtype), np.array(b, dtype=dtype)


@pytest.mark.parametrize("semantics", [ALL, LLVM_LIKE, WGSL_LIKE], ids=["all", "llvm", "wgsl"])
def test_integer_meaning_is_unchanged(semantics):
    a, b = _pairs(INTS, np.int32)
    args = [a, b, np.zeros(6 * len(a), np.int32)]
    want = _run(run_default_passes(clone_function(int_ops.ir)), [x.copy() for x in args], len(a))
    _same(want, _run(_legalized(int_ops, semantics), [x.copy() for x in args], len(a)))
    a8, b8 = _pairs(I8S, np.int8)
    u, v = _pairs(U32S, np.uint32)
    n = min(len(a8), len(u))
    args = [a8[:n], b8[:n], u[:n], v[:n], np.zeros(3 * n, np.int8), np.zeros(3 * n, np.uint32)]
    want = _run(run_default_passes(clone_function(narrow_ops.ir)), [x.copy() for x in args], n)
    _same(want, _run(_legalized(narrow_ops, semantics), [x.copy() for x in args], n))


@pytest.mark.parametrize("semantics", [ALL, LLVM_LIKE, C_LIKE], ids=["all", "llvm", "c"])
def test_float_meaning_is_unchanged(semantics):
    x, y = _pairs(FLOATS, np.float32)
    n = len(x)
    d = x.astype(np.float64) * 1.5
    with np.errstate(over="ignore"):  # 1e30 and 3e9 are inf in f16
        h = np.resize(np.array(FLOATS, np.float16), n)
    args = [x, y, d, h, np.zeros(2 * n, np.float32), np.zeros(3 * n, np.int32), np.zeros(n, np.uint8),
            np.zeros(n, np.float16)]
    want = _run(run_default_passes(clone_function(float_ops.ir)), [a.copy() for a in args], n)
    assert want["k"][3 * FLOATS.index(math.nan) * len(FLOATS)] == 0  # i32(nan): the oracle's meaning
    _same(want, _run(_legalized(float_ops, semantics), [a.copy() for a in args], n))


# ------------------------------------------------------------------ the declarations


def test_the_capability_fields_select_the_pass():
    names = {f.name for f in dataclasses.fields(Capabilities)}
    assert {"ints", "floats"} <= names, "Capabilities.ints / .floats select passes/legalize_numerics.py"
    assert {f.name for f in dataclasses.fields(IntSemantics)} == {"division", "remainder", "shifts",
                                                                 "float_to_int"}
    assert {f.name for f in dataclasses.fields(FloatSemantics)} == {"fmod", "pow", "log", "finite_math",
                                                                   "division"}
    with pytest.raises(ValueError, match="IntSemantics.shifts is one of"):
        IntSemantics(shifts="modulo")
    with pytest.raises(ValueError, match="Capabilities.ints is an IntSemantics"):
        Capabilities(ints="native")


def test_each_backend_declares_what_its_instructions_keep():
    pk.backends.load_all()
    of = capabilities.of
    for kind in ("llvm", "hexagon", "nvptx", "rocm"):
        assert of(kind).ints == capabilities.LLVM_INTS, kind  # fptosi.sat, srem; guarded, masked
    for kind in ("cuda", "opencl", "metal"):
        assert of(kind).ints == capabilities.C_INTS and of(kind).floats == capabilities.LIBM_FLOATS, kind
    assert of("nvptx").floats.fmod == of("rocm").floats.fmod == "exact"  # GPU frem rounds
    assert of("vulkan").ints == IntSemantics() and of("vulkan").floats == FloatSemantics()
    assert of("webgpu").ints.division == "native" and of("webgpu").ints.remainder == "magnitudes"
