"""The IR interpreter: the oracle that the differential fuzzer compares every backend against
(``polykern.testing.interp``), and the runtime of target ``interpret`` (``polykern.interpret``).

It executes a kernel's IR (after the default passes, i.e. exactly what ``pk.build`` hands to the code
generators) for a grid x block with the language's meaning (see ``polykern.ir.nodes``):

- scalar arithmetic from :mod:`polykern.interpreter.values` (integers wrap, ``//``/``%`` truncate,
  floats rounded to their type after every operation, saturating float -> int casts);
- locals and ``pk.local`` arrays start at zero, shared arrays are uninitialized (reading an element
  nobody wrote is an :class:`OracleError`);
- the work-items of one workgroup run as Python generators that stop at ``barrier()`` and at subgroup
  collectives; a barrier that only some work-items reach is an error, and so is a collective that only
  some lanes of a subgroup reach (a subgroup whose lanes all reach one goes on without the others);
  kernels with Hopper operations: ``hopper`` schedules them one at a time, also stopping at
  transaction-barrier waits and warpgroup operations;
- atomics run in one valid order (sequentially), and every data race on a buffer or shared element
  (two work-items touching it in one barrier interval, one of them writing, not both atomically) is
  an error, as are out-of-bounds accesses, integer division by zero and runaway loops: a program the
  oracle refuses has no single meaning, so it cannot be used to judge a backend.

The IR is compiled once into Python closures (``Program``; expressions in ``exprs``, statements
in ``stmts``, memory and the Result in ``memory``, the static analysis in ``taint``);
running it walks no tree.

Inexact operations (math builtins, float division, whose accuracy a backend may relax within the
budgets of ``polykern.numerics``) are tracked statically: every buffer element remembers which inexact
operations fed the value stored there (``Result.taint``), and whether the value is one such operation
applied to exact operands (then it is compared within that operation's ULP budget) or a composition
(then it is not compared). An inexact value that feeds a branch, a loop bound, an index or a cast to
an integer is refused when the program is prepared, because its effect could not be bounded.
"""
from __future__ import annotations

import copy
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..codegen.cpu.subgroup_size import CPU_SUBGROUP_SIZE
from ..ir import nodes as ir
from ..ir.dynamic_shared import size_param
from ..ir.bfloat16 import BF16_DTYPE, bits_to_f32, f32_to_bits
from ..ir.types import BufferType, bf16, scalar_from_numpy
from .copies import CopyCompiler
from .exprs import ExprCompiler
from .memory import Mem, Result, loose
from .sites import SiteFlow
from .stmts import LOOP_BUDGET, StmtCompiler
from .fragments import FragmentRequest, MatrixCompiler, resolve_fragments
from .hopper import HopperCompiler, launch_check, run_group
from .subgroups import Request, check_arrival, resolve
from .taint import INEXACT_BINOPS, INEXACT_CALLS, Taint, float_chain
from .values import SUBNORMAL_SEEN, OracleError, canon, zero

__all__ = ["INEXACT_BINOPS", "INEXACT_CALLS", "OracleError", "Program", "Result", "prepare", "interpret"]


class Program(ExprCompiler, StmtCompiler, MatrixCompiler, CopyCompiler, HopperCompiler):
    """A kernel's IR compiled to closures; ``run(args, grid, block)`` launches it."""

    def __init__(self, fn: ir.Function, subgroup_size: int = CPU_SUBGROUP_SIZE, judge: bool = True,
                 loop_budget: int = LOOP_BUDGET):
        self.fn = fn
        self.loop_budget = loop_budget  # loop iterations per launch before a program is called runaway
        self.subgroup_size = subgroup_size  # work-items per subgroup (subgroups)
        self.taint = Taint(fn)
        if judge:  # the oracle judges backends: refuse what their allowed error could change (not to run it)
            self.taint.check_function()
        self.launch_dims = ((1, 1, 1), (1, 1, 1))  # grid and block of the current launch (describe())
        self.contractible = float_chain(fn, ("mul",))
        self.flow = SiteFlow(fn)
        self.special_seen: set = set()  # sites that saw a NaN/inf in the current run
        self.special_seen_by: Dict[int, set] = {}  # the same per work-item id
        self.unspecified_seen: set = set()  # sites that gave a result no backend promises (exprs)
        self.unspecified_seen_by: Dict[int, set] = {}
        self.hopper = ir.uses_hopper(fn)  # scheduled by hopper.run_group
        self.gen = self.hopper or ir.uses_barrier(fn) or ir.uses_matrix(fn) or any(
            ir.subgroup_collective(s) for s in ir.walk_stmts(fn.body))
        self.fragments: dict = {}  # the subgroups' matrices during a run (fragments)
        self.copies: dict = {}  # the work-items' asynchronous copies during a run (copies)
        # slots: 0 ctx (ids), 1 work-item id, 2 [epoch], 3 [loop budget], then params, locals, arrays
        self.slot: Dict[str, int] = {}
        for p in fn.params:
            self.slot[p.name] = len(self.slot) + 4
        for name in fn.locals:
            if name not in self.slot:
                self.slot[name] = len(self.slot) + 4
        for name in fn.arrays:
            self.slot[name] = len(self.slot) + 4
        self.nslots = len(self.slot) + 4
        self.body = self._block(fn.body)

    # ------------------------------------------------------------ launch
    def run(self, args: Sequence, grid, block) -> Result:
        with np.errstate(all="ignore"):
            return self._run(args, grid, block)

    def _run(self, args: Sequence, grid, block) -> Result:
        fn = self.fn
        grid, block = _dims(grid), _dims(block)
        self.launch_dims = (grid, block)
        if len(args) != len(fn.params):
            raise OracleError(f"kernel '{fn.name}' takes {len(fn.params)} arguments, got {len(args)}")
        for key in SUBNORMAL_SEEN:
            SUBNORMAL_SEEN[key] = False
        self.special_seen.clear()
        self.special_seen_by.clear()
        self.unspecified_seen.clear()
        self.unspecified_seen_by.clear()
        self.fragments = {}
        self.copies = {}
        base: List = [None] * self.nslots
        base[3] = [self.loop_budget, self.loop_budget]  # iterations left, the budget
        mems: Dict[str, Mem] = {}
        for p, a in zip(fn.params, args):
            if isinstance(p.type, BufferType):
                arr = np.asarray(a)
                if scalar_from_numpy(arr.dtype) != p.type.elem:
                    raise OracleError(f"argument '{p.name}' of '{fn.name}' must be {p.type.elem.numpy} "
                                      f"elements, got {arr.dtype}")
                if p.type.elem == bf16:  # the bits' f32 values (ir/bfloat16.py)
                    arr = bits_to_f32(arr)
                data = [canon(p.type.elem, x) for x in arr.reshape(-1).tolist()]
                mems[p.name] = Mem(p.name, data)
                base[self.slot[p.name]] = mems[p.name]
            else:
                base[self.slot[p.name]] = canon(p.type, a)
        locals_ = [(self.slot[n], zero(t)) for n, t in fn.locals.items() if n in self.slot and not fn.param(n)]
        local_arrays = [(self.slot[n], a) for n, a in fn.local_arrays.items()]
        shared = [(self.slot[n], n, a) for n, a in fn.shared_arrays.items()]
        ngroups = grid[0] * grid[1] * grid[2]
        gsize = block[0] * block[1] * block[2]
        if self.hopper:
            launch_check(fn, {p.name: base[self.slot[p.name]] for p in fn.params}, gsize)
        for g in range(ngroups):
            gid3 = (g % grid[0], (g // grid[0]) % grid[1], g // (grid[0] * grid[1]))
            epoch = [g * 1_000_000]  # distinct per group: shared memory is per group anyway
            group_base = list(base)
            for k, n, a in shared:  # a pk.shared_dynamic array: as long as its hidden size parameter says
                size = base[self.slot[size_param(fn)]] if a.dynamic else a.size
                group_base[k] = Mem(n, [None] * size)
            group_base[2] = epoch
            states = []
            for li in range(gsize):
                lid3 = (li % block[0], (li // block[0]) % block[1], li // (block[0] * block[1]))
                st = list(group_base)
                st[0] = (tuple(gid3[d] * block[d] + lid3[d] for d in range(3)), lid3, gid3, block, grid)
                st[1] = g * gsize + li
                for k, z in locals_:
                    st[k] = z
                for k, a in local_arrays:
                    st[k] = [zero(a.elem)] * a.size
                states.append(st)
            if self.hopper:
                run_group(self, states, epoch)
            elif self.gen:
                self._run_group_barriers(states, epoch)
            else:
                body = self.body
                for st in states:
                    body(st)
        out = {}
        taint = {}
        written = {}
        for p in fn.params:
            if isinstance(p.type, BufferType):
                mem = mems[p.name]
                written[p.name] = np.array([w is not None for w in mem.wr], bool)
                if p.type.elem == bf16:  # NaN as 0x7FC0: the oracle keeps no NaN's sign (CPython's
                    # nan * nan takes either operand's, depending on its code path), nor any payload
                    vals = np.array(mem.data, np.float32)
                    out[p.name] = np.where(np.isnan(vals), np.uint16(0x7FC0), f32_to_bits(vals)).view(BF16_DTYPE)
                else:
                    out[p.name] = np.array(mem.data, dtype=p.type.elem.numpy)
                if mem.taint is not None:
                    taint[p.name] = mem.taint
        seen, unspecified_seen, flow = frozenset(self.special_seen), frozenset(self.unspecified_seen), self.flow
        special, chained, unspecified, contracted = loose(mems, seen, unspecified_seen)
        return Result(out, taint, frozenset(k for k, v in SUBNORMAL_SEEN.items() if v), self.contractible,
                      special, bool(seen & flow.global_sites), chained, bool(flow.chain_sites & flow.global_sites),
                      unspecified, bool(unspecified_seen & flow.global_sites), contracted,
                      bool(flow.contract_sites & flow.global_sites), written)

    def _run_group_barriers(self, states, epoch):
        """Run one group's work-items, each up to its next stop. A subgroup whose lanes all stop at one
        collective goes on alone (collectives need subgroup-uniform control flow, passes/uniformity.py);
        once every unfinished work-item waits at a barrier or fragment operation, the group passes it."""
        gens = [self.body(st) for st in states]
        n, size = len(gens), self.subgroup_size
        stops: List = [None] * n  # what each work-item waits at (None: running or finished)
        done = [False] * n
        runnable, sent = list(range(n)), [None] * n  # sent: what each is resumed with
        while True:
            for i in runnable:
                try:
                    stops[i] = gens[i].send(sent[i])
                except StopIteration:
                    done[i], stops[i] = True, None
            runnable = []
            for base in range(0, n, size):
                lanes = range(base, min(base + size, n))
                if not any(isinstance(stops[i], Request) for i in lanes):
                    continue
                check_arrival([stops[i] for i in lanes], [done[i] for i in lanes], base // size)
                for i, v in zip(lanes, resolve([stops[i] for i in lanes], size)):
                    sent[i], stops[i] = v, None
                    runnable.append(i)
            if runnable:
                continue
            waiting = [i for i in range(n) if not done[i]]
            if not waiting:
                return
            if len(waiting) < n:
                where = stops[waiting[0]]
                raise OracleError(f"{getattr(where, 'where', where)}: barrier reached by {len(waiting)} "
                                  f"work-items of a group while {n - len(waiting)} others finished without it (a "
                                  "barrier in divergent control flow)")
            values = self._group_stop([stops[i] for i in waiting], epoch) or [None] * n
            for i, v in zip(waiting, values):
                sent[i], stops[i] = v, None
            runnable = waiting

    def _group_stop(self, stops, epoch):
        """Pass the barrier or fragment operation every work-item of a group stopped at (``stops``, in
        linear order): the values to resume them with, or None for a barrier (which starts a new interval)."""
        frag_requests = [r for r in stops if isinstance(r, FragmentRequest)]
        if frag_requests:
            if len(frag_requests) != len(stops):
                raise OracleError(f"{frag_requests[0].where}: some work-items of a group reached a "
                                  "matrix-fragment operation while others did not (divergent control flow)")
            resolve_fragments(self, frag_requests, self.subgroup_size, self.fragments)
            return [None] * len(stops)
        epoch[0] += 1  # a barrier: a new interval (a subgroup operation orders no memory)
        return None


def _dims(d) -> Tuple[int, int, int]:
    if isinstance(d, (int, np.integer)):
        d = (int(d),)
    d = tuple(int(x) for x in d)
    return (d + (1, 1, 1))[:3]


def prepare(kernel, subgroup_size: int = CPU_SUBGROUP_SIZE) -> Program:
    """A Program for a ``@pk.kernel`` (its IR after the default passes, on a copy) or an ir.Function;
    ``subgroup_size``: work-items per subgroup (the CPU backend's by default)."""
    from ..ir.verifier import verify
    from ..passes import run_default_passes

    fn = kernel if isinstance(kernel, ir.Function) else kernel.ir
    return Program(run_default_passes(verify(copy.deepcopy(fn))), subgroup_size)


def interpret(kernel, args: Sequence, grid, block, subgroup_size: int = CPU_SUBGROUP_SIZE) -> Result:
    """Run ``kernel`` on the oracle; returns every buffer after the launch (inputs are not modified)."""
    return prepare(kernel, subgroup_size).run(args, grid, block)
