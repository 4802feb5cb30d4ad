"""Uniformity analysis: every ``barrier()`` and matrix-fragment operation must be reached by all
work-items of a workgroup or none; every subgroup collective (``pk.subgroup_add`` ...) by all
work-items of a *subgroup* or none.

GPUs leave a barrier that only some work-items reach undefined (a hang, or silently wrong shared
memory), and a collective that only some lanes of a subgroup reach likewise; the CPU backend would
define both. The language refuses them at compile time, as WGSL does, with a located
``KernelTypeError`` that names the condition and why it is not uniform enough.

Values have one of three levels:

- *workgroup-uniform* (the same in every work-item of a workgroup): constants, scalar parameters,
  ``group_id``/``local_size``/``num_groups``, ``subgroup_size()``, loads from readonly Buffers at
  workgroup-uniform indices, private (``pk.local``) arrays written only so, and such variables;
- *subgroup-uniform* (the same in every work-item of one subgroup): besides those, ``subgroup_id()``,
  the results of the collectives that give every lane one exact value (integer
  ``subgroup_add``/``min``/``max``, ``subgroup_any``/``all``, ``subgroup_broadcast_first``; not float
  reductions, which a device may round differently per lane, nor shuffles), loads from readonly Buffers at
  subgroup-uniform indices, and arithmetic of those. Nothing derived from ``local_id``/``global_id`` is,
  not even ``local_id(0) // subgroup_size()``: Vulkan, WebGPU and OpenCL do not promise the linear
  mapping of work-items to subgroups (docs/language.md "Subgroups"), ``subgroup_id()`` is the portable way;
- *varying*: ``global_id``/``local_id``, ``subgroup_local_id()``, shuffles, float reductions, loads from
  writable Buffers or shared arrays, atomics, and everything computed from them.

A variable has the lowest level of every value assigned to it and of the control flow of every
assignment (the analysis is flow-insensitive: one varying assignment anywhere makes the variable varying
everywhere).

Control flow inside an ``if``/``while``/``for`` has the lowest level of the enclosing flow and of the
condition (or range); after a ``return``/``break``/``continue`` inside such flow, the rest of the function
/ loop iteration has that level; so has the whole body of a loop that some work-items leave earlier than
others (a ``break`` or ``return`` in such flow). Barriers and fragment operations need workgroup-uniform
flow, collectives subgroup-uniform flow.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from ..errors import KernelTypeError
from ..ir import nodes as ir
from ..ir.types import ArrayType, BufferType

_UNIFORM_REGS = ("group_id", "local_size", "num_groups")
# Collectives whose result is one exact value in every lane of the subgroup (float reductions are not:
# a device may add or compare in another order per lane, docs/language.md "Float sums").
_SAME_IN_SUBGROUP = ("add", "min", "max", "any", "all", "broadcast_first")
_MAX_CHAIN = 3  # variables named in one explanation
_DEPENDS = ", which depends on "
_WG, _SG = 0, 1  # the two levels a value or control flow can fail: workgroup-, subgroup-uniform

#: why a value or control flow is not workgroup-uniform / not subgroup-uniform (None: it is)
Why = Tuple[Optional[str], Optional[str]]
_UNIFORM: Why = (None, None)

_WG_SOURCES = "parameters, constants, group_id, local_size, num_groups and readonly Buffers"
_SG_SOURCES = ("parameters, constants, group_id, local_size, num_groups, subgroup_size(), subgroup_id(), readonly "
               "Buffers at such indices and integer subgroup reductions, votes or broadcasts")


def _lower(a: Why, b: Why) -> Why:
    """The lower level of ``a`` and ``b`` (each level's first reason)."""
    return (a[0] or b[0], a[1] or b[1])


class _Exits:
    """Why some work-items may leave the current region early (each a Why; UNIFORM: nobody does, or all
    of a workgroup together)."""

    __slots__ = ("ret", "brk", "cont")

    def __init__(self, ret: Why = _UNIFORM, brk: Why = _UNIFORM, cont: Why = _UNIFORM):
        self.ret, self.brk, self.cont = ret, brk, cont

    def merge(self, other: "_Exits") -> None:
        self.ret = _lower(self.ret, other.ret)
        self.brk = _lower(self.brk, other.brk)
        self.cont = _lower(self.cont, other.cont)

    def any(self) -> Why:
        return _lower(_lower(self.ret, self.brk), self.cont)


def _line(node) -> str:
    loc = getattr(node, "loc", None)
    return f"line {loc.line}" if loc is not None else "an unknown line"


def _keyword(node, default: str) -> str:
    loc = getattr(node, "loc", None)
    words = loc.source_line.split() if loc is not None and loc.source_line else []
    word = words[0].rstrip(":") if words else ""
    return word if word in ("if", "elif", "while", "for") else default


def _direct(e: ir.Expr) -> Optional[Why]:
    """Why ``e`` itself (not its operands) is not workgroup- / subgroup-uniform; None if it is."""
    if isinstance(e, ir.SpecialReg) and e.kind not in _UNIFORM_REGS:
        r = f"{e.kind}({e.dim})"
        return (r, r)
    if isinstance(e, ir.Atomic):
        r = f"the result of atomic_{e.op}() on '{e.base.name}'"
        return (r, r)
    if isinstance(e, ir.WgReg):
        r = f"a register of warpgroup accumulator or row vector '{e.name}'"
        return (r, r)
    if isinstance(e, ir.Subgroup) and e.op != "size":
        r = f"subgroup_{e.op}()"
        if e.op == "id" or (e.op in _SAME_IN_SUBGROUP and not (e.op in ("add", "min", "max") and e.type.is_float)):
            return (r, None)  # the same in every lane of one subgroup
        if e.op in ("add", "min", "max"):
            return (r, f"{r} of a float (a device may round it differently in each lane)")
        return (r, r)
    if isinstance(e, ir.Load):
        t = e.base.type
        if isinstance(t, BufferType) and not t.readonly:
            r = f"a load from Buffer '{e.base.name}', which is not readonly"
            return (r, r)
        if isinstance(t, ArrayType) and t.scope == "shared":
            r = f"a load from shared array '{e.base.name}'"
            return (r, r)
    return None


class _Analysis:
    def __init__(self, fn: ir.Function):
        self.fn = fn
        # per level: variable or private array -> why it is not uniform at that level
        self.why: Tuple[Dict[str, str], Dict[str, str]] = ({}, {})
        self.report = False
        self.changed = False

    def run(self) -> None:
        self.changed = True
        while self.changed:  # monotone: each round can only add non-uniform names
            self.changed = False
            self.block(self.fn.body, _UNIFORM)
        self.report = True
        self.block(self.fn.body, _UNIFORM)

    # ------------------------------------------------------------------ values
    def value(self, e: ir.Expr) -> Why:
        """Why ``e`` is not workgroup- / subgroup-uniform: at each level, a direct cause in ``e``
        (``local_id``, a load, an atomic) is named before a non-uniform variable, whose explanation is
        longer."""
        direct: Why = _UNIFORM
        via: Why = _UNIFORM
        stack = [e]
        while stack:
            x = stack.pop()
            d = _direct(x)
            if d:
                direct = _lower(direct, d)
            name = None
            if isinstance(x, ir.Var):
                name = x.name
            elif isinstance(x, ir.Load) and isinstance(x.base.type, ArrayType):  # a private array
                name = x.base.name
            if name is not None:
                via = _lower(via, (self.why[_WG].get(name), self.why[_SG].get(name)))
            if not (isinstance(x, ir.Subgroup) and x.collective):  # its result's level is the op's alone
                stack.extend(reversed(x.children()))
        return _lower(direct, via)

    def mark(self, name: str, value_why: Why, ctrl: Why, node) -> None:
        for level in (_WG, _SG):
            if name in self.why[level] or not (value_why[level] or ctrl[level]):
                continue
            if value_why[level]:
                why = f"'{name}' ({_line(node)}){_DEPENDS}{value_why[level]}"
                parts = why.split(_DEPENDS)
                if len(parts) > _MAX_CHAIN + 1:  # name the first variables and the root cause
                    why = _DEPENDS.join(parts[:_MAX_CHAIN] + ["...", parts[-1]])
            else:
                why = f"'{name}', which is assigned at {_line(node)} where {ctrl[level]}"
            self.why[level][name] = why
            self.changed = True

    # ------------------------------------------------------------------ statements
    def block(self, stmts, ctrl: Why) -> _Exits:
        exits = _Exits()
        for s in stmts:
            exits.merge(self.stmt(s, _lower(ctrl, exits.any())))
        return exits

    def stmt(self, s, ctrl: Why) -> _Exits:
        if isinstance(s, ir.Assign):
            sg = ir.subgroup_collective(s)
            if sg is not None and self.report and ctrl[_SG]:
                raise KernelTypeError(
                    f"subgroup_{sg.op}() is reached only by some work-items of a subgroup: {ctrl[_SG]}. Every "
                    "work-item of a subgroup must reach the same subgroup operation (GPUs leave it undefined "
                    "otherwise); make the condition the same in every work-item of a subgroup (computed only "
                    f"from {_SG_SOURCES}: e.g. a row per subgroup from subgroup_id(), not from local_id), or "
                    f"move the operation out of it (reduce 'v if cond else 0' in every lane){_called_at(s)}",
                    sg.loc or s.loc)  # subgroup collective
            self.mark(s.name, self.value(s.value), ctrl, s)
        elif isinstance(s, ir.Store):
            t = s.base.type
            if isinstance(t, ArrayType) and t.scope == "local":
                self.mark(s.base.name, _lower(self.value(s.index), self.value(s.value)), ctrl, s)
        elif isinstance(s, ir.MatrixOp):
            if self.report and ctrl[_WG]:
                op = "mma" if s.op == "mma" else f"frag_{s.op}"
                raise KernelTypeError(
                    f"pk.{op}() is reached only by some work-items of a workgroup: {ctrl[_WG]}. A matrix-fragment "
                    "operation is done by a whole subgroup together, so every work-item of a workgroup must "
                    f"reach it (GPUs leave it undefined otherwise); make the condition uniform (computed only "
                    f"from {_WG_SOURCES}) or move the operation out of it{_called_at(s)}", s.loc)
        elif isinstance(s, ir.Barrier):
            if self.report and ctrl[_WG]:
                raise KernelTypeError(
                    f"barrier() is reached only by some work-items of a workgroup: {ctrl[_WG]}. Every "
                    "work-item of a workgroup must reach the same barrier() (GPUs hang or corrupt shared "
                    f"memory otherwise); make the condition uniform (computed only from {_WG_SOURCES}) or "
                    f"move the barrier out of it{_called_at(s)}", s.loc)
        elif isinstance(s, (ir.Return, ir.Break, ir.Continue)):
            if ctrl == _UNIFORM:
                return _Exits()
            word = type(s).__name__.lower()
            why = (f"the '{word}' at {_line(s)} is taken only by some work-items ({ctrl[_WG]})",
                   ctrl[_SG] and f"the '{word}' at {_line(s)} is taken only by some work-items of a subgroup "
                                 f"({ctrl[_SG]})")
            return _Exits(**{{"return": "ret", "break": "brk", "continue": "cont"}[word]: why})
        elif isinstance(s, ir.If):
            inner = _inner(ctrl, self.value(s.cond), f"the '{_keyword(s, 'if')}' at {_line(s)} has a condition")
            exits = self.block(s.then, inner)
            exits.merge(self.block(s.orelse, inner))
            return exits
        elif isinstance(s, (ir.While, ir.For)):
            return self.loop(s, ctrl)
        return _Exits()

    def loop(self, s, ctrl: Why) -> _Exits:
        if isinstance(s, ir.While):
            cond = self.value(s.cond)
            what = "condition"
        else:
            cond = _lower(self.value(s.start), self.value(s.stop))
            what = "range"
        kw = _keyword(s, "while" if isinstance(s, ir.While) else "for")
        inner = _inner(ctrl, cond, f"the '{kw}' loop at {_line(s)} has a {what}")
        exits = self.block(s.body, inner)
        early = _lower(exits.brk, exits.ret)
        # Some work-items leave the loop earlier: later iterations run with fewer of them.
        left = f"the '{kw}' loop at {_line(s)} is left early by only some work-items"
        wider = (inner[_WG] or (early[_WG] and f"{left}, as {early[_WG]}"),
                 inner[_SG] or (early[_SG] and f"{left} of a subgroup, as {early[_SG]}"))
        if wider != inner:
            inner = wider
            exits = self.block(s.body, inner)
        if isinstance(s, ir.For):
            self.mark(s.var, _UNIFORM, inner, s)
        return _Exits(ret=exits.ret)


def _inner(ctrl: Why, cond: Why, what: str) -> Why:
    """The control flow inside a construct: the enclosing flow's, lowered by its condition's level."""
    return (ctrl[_WG] or (cond[_WG] and f"{what} that depends on {cond[_WG]}"),
            ctrl[_SG] or (cond[_SG] and f"{what} that varies within a subgroup: it depends on {cond[_SG]}"))


def _called_at(s) -> str:
    """Where a barrier inlined from device functions was called (lang/functions.py), innermost first."""
    sites = getattr(s, "called_at", ())
    return "".join(f" (in a device function called at {loc})" for loc in sites)


def check_barrier_uniformity(fn: ir.Function) -> ir.Function:
    """Raise a located KernelTypeError if a barrier or fragment operation of ``fn`` may be reached by only
    some work-items of a workgroup, or a subgroup collective by only some work-items of a subgroup."""
    if ir.uses_barrier(fn) or ir.uses_matrix(fn) or any(ir.subgroup_collective(s) for s in ir.walk_stmts(fn.body)):
        _Analysis(fn).run()
    return fn
