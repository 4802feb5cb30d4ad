"""Subgroups for the ``rocm`` target: wavefronts through LLVM's amdgcn intrinsics.

The subgroup is the hardware wavefront: 64 lanes on GCN/CDNA (gfx9xx), 32 on RDNA (gfx10 and later,
LLVM's default wave size there). Lanes are numbered by the work-group's linear index
(``x + bx * (y + by * z)``), the order in which the hardware fills wavefronts. Values move with
``llvm.amdgcn.ds.bpermute`` (``ds_bpermute_b32``; 64-bit values as two halves), votes use
``llvm.amdgcn.ballot``, and reductions go down into lane 0 (a lane takes lane + offset only where
that lane exists, so a partial last wavefront reduces exactly) and broadcast lane 0's value.
"""
from __future__ import annotations

from llvmlite import ir as ll

from polykern.codegen.llvm_types import I32, I64
from polykern.ir import nodes as N

__all__ = ["AMDGPUSubgroups", "wave_size"]

_I1 = ll.IntType(1)


def wave_size(mcpu: str) -> int:
    """Lanes per wavefront of ``mcpu`` with LLVM's default features (gfx9xx: 64, later: 32)."""
    return 64 if mcpu.startswith("gfx9") else 32


class AMDGPUSubgroups:
    """Mixin for AMDGPUEmitter: ``subgroup(e)``; ``WAVE`` is set per target (wave_size)."""

    WAVE = 64

    def _sg_tid(self):
        b = self.builder
        x, y, z = (self.read_special_reg("local_id", d) for d in range(3))
        bx, by = self.read_special_reg("local_size", 0), self.read_special_reg("local_size", 1)
        return b.add(x, b.mul(bx, b.add(y, b.mul(by, z))))

    def _ballot(self, p):
        ity = ll.IntType(self.WAVE)
        return self.call_intrinsic(f"llvm.amdgcn.ballot.i{self.WAVE}", ity, [p])

    def _bpermute(self, lane, v):
        """``v`` of wavefront lane ``lane`` (an i32 lane number, already in range)."""
        b = self.builder
        ty = v.type
        addr = b.shl(lane, ll.Constant(I32, 2))

        def move(x):
            return self.call_intrinsic("llvm.amdgcn.ds.bpermute", I32, [addr, x])

        if isinstance(ty, ll.FloatType):
            return b.bitcast(move(b.bitcast(v, I32)), ty)
        bits = b.bitcast(v, I64) if isinstance(ty, ll.DoubleType) else v
        if bits.type.width == 32:
            return move(bits)
        lo, hi = move(b.trunc(bits, I32)), move(b.trunc(b.lshr(bits, ll.Constant(I64, 32)), I32))
        out = b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ll.Constant(I64, 32)))
        return b.bitcast(out, ty) if isinstance(ty, ll.DoubleType) else out

    def subgroup(self, e: N.Subgroup) -> ll.Value:
        b = self.builder
        w = self.WAVE
        if e.op == "size":
            return ll.Constant(I32, w)
        lane = b.and_(self._sg_tid(), ll.Constant(I32, w - 1))
        if e.op == "local_id":
            return lane
        if e.op == "id":
            return b.lshr(self._sg_tid(), ll.Constant(I32, w.bit_length() - 1))
        v = self.expr(e.args[0])
        if e.op in ("any", "all"):
            ballot = self._ballot(v)
            if e.op == "any":
                return b.icmp_unsigned("!=", ballot, ll.Constant(ballot.type, 0))
            return b.icmp_unsigned("==", ballot, self._ballot(ll.Constant(_I1, 1)))
        if e.op == "broadcast_first":
            return self._bpermute(ll.Constant(I32, 0), v)
        if e.op in ("shuffle", "shuffle_xor"):  # the lane (mask) modulo the wavefront size
            arg = b.and_(self.expr(e.args[1]), ll.Constant(I32, w - 1))
            return self._bpermute(arg if e.op == "shuffle" else b.xor(lane, arg), v)
        st = e.type
        existing = self._ballot(ll.Constant(_I1, 1))
        n = b.trunc(self.call_intrinsic(f"llvm.ctpop.i{w}", existing.type, [existing]), I32) if w == 64 else \
            self.call_intrinsic("llvm.ctpop.i32", I32, [existing])
        offset = w // 2
        while offset:
            src = b.add(lane, ll.Constant(I32, offset))
            ok = b.icmp_unsigned("<", src, n)
            other = self._bpermute(b.select(ok, src, lane), v)
            if e.op == "add":
                both = b.fadd(v, other) if st.is_float else b.add(v, other)
            else:
                both = self.math_call(e.op, st, [v, other])
            v = b.select(ok, both, v)
            offset //= 2
        return self._bpermute(ll.Constant(I32, 0), v)
