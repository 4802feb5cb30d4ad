"""Checked mode (``pk.build(..., bounds_check=True)`` or ``POLYKERN_BOUNDS_CHECK=1``): every access to a
buffer, shared array or local array is checked at run time, on every backend, by this one IR pass.

The pass appends hidden parameters to the kernel, after the user's:

- one length per buffer parameter, in parameter order, of the unsigned *check type* ``U`` (``u64`` when
  the kernel already uses a 64-bit integer type, else ``u32``, so no backend needs a type the kernel
  did not need): the buffer's element count, saturated at ``U``'s maximum;
- the *error record* ``Buffer[i32]`` of :data:`RECORD_WORDS` words, zeroed before the launch:
  ``[access id + 1, index bits 0..31, index bits 32..63, 0]`` of the first violation (0 = none).

An access ``base[index]`` is in bounds when ``U(index) < length`` (one unsigned compare also catches
negative indices: they convert to huge values). The guard records a violation with an atomic
compare-and-swap on word 0 (only the first violator then writes the index words), so a guard is an
expression and the pass never moves code across short-circuit operands or loop conditions:

- a store (``Store``), and an atomic that is a whole statement or the whole value of an assignment,
  run under ``If(guard)``: a bad one is skipped;
- a load, and an atomic nested in a larger expression, use ``index * guard`` (a bad one touches
  element 0 instead; the launch then raises, and buffer contents after a violation are unspecified).

The index expression is evaluated again by the guard, which is harmless because indices without
user atomics are pure; an index holding a user atomic is first assigned to a temporary where the
access is a whole statement, and refused (located :class:`CompileError`) elsewhere.

The pass records in ``Function.attrs`` (which ``FunctionInfo.from_ir`` copies into the artifact):
``bounds_check`` = ``"1"``, ``bounds_user_args`` (the user's parameter count), ``bounds_lengths``
(for each length parameter, the index of its buffer parameter), ``bounds_index_bits`` (32 or 64: the
width of ``U``), ``bounds_accesses`` (the number of access sites) and per access id ``k``
``bounds_at_<k>`` (ASCII JSON ``[array, op, index type, length or -1 for a buffer, file, line, col,
source line]``), which ``polykern.checked_launch`` reads to name a violation.
"""
from __future__ import annotations

import copy
import json
import os
from typing import Dict, List, Mapping, Optional, Tuple

from ..errors import CompileError, SourceLoc
from ..ir import nodes as ir
from ..ir.types import ArrayType, BufferType, ScalarType, i32, u32, u64

__all__ = ["bounds_check", "ATTR", "ATTR_USER_ARGS", "ATTR_LENGTHS", "ATTR_ACCESSES", "ATTR_ACCESS", "ATTR_INDEX_BITS",
           "RECORD_WORDS",
           "Access", "decode_accesses"]

ATTR = "bounds_check"
ATTR_USER_ARGS = "bounds_user_args"
ATTR_LENGTHS = "bounds_lengths"
ATTR_ACCESSES = "bounds_accesses"
ATTR_ACCESS = "bounds_at_"  # + access id
ATTR_INDEX_BITS = "bounds_index_bits"
SOURCE_LINE_MAX = 200  # characters of the source line kept per access (attribute values are short text)
RECORD_WORDS = 4


class Access:
    """One checked access site (the attribute ``bounds_at_<id>``)."""

    __slots__ = ("array", "op", "index_type", "length", "file", "line", "col", "source_line")

    def __init__(self, array: str, op: str, index_type: str, length: int, file: str, line: int, col: int,
                 source_line: str):
        self.array, self.op, self.index_type, self.length = array, op, index_type, length
        self.file, self.line, self.col, self.source_line = file, line, col, source_line

    def to_list(self) -> list:
        return [self.array, self.op, self.index_type, self.length, self.file, self.line, self.col, self.source_line]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.col}" if self.line else "an unknown source line"


def decode_accesses(attrs: Mapping[str, str]) -> List[Access]:
    """The access table of a checked kernel from its attributes; ``ValueError`` if malformed."""
    count = int(attrs[ATTR_ACCESSES])
    if not 0 <= count <= len(attrs):
        raise ValueError(f"{ATTR_ACCESSES} = {count} does not match the attributes")
    out = []
    for k in range(count):
        key = f"{ATTR_ACCESS}{k}"
        if key not in attrs:
            raise ValueError(f"{key} is missing")
        r = json.loads(attrs[key])
        if (not isinstance(r, list) or len(r) != 8 or not all(isinstance(r[k], str) for k in (0, 1, 2, 4, 7))
                or not all(type(r[k]) is int for k in (3, 5, 6))):
            raise ValueError(f"malformed access entry {r!r}")
        out.append(Access(*r))
    return out


def _const(value, t: ScalarType) -> ir.Const:
    return ir.Const(value, t)


def _bin(op: str, a: ir.Expr, b: ir.Expr) -> ir.BinOp:
    return ir.BinOp(op, a, b)


def _cast(t: ScalarType, e: ir.Expr) -> ir.Expr:
    return e if e.type == t else ir.Cast(t, e)


def _has_atomic(e: ir.Expr) -> bool:
    """Whether ``e`` (a user's expression, before guards are added) holds an atomic."""
    return any(isinstance(x, ir.Atomic) for x in ir.walk_expr(e))


class _Checker:
    def __init__(self, fn: ir.Function):
        self.fn = fn
        wide = any(t.is_int and t.bits == 64 for t in ir.used_types(fn) if isinstance(t, ScalarType))
        self.utype = u64 if wide else u32
        self.taken = {p.name for p in fn.params} | set(fn.locals) | set(fn.arrays)
        self.lengths: Dict[str, ir.Var] = {}
        self.length_of: List[int] = []
        new_params = []
        for i, p in enumerate(fn.params):
            if isinstance(p.type, BufferType):
                name = self.fresh(f"{p.name}_len")
                self.lengths[p.name] = ir.Var(name, self.utype)
                self.length_of.append(i)
                new_params.append(ir.Param(name, self.utype))
        self.err_name = self.fresh("bounds_err")
        new_params.append(ir.Param(self.err_name, BufferType(i32)))
        self.user_args = len(fn.params)
        fn.params = list(fn.params) + new_params
        self.table: List[Access] = []

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}{k}"
        self.taken.add(name)
        return name

    # ------------------------------------------------------------ guards
    def _err(self, word: int) -> Tuple[ir.Var, ir.Const]:
        return ir.Var(self.err_name, BufferType(i32)), _const(word, i32)

    def guard(self, base: ir.Var, index: ir.Expr, op: str, loc: Optional[SourceLoc]) -> Optional[ir.Expr]:
        """A bool expression: ``index`` (a fresh copy is made) is in bounds of ``base``, recording the first
        violation when it is not; None when the index is a constant known to be in bounds."""
        t = base.type
        if isinstance(t, ArrayType):
            if isinstance(index, ir.Const) and 0 <= int(index.value) < t.size:
                return None
            length: ir.Expr = _const(t.size, self.utype)
            size = t.size
        else:
            length, size = ir.Var(self.lengths[base.name].name, self.utype), -1
        aid = len(self.table)
        self.table.append(Access(base.name, op, str(index.type), size, os.path.basename(loc.file) if loc else "",
                                 loc.line if loc else 0, loc.col if loc else 0,
                                 (loc.source_line or "").strip()[:SOURCE_LINE_MAX] if loc else ""))
        u = self.utype
        inb = _bin("lt", _cast(u, copy.deepcopy(index)), length)
        base0, w0 = self._err(0)
        won = _bin("eq", ir.Atomic("cas", base0, w0, _const(aid + 1, i32), _const(0, i32)), _const(0, i32))
        lo_base, w1 = self._err(1)
        wrote = ir.Atomic("xchg", lo_base, w1, _cast(i32, _cast(u, copy.deepcopy(index))))
        if u.bits == 64:
            hi_base, w2 = self._err(2)
            hi = _cast(i32, _bin("shr", _cast(u, copy.deepcopy(index)), _const(32, u)))
            wrote = _bin("add", wrote, ir.Atomic("xchg", hi_base, w2, hi))
        # Old values are 0 (only the winner writes them), so the recording arm is always false.
        record = _bin("land", won, _bin("eq", wrote, _const(-1, i32)))
        return _bin("lor", inb, record)

    # ------------------------------------------------------------ expressions
    def expr(self, e: ir.Expr, loc: Optional[SourceLoc]) -> ir.Expr:
        loc = e.loc or loc
        if isinstance(e, (ir.Load, ir.Atomic)) and _has_atomic(e.index):
            raise CompileError(f"{loc or self.fn.name}: checked mode (bounds_check) cannot guard this access to "
                               f"'{e.base.name}': its index contains an atomic; assign the index to a variable first")
        for name in ("a", "b", "cond", "index", "value", "compare"):
            sub = getattr(e, name, None)
            if isinstance(sub, ir.Expr):
                setattr(e, name, self.expr(sub, loc))
        if isinstance(e, ir.Call):
            e.args = [self.expr(a, loc) for a in e.args]
        if isinstance(e, (ir.Load, ir.Atomic)):
            e.index = self.masked(e, loc)
        return e

    def masked(self, e, loc) -> ir.Expr:
        """``index * guard``: a bad access touches element 0 instead (see the module docstring)."""
        op = "read" if isinstance(e, ir.Load) else f"atomic_{e.op}"
        g = self.guard(e.base, e.index, op, loc)
        if g is None:
            return e.index
        return _bin("mul", e.index, ir.Cast(e.index.type, g))

    # ------------------------------------------------------------ statements
    def hoist(self, index: ir.Expr, loc, out: List[ir.Stmt]) -> ir.Expr:
        """A statement-level index holding a user atomic is evaluated once, into a temporary."""
        if not _has_atomic(index):
            return index
        name = self.fresh("bounds_idx")
        self.fn.locals[name] = index.type
        a = ir.Assign(name, index)
        a.loc = loc
        out.append(a)
        return ir.Var(name, index.type)

    def guarded(self, s: ir.Stmt, access, op: str, out: List[ir.Stmt]) -> None:
        """Run statement ``s`` (whose root access is ``access``) only when the access is in bounds."""
        loc = access.loc or s.loc
        access.index = self.hoist(access.index, loc, out)
        access.index = self.expr(access.index, loc)
        for name in ("value", "compare"):
            sub = getattr(access, name, None)
            if isinstance(sub, ir.Expr):
                setattr(access, name, self.expr(sub, loc))
        g = self.guard(access.base, access.index, op, loc)
        if g is None:
            out.append(s)
            return
        w = ir.If(g, [s], [])
        w.loc = s.loc
        out.append(w)

    def block(self, stmts: List[ir.Stmt]) -> List[ir.Stmt]:
        out: List[ir.Stmt] = []
        for s in stmts:
            loc = s.loc
            if isinstance(s, ir.Store):
                self.guarded(s, s, "write", out)
                continue
            if isinstance(s, ir.ExprStmt) and isinstance(s.expr, ir.Atomic):
                self.guarded(s, s.expr, f"atomic_{s.expr.op}", out)
                continue
            if isinstance(s, ir.Assign) and isinstance(s.value, ir.Atomic):
                self.guarded(s, s.value, f"atomic_{s.value.op}", out)
                continue
            if isinstance(s, ir.Assign):
                s.value = self.expr(s.value, loc)
            elif isinstance(s, ir.ExprStmt):
                s.expr = self.expr(s.expr, loc)
            elif isinstance(s, ir.If):
                s.cond = self.expr(s.cond, loc)
                s.then, s.orelse = self.block(s.then), self.block(s.orelse)
            elif isinstance(s, ir.For):
                s.start, s.stop = self.expr(s.start, loc), self.expr(s.stop, loc)
                s.body = self.block(s.body)
            elif isinstance(s, ir.While):
                s.cond = self.expr(s.cond, loc)
                s.body = self.block(s.body)
            out.append(s)
        return out


def bounds_check(fn: ir.Function) -> ir.Function:
    """Add the checks to ``fn`` in place (give it a copy of a kernel's IR) and return it."""
    if fn.attrs.get(ATTR) == "1":
        return fn
    c = _Checker(fn)
    fn.body = c.block(fn.body)
    fn.attrs = dict(fn.attrs)
    fn.attrs[ATTR] = "1"
    fn.attrs[ATTR_USER_ARGS] = str(c.user_args)
    fn.attrs[ATTR_INDEX_BITS] = str(c.utype.bits)
    fn.attrs[ATTR_LENGTHS] = ",".join(str(i) for i in c.length_of)
    fn.attrs[ATTR_ACCESSES] = str(len(c.table))
    for k, a in enumerate(c.table):
        fn.attrs[f"{ATTR_ACCESS}{k}"] = json.dumps(a.to_list(), separators=(",", ":"), ensure_ascii=True)
    return fn
