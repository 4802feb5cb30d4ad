"""KernelLowering's arithmetic (lower.py): binary operators with the Vulkan environment's undefined
cases avoided (integer division, signed remainder, shifts, fmod, pow and float division by a divisor
the driver could see as +0.0 arrive written by passes/legalize_numerics.py; constant +0.0 operands), wrapping negation, short-circuit
logic, GLSL.std.450 math (f32 log of subnormals scaled before: legalize_numerics), fused multiply-add. A mixin: it reads the lowering's ``self.f``, ``self.m``, ``self.ty``, ``self.const``.
"""
from __future__ import annotations

import math
from typing import List, Optional

from polykern.ir import nodes as n
from polykern.ir.types import SCALAR_TYPES, ScalarType, bool_, u32

from .spirv_spec import GLSL, Op


_FLOAT32_ONLY_MATH = ("exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow")
_GLSL_FLOAT = {"sqrt": "Sqrt", "rsqrt": "InverseSqrt", "exp": "Exp", "exp2": "Exp2", "log": "Log",
               "log2": "Log2", "sin": "Sin", "cos": "Cos", "tanh": "Tanh", "pow": "Pow", "fma": "Fma",
               "abs": "FAbs", "floor": "Floor", "ceil": "Ceil", "min": "NMin", "max": "NMax"}


def _is_positive_zero(e: n.Expr) -> bool:
    """A float +0.0 the driver can see as a constant: a literal, or a cast of an integer/bool zero."""
    if not e.type.is_float:
        return False
    if isinstance(e, n.Cast) and isinstance(e.a, n.Const) and not e.a.type.is_float:
        return e.a.value == 0
    return isinstance(e, n.Const) and e.value == 0 and math.copysign(1.0, e.value) > 0


def _is_cheap_and_safe(e: n.Expr) -> bool:
    """Side-effect free and never undefined: may be evaluated even when a short-circuit skips it."""
    for x in n.walk_expr(e):
        if isinstance(x, (n.Load, n.Atomic)):
            return False
        if isinstance(x, n.BinOp) and x.op in ("div", "floordiv", "mod") and not x.type.is_float:
            return False
    return True


FMA_FUSED_SPEC_ID = 4  # 0-2: the block shape, 3: a pk.shared_dynamic length (lower.py)


class ArithLowering:
    """Expressions of arithmetic, math calls and fma (mixed into KernelLowering)."""

    def binop(self, e: n.BinOp) -> int:
        f = self.f
        if e.op in ("land", "lor"):
            return self.short_circuit(e)
        t = e.a.type
        a, b = self.expr(e.a), self.expr(e.b)
        if t.is_bool:
            if e.op in self._LOGIC:
                return f.val(self._LOGIC[e.op], self.ty(bool_), a, b)
            if e.op in self._CMP:  # ordered comparison of bools: compare as 0/1
                a, b, t = self.convert(a, bool_, u32), self.convert(b, bool_, u32), u32
            else:
                self.refuse(f"operator '{e.op}' on bool", e.loc)
        col = 2 if t.is_float else (0 if t.is_signed else 1)
        if e.op in self._CMP:
            return f.val(self._CMP[e.op][col], self.ty(bool_), a, b)
        if t.is_float and e.op in ("mul", "div", "add", "sub"):
            out = self.with_positive_zero(e, t, a, b)
            if out is not None:
                return out
        # divisors guarded, shift amounts masked, float and signed % written before
        # (passes/legalize_numerics.py, as codegen.py's capabilities declare)
        if e.op not in self._ARITH or self._ARITH[e.op][col] is None:
            if e.op == "floordiv" and t.is_float:
                return self.glsl("Floor", t, self.exact(f.val(Op.FDiv, self.ty(t), a, b)))
            self.refuse(f"operator '{e.op}' on {t} (passes/legalize_numerics.py writes it before the lowering)",
                        e.loc)
        out = f.val(self._ARITH[e.op][col], self.ty(t), a, b)
        return self.exact(out) if t.is_float else out

    def with_positive_zero(self, e: n.BinOp, t: ScalarType, a: int, b: int) -> Optional[int]:
        """``e`` with a +0.0 constant operand, written so that no +0.0 reaches the driver's folding:
        lavapipe (Mesa 22.3) ignores SignedZeroInfNanPreserve there and folds x * 0.0 and 0.0 / x to 0,
        x + 0.0 to x, 0.0 - x to -x (fuzz cases fz6000265, fz6000297: 0.0 * inf was 0, not NaN). It
        does keep -0.0 operands, so x * +0 = -(x * -0), x / +0 = -(x / -0), +0 / x = -(-0 / x);
        x + 0 and 0 - x differ
        from x and -x only at a zero, which becomes +0. None if ``e`` has no +0.0 operand."""
        pos_a, pos_b = _is_positive_zero(e.a), _is_positive_zero(e.b)
        if not (pos_a or pos_b):
            return None
        f, tid = self.f, self.ty(t)
        neg_zero = self.const(t, -0.0)
        if e.op == "mul":
            prod = self.exact(f.val(Op.FMul, tid, neg_zero, b) if pos_a else f.val(Op.FMul, tid, a, neg_zero))
            return f.val(Op.FNegate, tid, prod)
        if e.op == "div":
            q = f.val(Op.FDiv, tid, neg_zero, b) if pos_a else f.val(Op.FDiv, tid, a, neg_zero)
            return f.val(Op.FNegate, tid, self.exact(q))
        if e.op == "add" or (e.op == "sub" and pos_a):
            x = b if pos_a else a
            if e.op == "sub":
                x = f.val(Op.FNegate, tid, x)
            zero = self.const(t, 0.0)
            return f.val(Op.Select, tid, f.val(Op.FOrdEqual, self.ty(bool_), x, zero), zero, x)
        return None  # x - 0.0 == x exactly: folding it is right

    def exact(self, v: int) -> int:
        """Decorate float result ``v`` NoContraction: a*b+c is never fused (polykern.numerics)."""
        self.m.decorate(v, "NoContraction")
        return v

    def wrapping_negate(self, t: ScalarType, v: int) -> int:
        """-v of an integer, wrapping (-MIN == MIN), computed as 0 - v in the same-width unsigned type:
        NVIDIA's Vulkan driver gave abs(MIN) % 25 = 23 where polykern's wrapping semantics give -23
        (fuzz case fz1000416), as if OpSNegate could not overflow; an unsigned subtraction leaves no
        overflow to assume away (the OpenCL emitter's pk_abs does the same)."""
        f = self.f
        ut = SCALAR_TYPES[f"u{t.bits}"]
        uid = self.ty(ut)
        uv = v if not t.is_signed else f.val(Op.Bitcast, uid, v)
        r = f.val(Op.ISub, uid, self.const(ut, 0), uv)
        return r if not t.is_signed else f.val(Op.Bitcast, self.ty(t), r)

    def short_circuit(self, e: n.BinOp) -> int:
        f = self.f
        a = self.expr(e.a)
        if _is_cheap_and_safe(e.b):
            b = self.expr(e.b)
            return f.val(Op.LogicalAnd if e.op == "land" else Op.LogicalOr, self.ty(bool_), a, b)
        pred_a = f.cur.label
        merge, rhs = f.new_label(), f.new_label()
        f.op(Op.SelectionMerge, merge, 0)
        if e.op == "land":
            f.op(Op.BranchConditional, a, rhs, merge)
        else:
            f.op(Op.BranchConditional, a, merge, rhs)
        f.begin(rhs)
        b = self.expr(e.b)
        pred_b = f.cur.label
        f.op(Op.Branch, merge)
        f.begin(merge)
        skipped = self.const(bool_, e.op == "lor")
        return f.val(Op.Phi, self.ty(bool_), skipped, pred_a, b, pred_b)

    def glsl(self, inst: str, t: ScalarType, *args: int) -> int:
        ext = self.m.ext_import("GLSL.std.450")
        return self.f.val(Op.ExtInst, self.ty(t), ext, GLSL[inst], *args)

    def call(self, e: n.Call) -> int:
        f = self.f
        t = e.type
        args = [self.expr(a) for a in e.args]
        if t.is_float:
            if t.bits == 64 and e.func in _FLOAT32_ONLY_MATH:
                self.refuse(f"{e.func}() on f64: GLSL.std.450 has no 64-bit {e.func}; cast to f32 "
                            "explicitly if that precision is enough", e.loc)
            if e.func not in _GLSL_FLOAT:
                self.refuse(f"math function {e.func}()", e.loc)
            if e.func == "fma":
                args = self.fma_without_positive_zero_factor(e, t, args)
            if e.func == "fma" and t.bits < 64:
                return self.fused_multiply_add(t, args)
            return self.glsl(_GLSL_FLOAT[e.func], t, *args)
        if not t.is_int:
            self.refuse(f"{e.func}() on {t}", e.loc)
        tid = self.ty(t)
        if e.func == "abs":
            if not t.is_signed:
                return args[0]
            neg = f.val(Op.SLessThan, self.ty(bool_), args[0], self.const(t, 0))
            return f.val(Op.Select, tid, neg, self.wrapping_negate(t, args[0]), args[0])
        if e.func in ("min", "max"):
            lt = Op.SLessThan if t.is_signed else Op.ULessThan
            less = f.val(lt, self.ty(bool_), args[0], args[1])
            first, second = (args[0], args[1]) if e.func == "min" else (args[1], args[0])
            return f.val(Op.Select, tid, less, first, second)
        self.refuse(f"{e.func}() on integer type {t}", e.loc)

    def fma_without_positive_zero_factor(self, e: n.Call, t: ScalarType, args: List[int]) -> List[int]:
        """fma(+0, y, z) as fma(-0, -y, z) (and likewise a +0 second factor): the same product, but no
        +0.0 factor for lavapipe to fold (fma(0, x, c) gave c for x = inf; see with_positive_zero)."""
        a, b, c = args
        tid = self.ty(t)
        if _is_positive_zero(e.args[0]):
            a, b = self.const(t, -0.0), self.f.val(Op.FNegate, tid, b)
        elif _is_positive_zero(e.args[1]):
            a, b = self.f.val(Op.FNegate, tid, a), self.const(t, -0.0)
        return [a, b, c]

    def fused_multiply_add(self, t: ScalarType, args: List[int]) -> int:
        """Vulkan gives GLSL.std.450 Fma only the precision of a*b+c (llvmpipe does not fuse), so an f32
        fma is computed in f64: the product of two f32 values is exact in f64, leaving one rounding in the
        wide add and one back to f32 (within 1 ulp of fused); it needs the float64 feature, and without it
        (and for f64) GLSL Fma is used. An f16 fma never arrives: passes/legalize_f16.py computes it in
        f32 the same way (vulkan declares ``fma`` in its ``ops_in_f32``).

        Where the device's Fma is measured to be fused (runtime/fma_probe.py: NVIDIA's is one FFMA), the
        f64 path costs 3 conversions, DMUL and DADD per fma for nothing: both are emitted and specialization
        constant :data:`FMA_FUSED_SPEC_ID` (0 unless the runtime's probe says fused) selects one when the
        pipeline is created, so the driver keeps only that one."""
        from polykern.ir.types import SCALAR_TYPES

        wide = SCALAR_TYPES[f"f{t.bits * 2}"]
        if wide.bits == 64 and "float64" not in self.features:
            return self.glsl("Fma", t, *args)
        if wide.bits == 64:
            self.required.add("float64")
        a, b, c = (self.convert(v, t, wide) for v in args)
        prod = self.f.val(Op.FMul, self.ty(wide), a, b)
        emulated = self.convert(self.f.val(Op.FAdd, self.ty(wide), prod, c), wide, t)
        if wide.bits != 64:
            return emulated
        return self.f.val(Op.Select, self.ty(t), self.fma_fused_flag(), self.glsl("Fma", t, *args), emulated)

    def fma_fused_flag(self) -> int:
        """The bool "the device's Fma is fused": specialization constant FMA_FUSED_SPEC_ID (declared once per
        shader and named in the kernel's ``spec_ids``) != 0, compared where it is used (a value made in one
        block would not dominate the others); drivers fold it when the pipeline is specialized."""
        if getattr(self, "_fma_spec", None) is None:
            self._fma_spec = self.m.spec_const_u32(0, FMA_FUSED_SPEC_ID, "fma_fused")
            self.attrs["spec_ids"] += f",fma_fused={FMA_FUSED_SPEC_ID}"
        return self.f.val(Op.INotEqual, self.m.t_bool(), self._fma_spec, self.u32c(0))