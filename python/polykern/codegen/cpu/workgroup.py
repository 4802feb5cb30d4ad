"""CPU-style kernels: one call runs a range of whole workgroups, work-items are loops.

For each kernel ``K`` the module gets (docs/internals.md, "CPU (llvm) payload")::

    void K__range(void **args, const int32_t *launch, int64_t group_begin, int64_t group_end)

``args[i]`` points at the i-th argument's value (a scalar's bytes, or a buffer's data
pointer); ``launch`` is ``{grid_x, grid_y, grid_z, block_x, block_y, block_z}``; groups are
numbered x fastest. The function runs the groups ``[group_begin, group_end)`` one after the
other, so its caller can hand disjoint ranges to different threads.

Inside a group the work-items run as two nested loops: rows (``local_id`` 1 and 2, derived
from the row number) and, innermost, ``local_id(0)``, the loop LLVM vectorizes:

- a kernel without ``barrier()`` is one such loop nest running the whole body (``return``
  skips to the next work-item). Its x loop is versioned per row (see
  :func:`polykern.passes.barrier_fission.plan_row_guards`): when the bounds checks at the top of the kernel hold
  for the whole row, a copy of the body without them runs — no predicated stores, so it
  vectorizes — otherwise the general body;
- a kernel with barriers follows the :mod:`polykern.passes.barrier_fission` plan: every region is a loop over
  the running work-items, barrier-containing control flow runs once per group (plainly, when
  it is uniform), and assignments to uniform locals run once per group.

Every scalar local and private array starts at zero in every work-item (the IR's contract):
region-local storage is cleared at the start of each work-item, per-work-item storage and
uniform locals at the start of each group.

Shared arrays are stack memory of the call (one group at a time per call, so they are per
workgroup). Per-work-item storage is sized at run time from the launch's block size (a
dynamically sized ``alloca`` in the entry block), so no scratch buffer crosses the ABI.
Atomics are real ``atomicrmw``/``cmpxchg``: groups run concurrently on threads.

``global_id`` is computed without signed/unsigned wrap (``nsw nuw``): a runtime must not
launch a kernel that reads ``global_id(d)`` with ``grid[d] * block[d] > 2**31`` (the polykern
CPU runtime refuses such launches; the value would not fit the language's i32 anyway).
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional

from llvmlite import ir as ll

from ...errors import CompileError
from ...ir import nodes as N
from ...ir.dynamic_shared import size_param
from ...ir.types import BufferType
from ...passes.barrier_fission import (STATE_RETURNED, FissionPlan, GIf, GLoop, Region, RowGuards, Uniform,
                                      _stmt_names, plan_fission, plan_row_guards)
from ..llvm_emitter import LLVMKernelEmitter
from ..llvm_storage import ArrayStorage, LoopTarget, Slot
from ..llvm_types import I1, I8, I32, I64, VOID, mem_type, value_type
from .matrix import allocate_fragments, emit_matrix_op
from .subgroups import emit_subgroup, lower_collectives

__all__ = ["WorkgroupLoopEmitter", "RANGE_SUFFIX"]

RANGE_SUFFIX = "__range"
PTR = ll.PointerType()
_NOWRAP = ("nsw", "nuw")
_COLD_LOOP_MD = re.compile(r'^(!\d+) = !\{ ?!"polykern\.cold_loop\.\d+" ?\}$', re.M)
_ACCESS_GROUP_MD = re.compile(r'^(!\d+) = !\{ ?!"polykern\.access_group\.\d+" ?\}$', re.M)
_PARALLEL_LOOP_MD = re.compile(r'^(!\d+) = !\{ ?!"polykern\.parallel_loop\.\d+", (!\d+) ?\}$', re.M)
# Loops that only do bookkeeping or handle the edges of a launch: vectorizing and unrolling them
# costs compile time and code size for no speed.
_COLD_LOOP_HINTS = '!{!"llvm.loop.vectorize.enable", i1 false}, !{!"llvm.loop.unroll.disable"}'


def _c64(v: int) -> ll.Constant:
    return ll.Constant(I64, v)


class _GroupLoopTarget(LoopTarget):
    """break/continue of a barrier loop seen from inside a region: record it in the work-item's
    state and go on with the next work-item."""

    def __init__(self, loop: GLoop):
        super().__init__(None, None)
        self.loop = loop

    def do_break(self, em: "WorkgroupLoopEmitter") -> None:
        em.set_state(self.loop.left)
        em.builder.branch(em.item_latch)

    def do_continue(self, em: "WorkgroupLoopEmitter") -> None:
        em.set_state(self.loop.cont)
        em.builder.branch(em.item_latch)


class WorkgroupLoopEmitter(LLVMKernelEmitter):
    """Emits ``K__range`` entry points (see the module docstring). ``SHARED_ALIGN`` aligns
    shared arrays for vector loads; ``ROW_FAST_PATH`` enables the guard-free row version."""

    SHARED_ALIGN = 64
    ROW_FAST_PATH = True
    SPLIT_ALL_REGIONS = False
    VECTORIZE_REGIONS = True

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        #: Per kernel: facts the runtime needs ("item_bytes": per-work-item stack bytes).
        self.kernel_facts: Dict[str, Dict[str, int]] = {}

    def _reset_function_state(self) -> None:
        super()._reset_function_state()
        self.plan: Optional[FissionPlan] = None
        self.state = None
        self.item_latch = None
        self.lid: List[ll.Value] = []
        self.gid: List[ll.Value] = []
        self.row_ids: List[ll.Value] = []
        self._access_group = None

    # ------------------------------------------------------------------ entry point
    def emit_function(self, fn: N.Function) -> ll.Function:
        self._reset_function_state()
        fn, pinned = lower_collectives(fn)  # a collective is a fission point (cpu/subgroups.py)
        self.fn = fn
        self.plan = plan_fission(fn, pinned) if N.uses_barrier(fn) else None
        fty = ll.FunctionType(VOID, [PTR, PTR, I64, I64])
        llfn = ll.Function(self.module, fty, name=fn.name + RANGE_SUFFIX)
        for arg, name in zip(llfn.args, ("args", "launch", "group_begin", "group_end")):
            arg.name = name
        llfn.attributes.add("nounwind")
        args, launch, begin, end = llfn.args
        self.open_body(llfn)
        ab = self.abuilder
        dims = [ab.load(ab.gep(launch, [_c64(i)], inbounds=True, source_etype=I32), typ=I32, name=n)
                for i, n in enumerate(("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"))]
        in_range = self.module.add_metadata([ll.Constant(I32, 1), ll.Constant(I32, -(1 << 31))])
        for d in dims:  # launch dimensions are 1 .. 2**31 - 1
            d.set_metadata("range", in_range)
        self.grid32, self.block32 = dims[:3], dims[3:]
        self.grid64 = [ab.zext(d, I64) for d in self.grid32]
        self.block64 = [ab.zext(d, I64) for d in self.block32]
        self.nrows = ab.mul(self.block64[1], self.block64[2], name="nrows", flags=_NOWRAP)
        self.nitems = ab.mul(self.block64[0], self.nrows, name="nitems", flags=_NOWRAP)
        self._bind_args(fn, args)
        self._allocate_storage(fn)
        self._group_loop(begin, end)
        self.close_body()
        self.kernel_facts[fn.name] = {
            "item_bytes": self.plan.item_bytes(fn) if self.plan else 0,
            "barrier_constructs": self.plan.constructs if self.plan else 0,
        }
        return llfn

    def _bind_args(self, fn: N.Function, args) -> None:
        ab = self.abuilder
        saved, self.builder = self.builder, ab
        try:
            for i, p in enumerate(fn.params):
                at = ab.load(ab.gep(args, [_c64(i)], inbounds=True, source_etype=PTR), typ=PTR)
                if isinstance(p.type, BufferType):
                    self.buffers[p.name] = (ab.load(at, typ=PTR, name=p.name), p.type.elem)
                else:
                    raw = ab.load(at, typ=mem_type(p.type), name=p.name)
                    self.slots[p.name] = Slot(p.name, value_type(p.type), value=self.param_value(p, raw))
        finally:
            self.builder = saved

    def _allocate_storage(self, fn: N.Function) -> None:
        plan = self.plan
        per_vars = plan.per_item_vars if plan else set()
        per_arrays = plan.per_item_arrays if plan else set()
        for name, at in fn.arrays.items():
            ty = mem_type(at.elem)
            if at.dynamic:  # pk.shared_dynamic: its length is a parameter (ir/dynamic_shared.py)
                n = self.slots[size_param(fn)].value
                count = self.abuilder.sext(n, I64) if n.type.width < 64 else n
                ptr = self.alloca(ty, count, name=name, align=self.SHARED_ALIGN)
                self.arrays[name] = ArrayStorage(ptr, at.elem, 0)
            elif at.scope == "shared":
                ptr = self.alloca(ty, _c64(at.size), name=name, align=self.SHARED_ALIGN)
                self.arrays[name] = ArrayStorage(ptr, at.elem, at.size)
            elif name in per_arrays:
                count = self.abuilder.mul(self.nitems, _c64(at.size))
                self.arrays[name] = ArrayStorage(self.alloca(ty, count, name=name, align=16), at.elem, at.size, True)
            else:
                self.arrays[name] = ArrayStorage(self.alloca(ty, _c64(at.size), name=name, align=16),
                                                 at.elem, at.size)
        all_locals = dict(fn.locals)
        if plan:
            all_locals.update(plan.hidden_locals)
        for name, st in all_locals.items():
            ty = value_type(st)
            if name in per_vars:
                self.slots[name] = Slot(name, ty, self.alloca(ty, self.nitems, name=name, align=16), per_item=True)
            else:
                self.slots[name] = Slot(name, ty, self.alloca(ty, name=name))
        if plan and plan.needs_state:
            self.state = self.alloca(I32, self.nitems, name="state", align=16)
        if plan:
            self.counter = self.alloca(I64, name="running")
        allocate_fragments(self, fn)

    # ------------------------------------------------------------------ zero-initialization
    def _memset(self, ptr, nbytes) -> None:
        fn = self.declare("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])  # opaque pointer: any array
        self.builder.call(fn, [ptr, ll.Constant(I8, 0), nbytes, ll.Constant(I1, 0)])

    def _zero_scalars(self, names) -> None:
        for name in sorted(names):
            slot = self.slots[name]
            slot.store(self, ll.Constant(slot.ty, None))

    def _zero_group_storage(self) -> None:
        """Per group: the state words, per-work-item storage and uniform locals start at zero."""
        plan = self.plan
        if self.state is not None:
            self._memset(self.state, self.builder.mul(self.nitems, _c64(4)))
        for name in sorted(plan.per_item_vars):
            slot = self.slots[name]
            self._memset(slot.ptr, self.builder.mul(self.nitems, _c64(self._nbytes(slot.ty))))
        for name in sorted(plan.per_item_arrays):
            arr = self.arrays[name]
            self._memset(arr.ptr, self.builder.mul(self.nitems, _c64(arr.size * arr.st.nbytes)))
        self._zero_scalars(n for n in plan.uniform_vars if n in self.fn.locals)

    def _nbytes(self, ty: ll.Type) -> int:
        if isinstance(ty, ll.IntType):
            return max(1, ty.width // 8)
        return {ll.HalfType: 2, ll.FloatType: 4, ll.DoubleType: 8}[type(ty)]

    def _zero_item_storage(self, stmts: List[N.Stmt]) -> None:
        """Per work-item, at the start of a region: its region-local scalars and arrays."""
        scalars, arrays = set(), set()
        if self.plan is None:
            scalars, arrays = set(self.fn.locals), set(self.fn.local_arrays)
        else:
            _stmt_names(stmts, scalars, arrays)
            scalars = {n for n in scalars if n in self.fn.locals and n not in self.plan.per_item_vars
                       and n not in self.plan.uniform_vars and n not in self.plan.remat}
            arrays = {n for n in arrays if n in self.fn.local_arrays and n not in self.plan.per_item_arrays}
        self._zero_scalars(scalars)
        for name in sorted(arrays):
            arr = self.arrays[name]
            self._memset(arr.ptr, _c64(arr.size * arr.st.nbytes))

    # ------------------------------------------------------------------ loops
    def render(self) -> str:
        text = _COLD_LOOP_MD.sub(lambda m: f"{m.group(1)} = distinct !{{{m.group(1)}, {_COLD_LOOP_HINTS}}}",
                                 super().render())
        text = _ACCESS_GROUP_MD.sub(lambda m: f"{m.group(1)} = distinct !{{}}", text)
        return _PARALLEL_LOOP_MD.sub(lambda m: f"{m.group(1)} = distinct !{{{m.group(1)}, "
                                               f"!{{!\"llvm.loop.parallel_accesses\", {m.group(2)}}}}}", text)

    def _new_md(self, what: str, *operands):
        self._md_count = getattr(self, "_md_count", 0) + 1
        return self.module.add_metadata([ll.MetaDataString(self.module, f"polykern.{what}.{self._md_count}"),
                                         *operands])

    def mark_access(self, instr, base: str) -> None:
        """Work-items of one loop are independent (SIMT: without a barrier or an atomic, one
        work-item never observes another's accesses in an ordered way), so element accesses of
        buffers, shared arrays and per-work-item arrays join the loop's parallel access group: no
        runtime alias checks, vectorization without dependence analysis. Not: private arrays
        that all work-items of the loop reuse one after another."""
        group = getattr(self, "_access_group", None)
        if group is None:
            return
        arr = self.arrays.get(base)
        if arr is not None and not arr.per_item and self.fn.arrays[base].scope != "shared":
            return
        instr.set_metadata("llvm.access.group", group)

    def counted_loop(self, lo, hi, name: str, body: Callable[[ll.Value, ll.Block], None], cold: bool = False,
                     parallel=None) -> None:
        """``for (i = lo; i < hi; i++) body(i, latch)`` on i64; ``body`` may branch to ``latch``.
        A ``cold`` loop is not vectorized or unrolled; ``parallel``: the access group whose
        accesses the loop's iterations never order (see :meth:`mark_access`)."""
        b = self.builder
        pre = b.block
        head, blk, latch, done = (self.new_block(f"{name}.{s}") for s in ("head", "body", "latch", "end"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name=name)
        i.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", i, hi), blk, done)
        b.position_at_end(blk)
        body(i, latch)
        if not b.block.is_terminated:
            b.branch(latch)
        b.position_at_end(latch)
        nxt = b.add(i, _c64(1), flags=_NOWRAP)  # i < hi: cannot wrap
        br = b.branch(head)
        if cold:
            br.set_metadata("llvm.loop", self._new_md("cold_loop"))
        elif parallel is not None:
            br.set_metadata("llvm.loop", self._new_md("parallel_loop", parallel))
        i.add_incoming(nxt, latch)
        b.position_at_end(done)

    def _group_loop(self, begin, end) -> None:
        """Groups [begin, end): their (x, y, z) ids are divided out once, then stepped with carries."""
        b = self.builder
        gx0 = b.urem(begin, self.grid64[0])
        rest = b.udiv(begin, self.grid64[0])
        start = (gx0, b.urem(rest, self.grid64[1]), b.udiv(rest, self.grid64[1]))
        pre = b.block
        head, body, done = self.new_block("group.head"), self.new_block("group.body"), self.new_block("group.end")
        b.branch(head)
        b.position_at_end(head)
        g = b.phi(I64, name="group")
        ids = [b.phi(I64, name=f"g{d}") for d in range(3)]
        g.add_incoming(begin, pre)
        for phi, v in zip(ids, start):
            phi.add_incoming(v, pre)
        b.cbranch(b.icmp_signed("<", g, end), body, done)
        b.position_at_end(body)
        self.gid = [b.trunc(v, I32, name=f"group_id{d}") for d, v in enumerate(ids)]
        if self.plan is None:
            self.emit_region(self.fn.body)
        else:
            self._zero_group_storage()
            self.emit_nodes(self.plan.nodes)
        gx1 = b.add(ids[0], _c64(1), flags=_NOWRAP)
        wrap_x = b.icmp_unsigned("==", gx1, self.grid64[0])
        gy1 = b.select(wrap_x, b.add(ids[1], _c64(1), flags=_NOWRAP), ids[1])
        wrap_y = b.icmp_unsigned("==", gy1, self.grid64[1])
        nxt = (b.select(wrap_x, _c64(0), gx1), b.select(wrap_y, _c64(0), gy1),
               b.select(wrap_y, b.add(ids[2], _c64(1), flags=_NOWRAP), ids[2]))
        latch = b.block
        g.add_incoming(b.add(g, _c64(1), flags=_NOWRAP), latch)
        for phi, v in zip(ids, nxt):
            phi.add_incoming(v, latch)
        b.branch(head)
        b.position_at_end(done)
        b.ret_void()

    def row_loop(self, body: Callable[[ll.Value, List[ll.Value]], None]) -> None:
        """``body(row_base, [ly, lz])`` for every row of the block (local ids 1 and 2)."""
        def row(r, _):
            b = self.builder
            by = self.block64[1]
            ly = b.trunc(b.urem(r, by), I32, name="local_id1")
            lz = b.trunc(b.udiv(r, by), I32, name="local_id2")
            body(b.mul(r, self.block64[0], flags=_NOWRAP), [ly, lz])

        self.counted_loop(_c64(0), self.nrows, "row", row)

    def x_loop(self, row_base, row_ids, body: Callable[[ll.Value], None], running_only: bool,
               cold: bool = False, lo=None, hi=None) -> None:
        """``body(item)`` for local_id(0) in ``[lo, hi)`` (default: the whole row)."""
        def xloop(lx, latch):
            b = self.builder
            t = b.add(row_base, lx, name="item", flags=_NOWRAP)
            self.item, self.item_latch = t, latch
            self.lid = [b.trunc(lx, I32, name="local_id0")] + row_ids
            if running_only and self.state is not None:
                run = self.new_block("item.run")
                b.cbranch(b.icmp_unsigned("==", self.load_state(), ll.Constant(I32, 0)), run, latch)
                b.position_at_end(run)
            if self.plan is not None:
                for name, e in self.plan.remat.items():  # cheaper than keeping them per work-item
                    self.slots[name].store(self, self.expr(e))
            body(t)

        group = None if cold else self._new_md("access_group")
        self._access_group = group
        try:
            self.counted_loop(_c64(0) if lo is None else lo, self.block64[0] if hi is None else hi, "lx", xloop,
                              cold, group)
        finally:
            self._access_group = None
        self.item, self.item_latch, self.lid = None, None, []

    def item_loop(self, body: Callable[[ll.Value], None], running_only: bool = True, cold: bool = False) -> None:
        """Run ``body(item)`` for every work-item (rows, then x fastest), or only the running ones."""
        self.row_loop(lambda base, ids: self.x_loop(base, ids, body, running_only, cold))

    # ------------------------------------------------------------------ work-item state
    def state_ptr(self):
        return self.builder.gep(self.state, [self.item], inbounds=True, source_etype=I32)

    def load_state(self):
        return self.builder.load(self.state_ptr(), typ=I32)

    def set_state(self, code) -> None:
        if not isinstance(code, ll.Value):
            code = ll.Constant(I32, code)
        self.builder.store(code, self.state_ptr())

    def _remap_state(self, mapping: Dict[int, int]) -> None:
        """For every work-item: state = mapping.get(state, state)."""
        def body(_):
            b = self.builder
            s = self.load_state()
            new = s
            for old, to in mapping.items():
                new = b.select(b.icmp_unsigned("==", s, ll.Constant(I32, old)), ll.Constant(I32, to), new)
            self.set_state(new)

        self.item_loop(body, running_only=False, cold=True)

    # ------------------------------------------------------------------ regions and constructs
    def emit_region(self, stmts: List[N.Stmt]) -> None:
        plan = self.plan
        rg = None
        if self.ROW_FAST_PATH:
            rg = (plan_row_guards(self.fn, stmts) if plan is None else
                  plan_row_guards(self.fn, stmts, plan.uniform_vars, plan.remat, plan.counts,
                                  plan.per_item_vars, self.state is None))

        def run(body_stmts):
            def body(_):
                self._zero_item_storage(body_stmts)
                self.emit_block(body_stmts)
                if not self.builder.block.is_terminated:
                    self.builder.branch(self.item_latch)
            return body

        if rg is not None and plan is not None and not rg.skip and not self.SPLIT_ALL_REGIONS:
            rg = None  # in a barrier region, split only to skip idle work-items (compile time)
        if rg is None:
            self.item_loop(run(stmts))
            return
        zero = ll.Constant(I32, 0)
        group_ts = None if rg.row_dependent else self._transitions(rg, [zero, zero])

        def row(base, ids):
            ts = self._transitions(rg, ids) if group_ts is None else group_ts
            self._interval_loop(base, ids, rg, ts, run(rg.fast_body), run(stmts))

        self.row_loop(row)

    # ------------------------------------------------------------------ guard range splitting
    def expr_Var(self, e: N.Var) -> ll.Value:
        inline = getattr(self, "_inline", None)
        if inline and e.name in inline:
            return self.expr(inline[e.name])
        return super().expr_Var(e)

    def _at(self, lx, row_ids, rg: RowGuards, exprs: List[N.Expr]) -> List[ll.Value]:
        """Evaluate pure ``exprs`` for the work-item ``lx`` (i64) of the row, aliases inlined."""
        saved = self.lid, getattr(self, "_inline", None)
        self.lid, self._inline = [self.builder.trunc(lx, I32)] + list(row_ids), rg.aliases
        try:
            return [self.expr(e) for e in exprs]
        finally:
            self.lid, self._inline = saved

    def _transitions(self, rg: RowGuards, row_ids) -> List[ll.Value]:
        """Per monotone step predicate: the first local_id(0) where it differs from its value at 0
        (block_x if nowhere), by binary search."""
        out = []
        bx = self.block64[0]
        for step in rg.steps:
            b = self.builder
            at0, = self._at(_c64(0), row_ids, rg, [step])
            at_last, = self._at(b.sub(bx, _c64(1)), row_ids, rg, [step])
            # Monotone: the same value at both ends means no change in the row (the common case,
            # every group but the edges): start with an empty search range.
            lo0 = b.select(b.icmp_unsigned("==", at0, at_last), bx, _c64(0))
            pre = b.block
            head, body, done = self.new_block("bsearch.head"), self.new_block("bsearch.body"), self.new_block("bsearch.end")
            b.branch(head)
            b.position_at_end(head)
            lo, hi = b.phi(I64, name="lo"), b.phi(I64, name="hi")
            lo.add_incoming(lo0, pre)
            hi.add_incoming(bx, pre)
            b.cbranch(b.icmp_unsigned("<", lo, hi), body, done)
            b.position_at_end(body)
            mid = b.lshr(b.add(lo, hi), _c64(1))
            v, = self._at(mid, row_ids, rg, [step])
            changed = b.xor(v, at0)
            latch = b.block
            lo.add_incoming(b.select(changed, lo, b.add(mid, _c64(1))), latch)
            hi.add_incoming(b.select(changed, mid, hi), latch)
            b.branch(head)
            b.position_at_end(done)
            out.append(lo)
        return out

    def _interval_loop(self, base, ids, rg: RowGuards, ts, fast, general) -> None:
        """Split the row at ``ts``; run ``fast`` on the pieces where every guard takes its
        preferred value (and no guarded integer sum wraps at the ends of the row), else ``general``."""
        b = self.builder
        bx = self.block64[0]
        ok = ll.Constant(I1, 1)
        if rg.wraps:
            for lx in (_c64(0), b.sub(bx, _c64(1))):
                for w in rg.wraps:
                    ok = b.and_(ok, self._no_wrap(lx, ids, rg, w))
        pre = b.block
        head, body, done = self.new_block("split.head"), self.new_block("split.body"), self.new_block("split.end")
        b.branch(head)
        b.position_at_end(head)
        cur = b.phi(I64, name="piece")
        cur.add_incoming(_c64(0), pre)
        b.cbranch(b.icmp_unsigned("<", cur, bx), body, done)
        b.position_at_end(body)
        nxt = bx
        for t in ts:
            nxt = b.select(b.and_(b.icmp_unsigned(">", t, cur), b.icmp_unsigned("<", t, nxt)), t, nxt)
        values = self._at(cur, ids, rg, [c for c, _ in rg.guards])
        preferred = [v if prefer else b.not_(v) for v, (_, prefer) in zip(values, rg.guards)]
        hold = ok
        for v in preferred:
            hold = b.and_(hold, v)
        fast_bb, latch = self.new_block("piece.fast"), self.new_block("piece.next")
        # Without integer sums to check, one skippable guard leaves nothing for the general body.
        need_general = len(rg.guards) > 1 or rg.wraps or not rg.skip
        slow_bb = self.new_block("piece.general") if need_general else latch
        if rg.skip:  # the first guard is not preferred (and nothing wraps): nothing to do
            test_bb = self.new_block("piece.test")
            b.cbranch(b.or_(preferred[0], b.not_(ok)), test_bb, latch)
            b.position_at_end(test_bb)
        b.cbranch(hold, fast_bb, slow_bb)
        for bb, run, cold in ((fast_bb, fast, self.plan is not None and not self.VECTORIZE_REGIONS),
                              (slow_bb, general, True)):
            if bb is latch:
                continue
            b.position_at_end(bb)
            self.x_loop(base, ids, run, True, cold, cur, nxt)
            b.branch(latch)
        b.position_at_end(latch)
        cur.add_incoming(nxt, latch)
        b.branch(head)
        b.position_at_end(done)

    def _no_wrap(self, lx, ids, rg: RowGuards, w: N.BinOp) -> ll.Value:
        """i1: the integer sum ``w`` does not wrap for work-item ``lx``."""
        b = self.builder
        a, c = self._at(lx, ids, rg, [w.a, w.b])
        st = w.type
        ext = b.sext if st.code == 0 else b.zext
        a, c = ext(a, I64), ext(c, I64)
        r = b.add(a, c) if w.op == "add" else b.sub(a, c)
        lo, hi = st.min_value(), st.max_value()
        return b.and_(b.icmp_signed(">=", r, _c64(lo)), b.icmp_signed("<=", r, _c64(hi)))

    def emit_return(self) -> None:
        if self.state is not None:
            self.set_state(STATE_RETURNED)
        self.builder.branch(self.item_latch)

    def emit_barrier(self) -> None:  # pragma: no cover - regions never contain barriers
        raise CompileError("internal error: barrier inside a work-item region")

    def emit_nodes(self, nodes) -> None:
        for n in nodes:
            if isinstance(n, Region):
                self.emit_region(n.stmts)
            elif isinstance(n, Uniform):
                for s in n.stmts:
                    self.stmt_Assign(s)
            elif isinstance(n, GIf):
                self._emit_uniform_if(n) if n.uniform else self._emit_if(n)
            elif n.uniform:
                self._emit_uniform_loop(n)
            else:
                self._emit_loop(n)

    def _emit_uniform_if(self, n: GIf) -> None:
        b = self.builder
        then_bb, else_bb, end_bb = self.new_block("gif.then"), self.new_block("gif.else"), self.new_block("gif.end")
        b.cbranch(self.expr(n.cond), then_bb, else_bb)
        for bb, nodes in ((then_bb, n.then), (else_bb, n.orelse)):
            b.position_at_end(bb)
            self.emit_nodes(nodes)
            b.branch(end_bb)
        b.position_at_end(end_bb)

    def _emit_uniform_loop(self, n: GLoop) -> None:
        """A barrier loop whose condition/bounds are the same for every work-item: once per group."""
        b = self.builder
        if n.kind == "for":
            var, stop, st = self.slots[n.stmt.var], self.slots[n.stop_var], self.fn.locals[n.stmt.var]
            var.store(self, self.expr(n.stmt.start))
            stop.store(self, self.expr(n.stmt.stop))
        head, body, done = self.new_block("uloop.head"), self.new_block("uloop.body"), self.new_block("uloop.end")
        b.branch(head)
        b.position_at_end(head)
        if n.kind == "for":
            c = self.for_cond(var.load(self), stop.load(self), st, n.stmt.step)
        else:
            c = self.expr(n.cond)
        b.cbranch(c, body, done)
        b.position_at_end(body)
        self.emit_nodes(n.body)
        if n.kind == "for":
            var.store(self, b.add(var.load(self), ll.Constant(value_type(st), n.stmt.step)))
        b.branch(head)
        b.position_at_end(done)

    def _emit_if(self, n: GIf) -> None:
        def decide(_):
            c = self.expr(n.cond)
            self.set_state(self.builder.select(c, ll.Constant(I32, 0), ll.Constant(I32, n.park_else)))

        self.item_loop(decide, cold=True)
        self.emit_nodes(n.then)
        if n.orelse:
            self._remap_state({0: n.park_then, n.park_else: 0})
            self.emit_nodes(n.orelse)
            self._remap_state({n.park_then: 0})
        else:
            self._remap_state({n.park_else: 0})

    def _emit_loop(self, n: GLoop) -> None:
        b = self.builder
        if n.kind == "for":
            var, stop = self.slots[n.stmt.var], self.slots[n.stop_var]
            st = self.fn.locals[n.stmt.var]

            def init(_):
                var.store(self, self.expr(n.stmt.start))
                stop.store(self, self.expr(n.stmt.stop))

            self.item_loop(init, cold=True)
        head, body, done = self.new_block("gloop.head"), self.new_block("gloop.body"), self.new_block("gloop.end")
        b.branch(head)
        b.position_at_end(head)
        b.store(_c64(0), self.counter)

        def decide(_):
            bb = self.builder
            if n.kind == "for":
                c = self.for_cond(var.load(self), stop.load(self), st, n.stmt.step)
            else:
                c = self.expr(n.cond)
            self.set_state(bb.select(c, ll.Constant(I32, 0), ll.Constant(I32, n.left)))
            bb.store(bb.add(bb.load(self.counter, typ=I64), bb.zext(c, I64)), self.counter)

        self.item_loop(decide, cold=True)
        b.cbranch(b.icmp_unsigned("!=", b.load(self.counter, typ=I64), _c64(0)), body, done)
        b.position_at_end(body)
        self.loops.append(_GroupLoopTarget(n))
        self.emit_nodes(n.body)
        self.loops.pop()

        def latch(_):
            bb = self.builder
            if n.has_continue:
                s = self.load_state()
                s = bb.select(bb.icmp_unsigned("==", s, ll.Constant(I32, n.cont)), ll.Constant(I32, 0), s)
                self.set_state(s)
            if n.kind == "for":
                step = ll.Constant(value_type(st), n.stmt.step)
                if n.has_continue:  # every work-item: the ones just back from 'continue' step too
                    running = bb.icmp_unsigned("==", s, ll.Constant(I32, 0))
                    old = var.load(self)
                    var.store(self, bb.select(running, bb.add(old, step), old))
                else:
                    var.store(self, bb.add(var.load(self), step))

        if n.has_continue or n.kind == "for":
            # Without 'continue' only running work-items need the step.
            self.item_loop(latch, running_only=not n.has_continue, cold=True)
        b.branch(head)
        b.position_at_end(done)
        self._remap_state({n.left: 0})

    def stmt_MatrixOp(self, s: N.MatrixOp) -> None:
        emit_matrix_op(self, s)

    # ------------------------------------------------------------------ special registers
    def subgroup(self, e: N.Subgroup) -> ll.Value:
        return emit_subgroup(self, e)

    def special_reg(self, kind: str, dim: int) -> ll.Value:
        if kind == "global_id":  # group * size + local < grid * block <= 2**31 (checked at launch)
            b = self.builder
            g, s = self.read_special_reg("group_id", dim), self.read_special_reg("local_size", dim)
            return b.add(b.mul(g, s, flags=_NOWRAP), self.read_special_reg("local_id", dim), name=f"gid{dim}",
                         flags=_NOWRAP)
        return self.read_special_reg(kind, dim)

    def read_special_reg(self, kind: str, dim: int) -> ll.Value:
        if kind == "local_id":
            if not self.lid:
                raise CompileError("internal error: local_id outside a work-item loop")
            return self.lid[dim]
        if kind == "group_id":
            return self.gid[dim]
        if kind == "local_size":
            return self.block32[dim]
        if kind == "num_groups":
            return self.grid32[dim]
        raise CompileError(f"unknown special register {kind}")
