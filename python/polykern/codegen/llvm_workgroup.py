"""CPU-style kernels: one call runs a range of whole workgroups, work-items are loops.

For each kernel ``K`` the module gets (docs/internals.md, "CPU (llvm) payload")::

    void K__range(void **args, const int32_t *launch, int64_t group_begin, int64_t group_end)

``args[i]`` points at the i-th argument's value (a scalar's bytes, or a buffer's data
pointer); ``launch`` is ``{grid_x, grid_y, grid_z, block_x, block_y, block_z}``; groups are
numbered x fastest. The function runs the groups ``[group_begin, group_end)`` one after the
other, so its caller can hand disjoint ranges to different threads.

Inside a group the work-items run as loops over (z, y, x) local ids:

- a kernel without ``barrier()`` is one loop over work-items running the whole body
  (``return`` skips to the next work-item);
- a kernel with barriers follows the :mod:`llvm_fission` plan: every region is a loop over
  the running work-items, barrier-containing control flow runs once per group.

Shared arrays are stack memory of the call (one group at a time per call, so they are per
workgroup). Per-work-item storage is sized at run time from the launch's block size (a
dynamically sized ``alloca`` in the entry block), so no scratch buffer crosses the ABI.
Atomics are real ``atomicrmw``/``cmpxchg``: groups run concurrently on threads.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional

from llvmlite import ir as ll

from ..errors import CompileError
from ..ir import nodes as N
from ..ir.types import BufferType
from .llvm_base import I1, I8, I32, I64, VOID, ArrayStorage, LLVMKernelEmitter, LoopTarget, Slot, mem_type, value_type
from .llvm_fission import STATE_RETURNED, FissionPlan, GIf, GLoop, Region, plan_fission

__all__ = ["WorkgroupLoopEmitter", "RANGE_SUFFIX"]

RANGE_SUFFIX = "__range"
PTR = ll.PointerType()


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
    shared arrays for vector loads."""

    SHARED_ALIGN = 64

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

    # ------------------------------------------------------------------ entry point
    def emit_function(self, fn: N.Function) -> ll.Function:
        self._reset_function_state()
        self.fn = fn
        self.plan = plan_fission(fn) if N.uses_barrier(fn) else None
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
        self.grid32, self.block32 = dims[:3], dims[3:]
        self.grid64 = [ab.zext(d, I64) for d in self.grid32]
        self.block64 = [ab.zext(d, I64) for d in self.block32]
        self.nitems = ab.mul(ab.mul(self.block64[0], self.block64[1]), self.block64[2], name="nitems")
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
            if at.scope == "shared":
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
        if plan:
            self.state = self.alloca(I32, self.nitems, name="state", align=16)
            self.counter = self.alloca(I64, name="running")

    # ------------------------------------------------------------------ loops
    def counted_loop(self, lo, hi, name: str, body: Callable[[ll.Value, ll.Block], None]) -> None:
        """``for (i = lo; i < hi; i++) body(i, latch)`` on i64; ``body`` may branch to ``latch``."""
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
        nxt = b.add(i, _c64(1))
        b.branch(head)
        i.add_incoming(nxt, latch)
        b.position_at_end(done)

    def _group_loop(self, begin, end) -> None:
        def group(g, latch):
            b = self.builder
            gx = b.urem(g, self.grid64[0])
            rest = b.udiv(g, self.grid64[0])
            gy = b.urem(rest, self.grid64[1])
            gz = b.udiv(rest, self.grid64[1])
            self.gid = [b.trunc(v, I32, name=f"group_id{d}") for d, v in enumerate((gx, gy, gz))]
            if self.plan is None:
                self.emit_region(self.fn.body)
                return
            nbytes = b.mul(self.nitems, _c64(4))
            self.call_intrinsic("llvm.memset.p0.i64", VOID, [self.state, ll.Constant(I8, 0), nbytes,
                                                             ll.Constant(I1, 0)])
            self.emit_nodes(self.plan.nodes)

        self.counted_loop(begin, end, "group", group)
        self.builder.ret_void()

    def item_loop(self, body: Callable[[ll.Value], None], running_only: bool = True) -> None:
        """Run ``body(item)`` for every work-item (z, y, x; x fastest), or only the running ones."""
        bx, by, bz = self.block64

        def zloop(lz, _):
            def yloop(ly, _):
                row = self.builder.mul(self.builder.add(self.builder.mul(lz, by), ly), bx)

                def xloop(lx, latch):
                    b = self.builder
                    t = b.add(row, lx, name="item")
                    self.item, self.item_latch = t, latch
                    self.lid = [b.trunc(v, I32, name=f"local_id{d}") for d, v in enumerate((lx, ly, lz))]
                    if running_only and self.state is not None:
                        run = self.new_block("item.run")
                        b.cbranch(b.icmp_unsigned("==", self.load_state(), ll.Constant(I32, 0)), run, latch)
                        b.position_at_end(run)
                    body(t)

                self.counted_loop(_c64(0), bx, "lx", xloop)

            self.counted_loop(_c64(0), by, "ly", yloop)

        self.counted_loop(_c64(0), bz, "lz", zloop)
        self.item, self.item_latch, self.lid = None, None, []

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

        self.item_loop(body, running_only=False)

    # ------------------------------------------------------------------ regions and constructs
    def emit_region(self, stmts: List[N.Stmt]) -> None:
        def body(_):
            self.emit_block(stmts)
            if not self.builder.block.is_terminated:
                self.builder.branch(self.item_latch)

        self.item_loop(body)

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
            elif isinstance(n, GIf):
                self._emit_if(n)
            else:
                self._emit_loop(n)

    def _emit_if(self, n: GIf) -> None:
        def decide(_):
            c = self.expr(n.cond)
            self.set_state(self.builder.select(c, ll.Constant(I32, 0), ll.Constant(I32, n.park_else)))

        self.item_loop(decide)
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

            self.item_loop(init)
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

        self.item_loop(decide)
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
            self.item_loop(latch, running_only=not n.has_continue)
        b.branch(head)
        b.position_at_end(done)
        self._remap_state({n.left: 0})

    # ------------------------------------------------------------------ special registers
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
