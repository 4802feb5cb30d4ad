"""Subgroups for the ``nvptx`` target: warps of 32 lanes through LLVM's NVVM intrinsics.

Lanes are numbered by the block's linear thread index (``x + bx * (y + by * z)``), like the CUDA C
path (cuda_c.py); the member mask names the lanes of the warp that exist (the block's last warp may
be partial). ``llvm.nvvm.shfl.sync.{idx,bfly}`` move 32-bit values (64-bit ones as two halves),
``llvm.nvvm.vote.{any,all}.sync`` vote, and 32-bit integer add/min/max use ``llvm.nvvm.redux.sync.*``
(``redux.sync``) on sm_80 and later; everything else reduces with ``shfl.sync.down`` into lane 0 (a
lane takes lane + offset only where that lane exists, so partial warps reduce exactly) and
broadcasts lane 0's value.
"""
from __future__ import annotations

import re

from llvmlite import ir as ll

from polykern.codegen.llvm_types import I32, I64
from polykern.ir import nodes as N

__all__ = ["NVPTXSubgroups", "has_redux"]

_I1 = ll.IntType(1)
_CLAMP = 0x1F  # shfl.sync's c operand for a full 32-lane segment
_REDUX = {("add", True): "add", ("add", False): "add", ("min", True): "min", ("min", False): "umin",
          ("max", True): "max", ("max", False): "umax"}


def has_redux(arch: str) -> bool:
    """Whether ``arch`` (``sm_90a`` ...) has ``redux.sync`` (sm_80 and later)."""
    m = re.match(r"sm_(\d+)", arch)
    return bool(m) and int(m.group(1)) >= 80


class NVPTXSubgroups:
    """Mixin for NVPTXEmitter: ``subgroup(e)``. ``REDUX``: the arch has redux.sync."""

    REDUX = False

    def _sg_tid(self):
        b = self.builder
        x, y, z = (self.read_special_reg("local_id", d) for d in range(3))
        bx, by = self.read_special_reg("local_size", 0), self.read_special_reg("local_size", 1)
        return b.add(x, b.mul(bx, b.add(y, b.mul(by, z))))

    def _sg_mask(self):
        b = self.builder
        sizes = [self.read_special_reg("local_size", d) for d in range(3)]
        n = b.sub(b.mul(b.mul(sizes[0], sizes[1]), sizes[2]), b.and_(self._sg_tid(), ll.Constant(I32, ~31)))
        full = b.icmp_unsigned(">=", n, ll.Constant(I32, 32))
        part = b.sub(b.shl(ll.Constant(I32, 1), b.select(full, ll.Constant(I32, 0), n)), ll.Constant(I32, 1))
        return b.select(full, ll.Constant(I32, -1), part)

    def _shfl(self, mode: str, mask, v, lane):
        """``shfl.sync.<mode>`` of a 32- or 64-bit value (64-bit: two 32-bit halves)."""
        b = self.builder
        ty = v.type
        if isinstance(ty, ll.FloatType):
            return self.call_intrinsic(f"llvm.nvvm.shfl.sync.{mode}.f32", ty, [mask, v, lane, ll.Constant(I32, _CLAMP)])
        bits = b.bitcast(v, I64) if isinstance(ty, ll.DoubleType) else v
        if bits.type.width == 32:
            return self.call_intrinsic(f"llvm.nvvm.shfl.sync.{mode}.i32", I32, [mask, bits, lane, ll.Constant(I32, _CLAMP)])
        lo, hi = b.trunc(bits, I32), b.trunc(b.lshr(bits, ll.Constant(I64, 32)), I32)
        lo, hi = (self.call_intrinsic(f"llvm.nvvm.shfl.sync.{mode}.i32", I32, [mask, h, lane, ll.Constant(I32, _CLAMP)])
                  for h in (lo, hi))
        out = b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ll.Constant(I64, 32)))
        return b.bitcast(out, ty) if isinstance(ty, ll.DoubleType) else out

    def subgroup(self, e: N.Subgroup) -> ll.Value:
        b = self.builder
        if e.op == "size":
            return ll.Constant(I32, 32)
        if e.op == "local_id":
            return b.and_(self._sg_tid(), ll.Constant(I32, 31))
        if e.op == "id":
            return b.lshr(self._sg_tid(), ll.Constant(I32, 5))
        mask = self._sg_mask()
        v = self.expr(e.args[0])
        if e.op in ("any", "all"):
            return self.call_intrinsic(f"llvm.nvvm.vote.{e.op}.sync", _I1, [mask, v])
        if e.op == "broadcast_first":
            return self._shfl("idx", mask, v, ll.Constant(I32, 0))
        if e.op in ("shuffle", "shuffle_xor"):  # the lane (mask) modulo 32: shfl.sync reads its low 5 bits
            return self._shfl("idx" if e.op == "shuffle" else "bfly", mask, v, self.expr(e.args[1]))
        st = e.type
        if self.REDUX and st.is_int and st.bits == 32:
            return self.call_intrinsic(f"llvm.nvvm.redux.sync.{_REDUX[(e.op, st.is_signed)]}", I32, [v, mask])
        # Into lane 0, then broadcast: lane l takes lane l + o only where that lane exists, so a
        # partial warp (the block's last) reduces over its lanes exactly.
        lane = b.and_(self._sg_tid(), ll.Constant(I32, 31))
        n = self.call_intrinsic("llvm.ctpop.i32", I32, [mask])
        for offset in (16, 8, 4, 2, 1):
            other = self._shfl("down", mask, v, ll.Constant(I32, offset))
            if e.op == "add":
                both = b.fadd(v, other) if st.is_float else b.add(v, other)
            else:
                both = self.math_call(e.op, st, [v, other])
            v = b.select(b.icmp_unsigned("<", b.add(lane, ll.Constant(I32, offset)), n), both, v)
        return self._shfl("idx", mask, v, ll.Constant(I32, 0))
