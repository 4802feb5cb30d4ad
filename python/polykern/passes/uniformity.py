"""Uniformity analysis: every ``barrier()`` and every subgroup collective (``pk.subgroup_add`` ...)
must be reached by all work-items of a workgroup or none.

GPUs leave a barrier that only some work-items reach undefined (a hang, or silently wrong shared
memory); the CPU backend would define it. The language refuses it at compile time, as WGSL does, with a
located ``KernelTypeError`` that names the non-uniform condition and why it is non-uniform.

A value is *uniform* (the same on every work-item of a workgroup) if it is computed only from
constants, scalar parameters, ``group_id``/``local_size``/``num_groups``, loads from readonly Buffers at
uniform indices, private (``pk.local``) arrays written only uniformly, and uniform variables.
``global_id``/``local_id``, loads from writable Buffers or shared arrays and atomics are not. A variable
is uniform if every assignment to it assigns a uniform value under uniform control flow (the analysis
is flow-insensitive: one non-uniform assignment anywhere makes the variable non-uniform everywhere).

Control flow is non-uniform inside an ``if``/``while``/``for`` whose condition (or range) is
non-uniform; after a ``return``/``break``/``continue`` that only some work-items take, for the rest of
the function / loop iteration; and in the whole body of a loop that some work-items leave earlier than
others (a non-uniform ``break`` or ``return``).
"""
from __future__ import annotations

from typing import Dict, Optional

from ..errors import KernelTypeError
from ..ir import nodes as ir
from ..ir.types import ArrayType, BufferType

_UNIFORM_REGS = ("group_id", "local_size", "num_groups")
_MAX_CHAIN = 3  # variables named in one explanation
_DEPENDS = ", which depends on "


class _Exits:
    """Why some work-items may leave the current region early (None: nobody does, or all together)."""

    __slots__ = ("ret", "brk", "cont")

    def __init__(self, ret=None, brk=None, cont=None):
        self.ret, self.brk, self.cont = ret, brk, cont

    def merge(self, other: "_Exits") -> None:
        self.ret = self.ret or other.ret
        self.brk = self.brk or other.brk
        self.cont = self.cont or other.cont

    def any(self) -> Optional[str]:
        return self.ret or self.brk or self.cont


def _line(node) -> str:
    loc = getattr(node, "loc", None)
    return f"line {loc.line}" if loc is not None else "an unknown line"


def _keyword(node, default: str) -> str:
    loc = getattr(node, "loc", None)
    words = loc.source_line.split() if loc is not None and loc.source_line else []
    word = words[0].rstrip(":") if words else ""
    return word if word in ("if", "elif", "while", "for") else default


class _Analysis:
    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.why: Dict[str, str] = {}  # non-uniform variable or private array -> explanation
        self.report = False
        self.changed = False

    def run(self) -> None:
        self.changed = True
        while self.changed:  # monotone: each round can only add non-uniform names
            self.changed = False
            self.block(self.fn.body, None)
        self.report = True
        self.block(self.fn.body, None)

    # ------------------------------------------------------------------ values
    def value(self, e: ir.Expr) -> Optional[str]:
        """None if ``e`` is uniform, else why not: a direct cause in ``e`` (``local_id``, a load, an
        atomic) is named before a non-uniform variable, whose explanation is longer."""
        via_var, stack = None, [e]
        while stack:
            x = stack.pop()
            direct = self._direct(x)
            if direct:
                return direct
            if isinstance(x, ir.Var):
                via_var = via_var or self.why.get(x.name)
            elif isinstance(x, ir.Load) and isinstance(x.base.type, ArrayType):  # a private array
                via_var = via_var or self.why.get(x.base.name)
            stack.extend(reversed(x.children()))
        return via_var

    @staticmethod
    def _direct(e: ir.Expr) -> Optional[str]:
        if isinstance(e, ir.SpecialReg) and e.kind not in _UNIFORM_REGS:
            return f"{e.kind}({e.dim})"
        if isinstance(e, ir.Atomic):
            return f"the result of atomic_{e.op}() on '{e.base.name}'"
        if isinstance(e, ir.WgReg):
            return f"a register of warpgroup accumulator or row vector '{e.name}'"
        if isinstance(e, ir.Subgroup) and e.op != "size":  # the same within a subgroup at most
            return f"subgroup_{e.op}()"
        if isinstance(e, ir.Load):
            t = e.base.type
            if isinstance(t, BufferType) and not t.readonly:
                return f"a load from Buffer '{e.base.name}', which is not readonly"
            if isinstance(t, ArrayType) and t.scope == "shared":
                return f"a load from shared array '{e.base.name}'"
        return None

    def mark(self, name: str, value_why: Optional[str], ctrl: Optional[str], node) -> None:
        if name in self.why or not (value_why or ctrl):
            return
        if value_why:
            why = f"'{name}' ({_line(node)}){_DEPENDS}{value_why}"
            parts = why.split(_DEPENDS)
            if len(parts) > _MAX_CHAIN + 1:  # name the first variables and the root cause
                why = _DEPENDS.join(parts[:_MAX_CHAIN] + ["...", parts[-1]])
        else:
            why = f"'{name}', which is assigned at {_line(node)} where {ctrl}"
        self.why[name] = why
        self.changed = True

    # ------------------------------------------------------------------ statements
    def block(self, stmts, ctrl: Optional[str]) -> _Exits:
        exits = _Exits()
        for s in stmts:
            exits.merge(self.stmt(s, ctrl or exits.any()))
        return exits

    def stmt(self, s, ctrl: Optional[str]) -> _Exits:
        if isinstance(s, ir.Assign):
            sg = ir.subgroup_collective(s)
            if sg is not None and self.report and ctrl:
                raise KernelTypeError(
                    f"subgroup_{sg.op}() is reached only by some work-items of a workgroup: {ctrl}. Every "
                    "work-item of a workgroup must reach the same subgroup operation (GPUs leave it "
                    "undefined otherwise); make the condition uniform (computed only from parameters, "
                    "constants, group_id, local_size, num_groups and readonly Buffers) or move the "
                    f"operation out of it{_called_at(s)}", sg.loc or s.loc)  # subgroup collective
            self.mark(s.name, self.value(s.value), ctrl, s)
        elif isinstance(s, ir.Store):
            t = s.base.type
            if isinstance(t, ArrayType) and t.scope == "local":
                self.mark(s.base.name, self.value(s.index) or self.value(s.value), ctrl, s)
        elif isinstance(s, ir.MatrixOp):
            if self.report and ctrl:
                op = "mma" if s.op == "mma" else f"frag_{s.op}"
                raise KernelTypeError(
                    f"pk.{op}() is reached only by some work-items of a workgroup: {ctrl}. A matrix-fragment "
                    "operation is done by a whole subgroup together, so every work-item of a workgroup must "
                    "reach it (GPUs leave it undefined otherwise); make the condition uniform (computed only "
                    "from parameters, constants, group_id, local_size, num_groups and readonly Buffers) or "
                    f"move the operation out of it{_called_at(s)}", s.loc)
        elif isinstance(s, ir.Barrier):
            if self.report and ctrl:
                raise KernelTypeError(
                    f"barrier() is reached only by some work-items of a workgroup: {ctrl}. Every "
                    "work-item of a workgroup must reach the same barrier() (GPUs hang or corrupt shared "
                    "memory otherwise); make the condition uniform (computed only from parameters, "
                    "constants, group_id, local_size, num_groups and readonly Buffers) or move the "
                    f"barrier out of it{_called_at(s)}", s.loc)
        elif isinstance(s, (ir.Return, ir.Break, ir.Continue)):
            if ctrl is None:
                return _Exits()
            word = type(s).__name__.lower()
            why = f"the '{word}' at {_line(s)} is taken only by some work-items ({ctrl})"
            return _Exits(**{{"return": "ret", "break": "brk", "continue": "cont"}[word]: why})
        elif isinstance(s, ir.If):
            cond = self.value(s.cond)
            inner = ctrl or (cond and f"the '{_keyword(s, 'if')}' at {_line(s)} has a condition that "
                             f"depends on {cond}")
            exits = self.block(s.then, inner)
            exits.merge(self.block(s.orelse, inner))
            return exits
        elif isinstance(s, (ir.While, ir.For)):
            return self.loop(s, ctrl)
        return _Exits()

    def loop(self, s, ctrl: Optional[str]) -> _Exits:
        if isinstance(s, ir.While):
            cond = self.value(s.cond)
            what = "condition"
        else:
            cond = self.value(s.start) or self.value(s.stop)
            what = "range"
        kw = _keyword(s, "while" if isinstance(s, ir.While) else "for")
        inner = ctrl or (cond and f"the '{kw}' loop at {_line(s)} has a {what} that depends on {cond}")
        exits = self.block(s.body, inner)
        early = exits.brk or exits.ret
        if early and inner is None:
            # Some work-items leave the loop earlier: later iterations run with fewer of them.
            inner = f"the '{kw}' loop at {_line(s)} is left early by only some work-items, as {early}"
            exits = self.block(s.body, inner)
        if isinstance(s, ir.For):
            self.mark(s.var, None, inner, s)
        return _Exits(ret=exits.ret)


def _called_at(s) -> str:
    """Where a barrier inlined from device functions was called (lang/functions.py), innermost first."""
    sites = getattr(s, "called_at", ())
    return "".join(f" (in a device function called at {loc})" for loc in sites)


def check_barrier_uniformity(fn: ir.Function) -> ir.Function:
    """Raise a located KernelTypeError if a barrier or subgroup collective of ``fn`` may be reached by only
    some work-items."""
    if ir.uses_barrier(fn) or ir.uses_matrix(fn) or any(ir.subgroup_collective(s) for s in ir.walk_stmts(fn.body)):
        _Analysis(fn).run()
    return fn
