"""Hopper's matrix path for ``nvptx -arch=sm_90a`` (docs/language.md "Hopper: warpgroup MMA, tensor copies,
transaction barriers"; the rules and the exact meaning are ``polykern.ir.hopper``): the scheme of the CUDA C
path (``hopper.py``: the same PTX instructions, register layout, descriptors and launch facts) in LLVM IR.
llvmlite's LLVM (22) takes ``sm_90a`` as the NVPTX cpu: with ``+ptx80`` (nvptx.py) it writes ``.version 8.0``
and ``.target sm_90a`` itself, the PTX ISA wgmma, setmaxnreg and the tensor copies need.

- A barrier set is an ``addrspace(3)`` global of ``n`` i64 (8-byte aligned). Its operations, and the tensor
  copy, are the CUDA C path's inline PTX on the 32-bit shared address (the ``ptrtoint`` of the
  ``addrspace(3)`` pointer), each with a memory clobber: they order shared memory that the copy engine
  writes behind the compiler's back, so each is a full compiler barrier, as there. A wait spins on
  ``mbarrier.try_wait.parity`` in a loop of two blocks.
- A tensor map is a hidden parameter ``ptr byval([128 x i8]) align 64 "nvvm.grid_constant"`` after the
  user's parameters, in declaration order: NVPTX declares it ``.param .align 64 .b8 <entry>_param_<i>[128]``,
  as nvcc does CUDA C's ``const __grid_constant__`` CUtensorMap, so the runtime launches both alike
  (runtime/tensor_maps.py: ``kernelParams``). A copy reads it at the parameter's generic address
  (``cvta.param``; ``nvvm.grid_constant`` keeps LLVM from copying it to local memory).
- An accumulator is ``n/2`` f32 registers and a row vector (``pk.wg_vec``) 2, starting at 0 (private arrays
  with constant indices, which LLVM keeps in registers), in wgmma's register layout
  (``ir.hopper.element_row_col``): ``acc[i, j]`` / ``m[i]`` in ``pk.wg_elements`` / ``pk.wg_rows`` are the
  ``ir.WgReg`` loads and ``wg_set`` stores of the register the frontend computed. ``pk.wg_row_max`` /
  ``pk.wg_row_sum`` fold each thread's columns of the row in register order from the first (``llvm.maxnum``,
  i.e. ``max.f32`` with fmaxf's NaN rule; ``fadd``), then ``shfl.sync.bfly`` xor 1 and xor 2 over the full
  warp: ``(s0 + s1) + (s2 + s3)`` in each of the row's four lanes, as the CUDA C path.
- ``pk.wgmma`` / ``pk.wgmma_kn`` are ``wgmma.fence`` then ``wgmma.mma_async`` m64n{n}k16 as inline PTX whose
  ``n/2`` outputs are tied to the accumulator's values. B is a K-major descriptor (``desc``) or, for
  ``pk.wgmma_kn``, an MN-major one (``desc_mn``: the panel stride in bytes as the leading byte offset) with
  the transpose bit; A is a descriptor or four ``.b32`` registers: the source accumulator's registers
  ``k0/2 .. k0/2 + 7`` packed in pairs by ``cvt.rn.{f16,bf16}x2.f32``, whose FIRST source is the upper half
  (the pair's second register). Its call is ``convergent`` (every thread of the warpgroup executes it), like
  the intrinsics below. The accumulator and A's registers pass through an empty asm ("fencing the operand")
  before each ``wgmma.fence``, so LLVM writes those registers before the fence (else ptxas 13.0 injects a
  ``warpgroup.arrive``: advisory C7519); the accumulators pass through one after each ``wgmma.wait_group``
  too, so LLVM cannot move a read of them (``pk.wg_store``'s conversions, a row reduction) above the wait.
  Every wgmma is fenced (the CUDA C path leaves out the fences its ``_mark_fences`` shows are not needed;
  one with A from registers keeps its fence there too).
- ``wgmma.fence``, ``wgmma.commit_group``, ``wgmma.wait_group`` and ``setmaxnreg`` are LLVM's intrinsics.
- ``pk.warpgroups(n)``: the kernel attributes ``"nvvm.maxntid"="128n"`` and ``"nvvm.minctasm"="1"`` (PTX
  ``.maxntid 128n`` and ``.minnctapersm 1``, what ``__launch_bounds__(128 n, 1)`` gives; ``setmaxnreg``
  needs that cap).
- A swizzled ``pk.shared_dynamic`` array starts at the dynamic shared memory's first 1024-byte boundary
  (the runtime adds 1024 bytes for that: the ``shared_dynamic_align`` attribute); a swizzled ``pk.shared``
  array is refused, as on cuda.

Before a Hopper kernel is emitted, what this module does not lower is refused by name (a located
``KernelTypeError``), never lowered wrongly: an operation of ``ir.hopper.OPS`` that ``LOWERED`` does not list
(one added to the language before this module lowers it), an expression the emitter has no method for.
"""
from __future__ import annotations

from typing import List

from llvmlite import ir as ll

from polykern.codegen.c_names import ascii_ident
from polykern.codegen.llvm_attributes import RawArgumentAttributes, StringFunctionAttributes
from polykern.codegen.llvm_types import I32, I64, VOID, mem_type, value_type
from polykern.codegen.llvm_fragments import lane_fragment
from polykern.errors import KernelTypeError
from polykern.ir import hopper as H
from polykern.ir import nodes as N
from polykern.ir.types import f32

_F32 = value_type(f32)
_I8 = ll.IntType(8)
#: The constant fields of a wgmma shared-memory descriptor (bits 0-13 hold address >> 4, bits 16-29 the leading
#: byte offset in 16-byte units): stride 64 (8-row atoms 1024 bytes apart, in 16-byte units), 128-byte swizzle.
WG_DESC_FIELDS = (64 << 32) | (1 << 62)
#: The leading byte offset of a K-major operand: 1 (unused with a swizzle).
WG_DESC_K_LBO = 1
_MEM = "~{memory}"


def _i64(v: int) -> ll.Constant:
    return ll.Constant(I64, v)

#: op -> the NVPTXHopper method that lowers it.
LOWERED = {
    "mbar_init": "_mbar_init", "mbar_arrive": "_mbar_arrive", "mbar_arrive_tx": "_mbar_arrive_tx",
    "mbar_wait": "_mbar_wait", "tma_load": "_tma_load", "wg_fill": "_wg_fill", "wgmma": "_wgmma",
    "wgmma_kn": "_wgmma", "wgmma_commit": "_wgmma_commit", "wgmma_wait": "_wgmma_wait", "wg_store": "_wg_store",
    "setmaxnreg_inc": "_setmaxnreg", "setmaxnreg_dec": "_setmaxnreg", "wg_row_max": "_wg_row",
    "wg_row_sum": "_wg_row", "wg_set": "_wg_set", "named_barrier": "_named", "named_arrive": "_named",
}


def refusal(fn: N.Function, what: str, loc) -> KernelTypeError:
    return KernelTypeError(f"nvptx backend: {what} (in kernel '{fn.name}') is not supported: the nvptx target does "
                           "not lower it yet; build for 'cuda -arch=sm_90a' (CUDA C)", loc)


class NVPTXHopper:
    """Mixin of NVPTXEmitter: the kernel's hidden parameters and launch bounds, swizzled tiles,
    ``stmt_HopperOp``."""

    def _reset_function_state(self) -> None:
        super()._reset_function_state()
        self._hop_tmaps = {}   # tensor map -> its parameter
        self._hop_bars = {}    # barrier set -> pointer to its first barrier

    # ------------------------------------------------------------------ the kernel
    def emit_function(self, fn: N.Function) -> ll.Function:
        if fn.hopper is not None:
            self.hopper_refusals(fn)
        return super().emit_function(fn)

    def hopper_refusals(self, fn: N.Function) -> None:
        """Raise the refusal of the first construct of ``fn`` this module does not lower, if any."""
        for s in N.walk_stmts(fn.body):
            loc = getattr(s, "loc", None) or fn.loc
            if isinstance(s, N.HopperOp):
                if s.op not in LOWERED:
                    raise refusal(fn, H.builtin(s.op), loc)
            for e in N.stmt_exprs(s):
                for x in N.walk_expr(e):
                    if getattr(self, f"expr_{type(x).__name__}", None) is None:
                        raise refusal(fn, f"the expression {type(x).__name__}", getattr(x, "loc", None) or loc)

    def hidden_param_types(self, fn: N.Function) -> List[ll.Type]:
        hf = fn.hopper
        return [ll.PointerType()] * (len(hf.tensor_maps) if hf is not None else 0)

    def declare_kernel(self, fn: N.Function) -> ll.Function:
        llfn = super().declare_kernel(fn)
        hf = fn.hopper
        if hf is None:
            return llfn
        for arg, name in zip(llfn.args[len(fn.params):], hf.tensor_maps):
            arg.name = f"tmap.{name}"
            arg.attributes = RawArgumentAttributes((f"byval([{H.TMAP_PARAM_BYTES} x i8])", '"nvvm.grid_constant"'),
                                                   H.TMAP_PARAM_ALIGN)
        if hf.warpgroups:
            llfn.attributes = StringFunctionAttributes(llfn.attributes, {
                "nvvm.maxntid": str(H.WARPGROUP * hf.warpgroups), "nvvm.minctasm": "1"})
        return llfn

    def bind_params(self, fn: N.Function, args) -> None:
        super().bind_params(fn, args)
        if fn.hopper is not None:
            self._hop_tmaps = dict(zip(fn.hopper.tensor_maps, list(args)[len(fn.params):]))

    def hopper_tile(self, name: str, at, ptr):
        """``ptr`` (the shared array ``name``), or where a swizzled tile in it starts: the first 1024-byte
        boundary of the dynamic shared memory."""
        hf = self.fn.hopper
        if hf is None or name not in hf.swizzled:
            return ptr
        if not at.dynamic:
            raise KernelTypeError(f"nvptx backend: the swizzled tile '{name}' is not supported: a shared array that "
                                  "tensor copies write or wgmma reads is declared with pk.shared_dynamic on nvptx "
                                  "(its 1024-byte alignment comes from the launch's dynamic shared memory)",
                                  self.fn.loc)
        b = self.abuilder
        pad = b.and_(b.sub(ll.Constant(I32, 0), b.ptrtoint(ptr, I32)), ll.Constant(I32, H.SWIZZLE_ALIGN - 1))
        return b.gep(ptr, [pad], inbounds=True, source_etype=_I8)

    # ------------------------------------------------------------------ operations
    def stmt_HopperOp(self, s: N.HopperOp) -> None:  # hopper_refusals has refused any other op
        getattr(self, LOWERED[s.op])(s, [self.expr(x) for x in s.args])

    def _hop_asm(self, text: str, cons: str, args, ret: ll.Type = VOID, convergent: bool = False):
        fnty = ll.FunctionType(ret, [a.type for a in args])
        return self.builder.call(ll.InlineAsm(fnty, text, cons, True), args,
                                 attrs=("convergent",) if convergent else ())

    def _hop_smem(self, ptr) -> ll.Value:
        """The 32-bit shared address of an ``addrspace(3)`` pointer."""
        return self.builder.ptrtoint(ptr, I32)

    def _hop_bar(self, name: str, index) -> ll.Value:
        if name not in self._hop_bars:
            n = self.fn.hopper.mbarriers[name]
            gname = self.module.get_unique_name(f"{self.symbols[self.fn.name]}.{ascii_ident(name)}")
            gv = ll.GlobalVariable(self.module, ll.ArrayType(I64, n), addrspace=self.SHARED_AS, name=gname)
            gv.linkage = "internal"
            gv.initializer = ll.Constant(gv.value_type, ll.Undefined)
            gv.align = 8
            self._hop_bars[name] = gv.gep([ll.Constant(I32, 0), ll.Constant(I32, 0)])
        return self._hop_smem(self.builder.gep(self._hop_bars[name], [index], inbounds=True, source_etype=I64))

    def _hop_elem(self, name: str, off) -> ll.Value:
        """The 32-bit shared address of element ``off`` of shared array ``name``."""
        arr = self.arrays[name]
        return self._hop_smem(self.builder.gep(arr.ptr, [off], inbounds=True, source_etype=mem_type(arr.st)))

    def _mbar_init(self, s, a) -> None:
        self._hop_asm("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r," + _MEM, [self._hop_bar(s.names[0], a[0]), a[1]])
        self._hop_asm("fence.mbarrier_init.release.cluster;", _MEM, [])

    def _mbar_arrive(self, s, a) -> None:
        self._hop_asm("mbarrier.arrive.shared::cta.b64 _, [$0];", "r," + _MEM, [self._hop_bar(s.names[0], a[0])])

    def _mbar_arrive_tx(self, s, a) -> None:
        self._hop_asm("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r," + _MEM,
                      [self._hop_bar(s.names[0], a[0]), a[1]])

    def _mbar_wait(self, s, a) -> None:
        b = self.builder
        bar, parity = self._hop_bar(s.names[0], a[0]), b.and_(a[1], ll.Constant(I32, 1))
        spin, done = self.new_block("mbar.wait"), self.new_block("mbar.done")
        b.branch(spin)
        b.position_at_end(spin)
        ok = self._hop_asm("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n"
                           "selp.u32 $0, 1, 0, p;\n}", "=r,r,r," + _MEM, [bar, parity], I32)
        b.cbranch(b.icmp_unsigned("!=", ok, ll.Constant(I32, 0)), done, spin)
        b.position_at_end(done)

    def _tma_load(self, s, a) -> None:
        dst, tmap, bars = s.names
        where = self.builder.ptrtoint(self._hop_tmaps[tmap], I64)  # the parameter's generic address
        self._hop_asm("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                      "[$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r," + _MEM,
                      [self._hop_elem(dst, a[0]), where, a[2], a[1], self._hop_bar(bars, a[3])])

    # ------------------------------------------------------------------ the registers
    def _hop_regs(self, name: str):
        """(pointer to the registers of accumulator or row vector ``name``, how many)."""
        hf = self.fn.hopper
        n = hf.accs[name].n // 2 if name in hf.accs else H.VEC_SLOTS
        return lane_fragment(self, name, n, _F32), n

    def _hop_slot(self, ptr, j):
        """Register ``j`` (an int, or an i32 value) of the registers at ``ptr``."""
        at = ll.Constant(I64, j) if isinstance(j, int) else self.builder.sext(j, I64)
        return self.builder.gep(ptr, [at], inbounds=True, source_etype=_F32)

    def zero_locals(self, fn: N.Function) -> None:
        super().zero_locals(fn)
        if fn.hopper is not None:  # every copy of a row vector starts at 0
            for name in fn.hopper.vecs:
                ptr, n = self._hop_regs(name)
                for j in range(n):
                    self.builder.store(ll.Constant(_F32, 0.0), self._hop_slot(ptr, j))

    def _hop_index(self, e: N.Expr, v):
        """A register index: a constant as an int, else the i32 value ``v`` (the index variable of the unrolled
        pk.wg_elements / pk.wg_rows loop, or a wgmma's k0: constants once LLVM has folded and unrolled)."""
        return int(e.value) if isinstance(e, N.Const) else v

    def expr_WgReg(self, e: N.WgReg) -> ll.Value:
        ptr, _ = self._hop_regs(e.name)
        return self.builder.load(self._hop_slot(ptr, self._hop_index(e.index, self.expr(e.index))), typ=_F32)

    def _wg_set(self, s, a) -> None:
        ptr, _ = self._hop_regs(s.names[0])
        self.builder.store(a[1], self._hop_slot(ptr, self._hop_index(s.args[0], a[0])))

    def _wg_row(self, s, a) -> None:
        """``vec[i] = max / sum over j of acc[i, j]`` (ir.hopper.reference_row_max / _sum; hopper.py
        ``_row_reduce``): register slot ``r`` of the vector is the row of the accumulator's registers
        ``4c + 2r + {0, 1}``; each thread folds them in that order, then the row's four lanes combine by two
        butterfly shuffles, (s0 + s1) + (s2 + s3) in every lane."""
        b = self.builder
        vec, acc = s.names
        src, n = self._hop_regs(acc)
        dst, _ = self._hop_regs(vec)
        full = ll.Constant(I32, -1)

        def fold(x, y):
            return self.math_call("max", f32, [x, y]) if s.op == "wg_row_max" else b.fadd(x, y)

        for r in range(H.VEC_SLOTS):
            regs = [4 * c + 2 * r + d for c in range(n // 4) for d in (0, 1)]
            v = b.load(self._hop_slot(src, regs[0]), typ=_F32)
            for j in regs[1:]:
                v = fold(v, b.load(self._hop_slot(src, j), typ=_F32))
            for x in (1, 2):
                v = fold(v, self._shfl("bfly", full, v, ll.Constant(I32, x)))
            b.store(v, self._hop_slot(dst, r))

    def _hop_through_asm(self, name: str, text: str, cons: str, args) -> None:
        """The accumulator's registers as the ``=f`` outputs of inline PTX ``text``, tied to their current
        values (inputs after ``args``, whose constraints are ``cons``)."""
        b = self.builder
        ptr, n = self._hop_regs(name)
        vals = [b.load(self._hop_slot(ptr, j), typ=_F32) for j in range(n)]
        constraint = ",".join(["=f"] * n + ([cons] if cons else []) + [str(j) for j in range(n)])
        res = self._hop_asm(text, constraint, list(args) + vals, ll.LiteralStructType([_F32] * n), convergent=True)
        for j in range(n):
            b.store(b.extract_value(res, j), self._hop_slot(ptr, j))

    def _hop_fence_operands(self) -> None:
        for name in self.fn.hopper.accs:
            self._hop_through_asm(name, "", "", [])

    def _wg_fill(self, s, a) -> None:
        ptr, n = self._hop_regs(s.names[0])
        for j in range(n):
            self.builder.store(a[0], self._hop_slot(ptr, j))

    def _hop_desc(self, addr, lbo_bytes: int = 16 * WG_DESC_K_LBO) -> ll.Value:
        """A wgmma shared-memory descriptor of the tile row at shared address ``addr``; ``lbo_bytes``: the
        leading byte offset (an MN-major operand's panel stride; hopper.py ``pk_wg_desc_mn``)."""
        b = self.builder
        bits = b.lshr(b.and_(addr, ll.Constant(I32, 0x3FFFF)), ll.Constant(I32, 4))
        return b.or_(b.zext(bits, I64), ll.Constant(I64, WG_DESC_FIELDS | (((lbo_bytes >> 4) & 0x3FFF) << 16)))

    def _hop_a_registers(self, src: str, k0, elem: str):
        """wgmma's A operand from accumulator ``src``'s columns ``k0 .. k0 + 15``: its registers k0/2 + 2q and
        k0/2 + 2q + 1 rounded to ``elem`` (nearest even) and packed, the first in the low half, for q = 0..3
        (hopper.py ``pk_pack_f16``), then fenced as the accumulator is."""
        b = self.builder
        ptr, _ = self._hop_regs(src)
        base = k0 >> 1 if isinstance(k0, int) else b.ashr(k0, ll.Constant(I32, 1))
        packed = []
        for q in range(4):
            lo, hi = (b.load(self._hop_slot(ptr, base + 2 * q + d if isinstance(base, int) else
                                            b.add(base, ll.Constant(I32, 2 * q + d))), typ=_F32) for d in (0, 1))
            cvt = ll.InlineAsm(ll.FunctionType(I32, [_F32, _F32]), f"cvt.rn.{elem}x2.f32 $0, $1, $2;", "=r,f,f")
            packed.append(b.call(cvt, [hi, lo]))  # cvt's first source is the upper half
        res = self._hop_asm("", ",".join(["=r"] * 4 + [str(q) for q in range(4)]), packed,
                            ll.LiteralStructType([I32] * 4), convergent=True)
        return [b.extract_value(res, q) for q in range(4)]

    def _wgmma(self, s, a) -> None:
        """``wgmma.mma_async`` m64nNk16 (hopper.py ``_wgmma``): A by descriptor or from an accumulator's
        registers; B K-major (``pk.wgmma``) or MN-major (``pk.wgmma_kn``: transpose bit, panels ``panel``
        elements apart)."""
        acc, ta, tb = s.names
        hf = self.fn.hopper
        at = hf.accs[acc]
        bt = self.fn.arrays[tb].elem
        elem, n = bt.name, at.n // 2
        if s.op == "wgmma_kn":
            b_desc, trans_b = self._hop_desc(self._hop_elem(tb, a[1]), int(s.args[2].value) * bt.nbytes), 1
        else:
            b_desc, trans_b = self._hop_desc(self._hop_elem(tb, a[1])), 0
        if ta in hf.accs:  # A from registers: {$n .. $n+3}, B at $n+4
            ins, cons = self._hop_a_registers(ta, self._hop_index(s.args[0], a[0]), elem) + [b_desc], "r,r,r,r,l"
            operands, tail = f"{{${n}, ${n + 1}, ${n + 2}, ${n + 3}}}, ${n + 4}", f"p, 1, 1, {trans_b}"
        else:
            ins, cons = [self._hop_desc(self._hop_elem(ta, a[0])), b_desc], "l,l"
            operands, tail = f"${n}, ${n + 1}", f"p, 1, 1, 0, {trans_b}"
        self._hop_through_asm(acc, "", "", [])
        self.call_intrinsic("llvm.nvvm.wgmma.fence.sync.aligned", VOID, [])
        outs = ", ".join(f"${j}" for j in range(n))
        text = (f"{{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n{at.n}k16.f32.{elem}."
                f"{elem} {{{outs}}}, {operands}, {tail};\n}}")
        self._hop_through_asm(acc, text, cons, ins)

    def _wgmma_commit(self, s, a) -> None:
        self.call_intrinsic("llvm.nvvm.wgmma.commit_group.sync.aligned", VOID, [])

    def _wgmma_wait(self, s, a) -> None:
        self.call_intrinsic("llvm.nvvm.wgmma.wait_group.sync.aligned", VOID,
                            [ll.Constant(I64, int(s.args[0].value))])
        self._hop_fence_operands()

    def _named(self, s, a) -> None:
        """``bar.sync id, count`` / ``bar.arrive id, count`` (the count a constant: ir.hopper.check_named_count),
        as the CUDA C path writes them: convergent, and a memory clobber (the barrier orders memory)."""
        kind = "sync" if s.op == "named_barrier" else "arrive"
        bar_id = a[0] if a[0].type == I32 else self.builder.trunc(a[0], I32)
        self._hop_asm(f"bar.{kind} $0, {int(s.args[1].value)};", "r,~{memory}", [bar_id], convergent=True)

    def _setmaxnreg(self, s, a) -> None:
        self.call_intrinsic(f"llvm.nvvm.setmaxnreg.{s.op[-3:]}.sync.aligned.u32", VOID,
                            [ll.Constant(I32, int(s.args[0].value))])

    def _wg_store(self, s, a) -> None:
        """Thread t of the warpgroup (warp w, lane l) holds rows 16w + l/4 and +8, columns 8j + 2(l%4) + {0, 1}
        (hopper.py): each pair is one 64-bit (f32) or 32-bit (f16) store where ``off`` and ``ld`` are even (the
        buffer is aligned to two elements: the kernel's ``vector_align``), element by element otherwise."""
        b = self.builder
        buf, acc = s.names
        ptr, _ = self._hop_regs(acc)
        base, st = self.buffers[buf]
        mty = mem_type(st)
        t = b.and_(self._sg_tid(), ll.Constant(I32, H.WARPGROUP - 1))
        w, lane = b.zext(b.lshr(t, ll.Constant(I32, 5)), I64), b.zext(b.and_(t, ll.Constant(I32, 31)), I64)
        off, ld = (b.sext(v, I64) for v in a)
        row = b.add(b.mul(b.add(b.mul(w, _i64(16)), b.lshr(lane, _i64(2))), ld), off)
        rows = (row, b.add(row, b.mul(ld, _i64(8))))
        col0 = b.mul(b.and_(lane, _i64(3)), _i64(2))
        even = b.icmp_unsigned("==", b.and_(b.or_(off, ld), _i64(1)), _i64(0))
        with b.if_else(even) as (pairs, singles):
            with pairs:
                self._hop_store_pairs(ptr, base, mty, rows, col0, s, True)
            with singles:
                self._hop_store_pairs(ptr, base, mty, rows, col0, s, False)

    def _hop_store_pairs(self, ptr, base, mty, rows, col0, s, paired: bool) -> None:
        """The stores of one path. The element-by-element path converts and stores each pair's second element
        first: the two paths then begin differently, so LLVM does not hoist the first pair's f16 conversions
        (the same in both) above the branch, which makes ptxas 13.0 serialize the wgmmas of the persistent
        GEMM (advisory C7514: the accumulator read "within the pipeline stage"; test_hopper_nvptx.py)."""
        b = self.builder
        st = self.buffers[s.names[0]][1]
        vec = ll.VectorType(mty, 2)
        for j in range(self.fn.hopper.accs[s.names[1]].n // 8):
            col = b.add(col0, ll.Constant(I64, 8 * j))
            for half, row in enumerate(rows):
                at = b.gep(base, [b.add(row, col)], inbounds=True, source_etype=mty)
                vals = {}
                for k in ((0, 1) if paired else (1, 0)):
                    v = b.load(self._hop_slot(ptr, 4 * j + 2 * half + k), typ=_F32)
                    vals[k] = self.cast(v, f32, st)  # f16: rounded to nearest even; f32: itself
                    if not paired:
                        b.store(vals[k], b.gep(at, [ll.Constant(I64, k)], inbounds=True, source_etype=mty))
                if paired:
                    pair = ll.Constant(vec, ll.Undefined)
                    for k in (0, 1):
                        pair = b.insert_element(pair, vals[k], ll.Constant(I32, k))
                    b.store(pair, at, align=2 * st.nbytes)
