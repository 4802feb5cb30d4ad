"""The memory accesses and expressions of :class:`polykern.codegen.llvm_emitter.LLVMKernelEmitter` (a mixin
of it): element pointers, constants, integer arithmetic (x/0 made defined on the IR before:
passes/legalize_numerics.py), short-circuit ``land``/``lor``, casts between every pair of scalar types,
bitcasts, math calls, atomics."""
from __future__ import annotations

from llvmlite import ir as ll

from ..errors import CompileError, KernelTypeError
from ..ir import nodes as N
from ..ir.bfloat16 import f32_to_bits
from ..ir.types import ScalarType, bf16, f32
from .llvm_types import I1, I8, I32, I64, mem_type, type_suffix, value_type

__all__ = ["ExpressionEmitter"]

_ICMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


class ExpressionEmitter:
    """Memory and expression emission; the state and the hooks (``math_call``, ``special_reg``,
    ``subgroup``, ``round_to_f16``, ...) are :class:`LLVMKernelEmitter`'s."""

    # ------------------------------------------------------------------ memory
    def index64(self, index: N.Expr) -> ll.Value:
        v = self.expr(index)
        st = index.type
        if v.type.width == 64:
            return v
        return self.builder.sext(v, I64) if st.code == 0 else self.builder.zext(v, I64)

    def element_ptr(self, base: N.Var, index: N.Expr):
        """(pointer to ``base[index]``, element scalar type)."""
        name = base.name
        idx = self.index64(index)
        if name in self.buffers:
            ptr, st = self.buffers[name]
        elif name in self.arrays:
            arr = self.arrays[name]
            ptr, st = arr.ptr, arr.st
            if arr.per_item:
                idx = self.builder.add(self.builder.mul(self.item, ll.Constant(I64, arr.size)), idx)
        else:
            raise CompileError(f"{name!r} is not a buffer or array")
        return self.builder.gep(ptr, [idx], inbounds=True, source_etype=mem_type(st)), st

    def to_mem(self, v: ll.Value, st: ScalarType) -> ll.Value:
        return self.builder.zext(v, I8) if st.is_bool else v

    def from_mem(self, v: ll.Value, st: ScalarType) -> ll.Value:
        return self.builder.icmp_unsigned("!=", v, ll.Constant(I8, 0)) if st.is_bool else v

    # ------------------------------------------------------------------ expressions
    def expr(self, e: N.Expr) -> ll.Value:
        meth = getattr(self, f"expr_{type(e).__name__}", None)
        if meth is None:
            raise CompileError(f"{type(self).__name__}: unsupported expression {type(e).__name__}")
        return meth(e)

    def const(self, value, st: ScalarType) -> ll.Constant:
        t = value_type(st)
        if st.is_bool:
            return ll.Constant(I1, 1 if value else 0)
        if st == bf16:
            return ll.Constant(t, int(f32_to_bits(value)))
        if st.is_float:
            return ll.Constant(t, float(st.numpy.type(value)))
        v = int(value) & ((1 << st.bits) - 1)
        if v >= 1 << (st.bits - 1):
            v -= 1 << st.bits
        return ll.Constant(t, v)

    def expr_Const(self, e: N.Const) -> ll.Value:
        return self.const(e.value, e.ctype)

    def expr_Var(self, e: N.Var) -> ll.Value:
        slot = self.slots.get(e.name)
        if slot is None:
            raise CompileError(f"{e.name!r} is not a scalar variable")
        return slot.load(self)

    def expr_SpecialReg(self, e: N.SpecialReg) -> ll.Value:
        return self.special_reg(e.kind, e.dim)

    def expr_Subgroup(self, e: N.Subgroup) -> ll.Value:
        return self.subgroup(e)

    def subgroup(self, e: N.Subgroup) -> ll.Value:
        """``pk.subgroup_<op>`` (a collective is the whole value of an Assign: ir.Subgroup)."""
        raise KernelTypeError(f"{type(self).__name__}: subgroup_{e.op}() is not supported by this backend", e.loc)

    def expr_Load(self, e: N.Load) -> ll.Value:
        ptr, st = self.element_ptr(e.base, e.index)
        v = self.builder.load(ptr, typ=mem_type(st))
        self.mark_access(v, e.base.name)
        return self.from_mem(v, st)

    def expr_Select(self, e: N.Select) -> ll.Value:
        return self.builder.select(self.expr(e.cond), self.expr(e.a), self.expr(e.b))

    def expr_UnaryOp(self, e: N.UnaryOp) -> ll.Value:
        v = self.expr(e.a)
        st = e.a.type
        if e.op == "neg":
            return self.builder.fneg(v) if st.is_float else self.builder.neg(v)
        if e.op in ("not", "invert"):
            if st.is_float:
                raise CompileError(f"'{e.op}' is not defined for {st}")
            return self.builder.not_(v)
        raise CompileError(f"unknown unary operator {e.op!r}")

    def expr_BinOp(self, e: N.BinOp) -> ll.Value:
        if e.op in ("land", "lor"):
            return self._short_circuit(e)
        a, b = self.expr(e.a), self.expr(e.b)
        st = e.a.type
        bld = self.builder
        if e.op in _ICMP:
            if st.is_float:
                if e.op == "ne":  # C: NaN != x is true
                    return bld.fcmp_unordered("!=", a, b)
                return bld.fcmp_ordered(_ICMP[e.op], a, b)
            if st.code == 0:
                return bld.icmp_signed(_ICMP[e.op], a, b)
            return bld.icmp_unsigned(_ICMP[e.op], a, b)
        if st.is_float:
            if e.op == "add":
                return bld.fadd(a, b)
            if e.op == "sub":
                return bld.fsub(a, b)
            if e.op == "mul":
                return bld.fmul(a, b)
            if e.op == "div":
                return bld.fdiv(a, b)
            if e.op == "floordiv":
                return self.math_call("floor", st, [bld.fdiv(a, b)])
            if e.op == "mod":
                return bld.frem(a, b)
            raise CompileError(f"operator {e.op!r} is not defined for {st}")
        simple = {"add": bld.add, "sub": bld.sub, "mul": bld.mul, "and": bld.and_, "or": bld.or_,
                  "xor": bld.xor}
        if e.op in simple:
            return simple[e.op](a, b)
        # the divisor is never 0 nor -1 under MIN, the amount below the width (passes/legalize_numerics.py)
        if e.op == "mod":
            return bld.srem(a, b) if st.code == 0 else bld.urem(a, b)
        if e.op in ("div", "floordiv"):
            return bld.sdiv(a, b) if st.code == 0 else bld.udiv(a, b)
        if e.op == "shl":
            return bld.shl(a, b)
        if e.op == "shr":
            return bld.ashr(a, b) if st.code == 0 else bld.lshr(a, b)
        raise CompileError(f"unknown binary operator {e.op!r}")

    def _short_circuit(self, e: N.BinOp) -> ll.Value:
        bld = self.builder
        a = self.expr(e.a)
        start = bld.block
        rhs_bb, end_bb = self.new_block(f"{e.op}.rhs"), self.new_block(f"{e.op}.end")
        if e.op == "land":
            bld.cbranch(a, rhs_bb, end_bb)
        else:
            bld.cbranch(a, end_bb, rhs_bb)
        bld.position_at_end(rhs_bb)
        b = self.expr(e.b)
        rhs_end = bld.block
        bld.branch(end_bb)
        bld.position_at_end(end_bb)
        phi = bld.phi(I1)
        phi.add_incoming(ll.Constant(I1, 0 if e.op == "land" else 1), start)
        phi.add_incoming(b, rhs_end)
        return phi

    def expr_Cast(self, e: N.Cast) -> ll.Value:
        return self.cast(self.expr(e.a), e.a.type, e.to)

    def expr_Bitcast(self, e: N.Bitcast) -> ll.Value:
        """``ir.Bitcast``: a float and the integer of its width; a 16-bit float (half, or bf16's i16 bits) and
        the low half of an i32."""
        b, v = self.builder, self.expr(e.a)
        src, dst = e.a.type, e.to
        if src.bits == 16:  # -> u32, zero-extended
            return b.zext(v if src == bf16 else b.bitcast(v, ll.IntType(16)), I32)
        if dst.bits == 16:  # the u32's low half
            low = b.trunc(v, ll.IntType(16))
            return low if dst == bf16 else b.bitcast(low, value_type(dst))
        return b.bitcast(v, value_type(dst))

    def cast(self, v: ll.Value, src: ScalarType, dst: ScalarType) -> ll.Value:
        """C conversions between every pair of scalar types; float -> int saturates (NaN -> 0)."""
        b = self.builder
        if src == dst:
            return v
        if src == bf16 or dst == bf16:  # on the bits before the backend (passes/legalize_f16.py)
            raise CompileError(f"{type(self).__name__}: a {src} -> {dst} conversion reached the backend "
                               "(passes/legalize_f16.py writes bf16 conversions on the bits)")
        dty = value_type(dst)
        if dst.is_bool:
            if src.is_float:
                return b.fcmp_unordered("!=", v, ll.Constant(v.type, 0.0))
            return b.icmp_unsigned("!=", v, ll.Constant(v.type, 0))
        if src.is_bool:
            return b.uitofp(v, dty) if dst.is_float else b.zext(v, dty)
        if src.is_float and dst.is_float:
            if src.bits < dst.bits:
                return b.fpext(v, dty)
            return self.round_to_f16(v, dty) if dst.bits == 16 else b.fptrunc(v, dty)
        if src.is_float:  # -> int
            if src.bits == 16:  # exact, and avoids half -> int libcalls
                v, src = b.fpext(v, ll.FloatType()), f32
            kind = "fptosi" if dst.code == 0 else "fptoui"
            return self.call_intrinsic(f"llvm.{kind}.sat.{type_suffix(dst)}.{type_suffix(src)}", dty, [v])
        if dst.is_float:  # int -> float
            if dst.bits == 16:
                return self._int_to_f16(v, src, dty)
            return b.sitofp(v, dty) if src.code == 0 else b.uitofp(v, dty)
        if src.bits > dst.bits:
            return b.trunc(v, dty)
        if src.bits < dst.bits:
            return b.sext(v, dty) if src.code == 0 else b.zext(v, dty)
        return v  # same width, signedness only

    def _int_to_f16(self, v: ll.Value, src: ScalarType, dty: ll.Type) -> ll.Value:
        """An integer to f16 through f32: exact up to 65520, and every larger magnitude is inf in f16 either
        way (and no int -> half libcall). An integer that can reach 65520 arrives converted to f32 and clamped
        (passes/legalize_f16.py "clamp": LLVM's instcombine folds ``fpext(fptrunc(sitofp x))``)."""
        b = self.builder
        r = b.sitofp(v, ll.FloatType()) if src.code == 0 else b.uitofp(v, ll.FloatType())
        return self.round_to_f16(r, dty)

    def round_to_f16(self, v: ll.Value, dty: ll.Type) -> ll.Value:
        """An f32/f64 rounded once to f16 (``dty``): ``fptrunc``. Target kinds declaring the "clamp" f16
        rounding (passes/legalize_f16.py) get the value clamped to +-65520 in their IR first, so LLVM cannot
        fold a round trip past f16's range. A backend with its own instruction may override it (nvptx:
        ``cvt.rn.f16.f32`` as inline PTX, which LLVM cannot see through)."""
        return self.builder.fptrunc(v, dty)

    def expr_Call(self, e: N.Call) -> ll.Value:
        if e.func not in N.MATH_FUNCS:
            raise CompileError(f"unknown math function {e.func!r}")
        return self.math_call(e.func, e.type, [self.expr(a) for a in e.args])

    def expr_Atomic(self, e: N.Atomic) -> ll.Value:
        ptr, st = self.element_ptr(e.base, e.index)
        value = self.expr(e.value)
        compare = self.expr(e.compare) if e.compare is not None else None
        return self.atomic(e.op, ptr, st, value, compare)

    def atomic(self, op: str, ptr, st: ScalarType, value, compare=None) -> ll.Value:
        """Real LLVM atomics on ``ptr``; returns the old value."""
        b = self.builder
        order = self.ATOMIC_ORDERING
        scope = self.ATOMIC_SCOPES.get(ptr.type.addrspace)
        if scope:
            # llvmlite prints the ordering verbatim after the operands, where LLVM's syntax puts
            # [syncscope("...")] <ordering>, so the scope rides along with the ordering.
            order = f'syncscope("{scope}") {order}'
        mty = mem_type(st)
        if op == "cas":
            if st.is_float:  # cmpxchg needs integers: compare bit patterns
                ity = ll.IntType(st.bits)
                cmp_i, val_i = b.bitcast(compare, ity), b.bitcast(value, ity)
                res = b.cmpxchg(ptr, cmp_i, val_i, order, "monotonic")
                return b.bitcast(b.extract_value(res, 0), value_type(st))
            res = b.cmpxchg(ptr, self.to_mem(compare, st), self.to_mem(value, st), order, "monotonic")
            return self.from_mem(b.extract_value(res, 0), st)
        if op == "add":
            name = "fadd" if st.is_float else "add"
        elif op in ("min", "max"):
            name = ("f" if st.is_float else "" if st.code == 0 else "u") + op
        elif op == "xchg":
            name = "xchg"
        else:
            raise CompileError(f"unknown atomic operation {op!r}")
        old = b.atomic_rmw(name, ptr, self.to_mem(value, st), order)
        return self.from_mem(old, st) if old.type == mty else old
