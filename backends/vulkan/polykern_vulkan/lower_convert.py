"""KernelLowering's conversions (lower.py): every scalar conversion (float -> int only of values in
range: passes/legalize_numerics.py saturates before), and ``ir.Bitcast``. Rounding to f16 arrives as
integer operations (passes/legalize_f16.py: drivers fold OpFConvert round trips); only an exact f16 (a
push constant in its f32 slot) converts here. A mixin: it reads the lowering's ``self.f``, ``self.m``,
``self.ty``, ``self.const``.
"""
from __future__ import annotations

from polykern.errors import CompileError, KernelTypeError
from polykern.ir.types import SCALAR_TYPES, ScalarType, bf16, bool_, u16, u32

from .spirv_spec import Op


class ConvertLowering:
    """Scalar conversions (mixed into KernelLowering)."""

    def convert(self, v: int, src: ScalarType, dst: ScalarType, exact: bool = False) -> int:
        """C-style conversion of ``v`` from ``src`` to ``dst``. ``exact``: ``v`` is known to be
        representable in ``dst`` (an f16 push constant in its f32 slot), so no rounding is needed."""
        f = self.f
        if src == dst:
            return v
        if bf16 in (src, dst):  # on the bits before the lowering (passes/legalize_f16.py)
            raise KernelTypeError(f"vulkan backend: a {src} -> {dst} conversion reached the lowering "
                                  "(bf16 conversions are written on the bits first)", self.fn.loc)
        if dst.is_bool:
            if src.is_float:
                return f.val(Op.FUnordNotEqual, self.ty(bool_), v, self.const(src, 0.0))
            return f.val(Op.INotEqual, self.ty(bool_), v, self.const(src, 0))
        if src.is_bool:
            one = 1.0 if dst.is_float else 1
            zero = 0.0 if dst.is_float else 0
            return f.val(Op.Select, self.ty(dst), v, self.const(dst, one), self.const(dst, zero))
        if dst.bits == 16 and dst.is_float and not exact:
            raise CompileError(f"vulkan backend: a {src} -> {dst} conversion reached the lowering "
                               "(passes/legalize_f16.py rounds to f16 on the bits)", self.fn.loc)
        if src.is_float and dst.is_float:
            # NoContraction makes the conversion "exact" for drivers' optimizers: Mesa otherwise folds
            # f64 -> f32 -> f64 into a no-op and the value never rounds to single precision.
            out = f.val(Op.FConvert, self.ty(dst), v)
            self.m.decorate(out, "NoContraction")
            return out
        if src.is_float:  # in range: passes/legalize_numerics.py converts only such values
            return f.val(Op.ConvertFToS if dst.is_signed else Op.ConvertFToU, self.ty(dst), v)
        if dst.is_float:
            return f.val(Op.ConvertSToF if src.is_signed else Op.ConvertUToF, self.ty(dst), v)
        # integer -> integer: extend by the source's signedness, then reinterpret the sign.
        from polykern.ir.types import SCALAR_TYPES

        if src.bits != dst.bits:
            if src.is_signed and dst.bits == 64:
                return self.sign_extend_to_64(v, src, dst)
            if src.is_signed:
                return f.val(Op.SConvert, self.ty(dst), v)
            wide = SCALAR_TYPES[f"u{dst.bits}"]
            v = f.val(Op.UConvert, self.ty(wide), v)
            src = wide
            if src == dst:
                return v
        return f.val(Op.Bitcast, self.ty(dst), v)

    def sign_extend_to_64(self, v: int, src: ScalarType, dst: ScalarType) -> int:
        """``v`` (signed, narrower) sign-extended to the 64-bit ``dst`` without OpSConvert to 64 bits:
        (zero-extended v32 ^ 2**31) - 2**31. Mesa 22.3's lavapipe compares an OpSConvert'ed i32 with
        a constant as if it had been zero-extended (i64(-1) < 0 was false: fuzz case fz6000113,
        i64(s) % 21 gave 15); no driver sees a sign extension here to rewrite."""


        f = self.f
        if src.bits < 32:
            v = f.val(Op.SConvert, self.ty(SCALAR_TYPES["i32"]), v)
        u64_ = SCALAR_TYPES["u64"]
        wide = f.val(Op.UConvert, self.ty(u64_), f.val(Op.Bitcast, self.ty(u32), v))
        bias = self.const(u64_, 1 << 31)
        out = f.val(Op.ISub, self.ty(u64_), f.val(Op.BitwiseXor, self.ty(u64_), wide, bias), bias)
        return out if dst == u64_ else f.val(Op.Bitcast, self.ty(dst), out)

    def bitcast(self, v: int, src: ScalarType, dst: ScalarType) -> int:
        """``ir.Bitcast``: OpBitcast between a float and the u32/u64 of its width; a u32's low half as an f16
        through a 2 x f16 vector (component 0 is the low-order bits), so no Int16 capability is needed; bf16
        (u16 bits) to and from u32 by OpUConvert."""
        f = self.f
        if dst.is_float and dst.bits == 16 and dst != bf16:
            half_t = self.ty(dst)
            pair = f.val(Op.Bitcast, self.m.t_vector(half_t, 2), v)
            return f.val(Op.CompositeExtract, half_t, pair, 0)
        if src.is_float and src.bits == 16 and src != bf16:
            half_t = self.ty(src)
            pair = f.val(Op.CompositeConstruct, self.m.t_vector(half_t, 2), v, self.const(src, 0.0))
            return f.val(Op.Bitcast, self.ty(u32), pair)
        if bf16 in (src, dst):  # bf16 values are u16 bits here (Int16, 16-bit storage)
            return f.val(Op.UConvert, self.ty(u16 if dst == bf16 else dst), v)
        return f.val(Op.Bitcast, self.ty(dst), v)

    # ------------------------------------------------------------------ atomics
