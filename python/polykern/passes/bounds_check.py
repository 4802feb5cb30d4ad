"""Checked mode (``pk.build(..., bounds_check=True)`` or ``POLYKERN_BOUNDS_CHECK=1``): every access to a
buffer, shared array or local array is checked at run time, on every backend, by this one IR pass.

The pass appends hidden parameters to the kernel, after the user's (buffers only: scalars would
count against small limits such as Vulkan's 128 bytes of push constants):

- when the kernel has buffer parameters, ``bounds_lens: Buffer[U, readonly]``: their lengths, in
  parameter order, in the unsigned *check type* ``U`` (``u64`` when the kernel already uses a 64-bit
  integer type, else ``u32``, so no backend needs a type the kernel did not need), each the buffer's
  element count saturated at ``U``'s maximum;
- the *error record* ``Buffer[i32]`` of :data:`RECORD_WORDS` words, zeroed before the launch:
  ``[access id + 1, index bits 0..31, index bits 32..63, ld bits 0..31, ld bits 32..63]`` of the first
  violation (0 = none; the ld words for a fragment load/store only).

No guard does arithmetic that can wrap: the bounds are compared, never computed in the index's type.
An access ``base[index]`` is in bounds when ``U(index) < length``, and for a signed index also
``index >= 0`` (a negative index converts to ``2**bits - |index|``, which a saturated length of a long
buffer can exceed). A fragment load/store (``matrix_guard``) checks the exact ``offset + r * ld + c`` of
its elements (what the CPU computes in i64, the oracle in Python integers) with overflow-safe compares.
The guard records a violation with an atomic compare-and-swap on word 0 (only the first violator then
writes the other words).

A lane of a ``pk.vload``/``pk.vstore`` group (``ir.vector``) at group index ``k`` of ``n`` lanes is
guarded first by the group's *fit* check, ``ceil(MIN / n) <= k <= (MAX - n + 1) / n`` in ``k``'s type
(its elements ``n*k .. n*k + n-1`` fit the type, as the language requires; otherwise the lane's index
would wrap, possibly back into the array), then by its element's check; a failed fit check records
``k`` under an access entry whose ``group`` is ``n``. A ``pk.copy_async`` becomes its plain copy
(passes/async_copy.py) here, under the fit checks of both its groups, and each element is then
checked like any access; the pipeline lowers the commits and waits afterwards.

Accesses are moved out of expressions into statements, in evaluation order, each index evaluated
once into a temporary (``bounds_t<k>``): a load becomes ``if guard: t = base[i] else: t = 0``, a
store or atomic runs under ``if guard``; so a bad access is skipped (a load reads 0) and the work-item
goes on. Short-circuit operands keep their meaning (``t = a; if t: {...; t = b}`` for ``a and b``).
Only the two expressions that run before every loop iteration (a ``while`` condition, a ``for``
bound) keep their accesses in place, guarded as ``index * guard`` (a bad one touches element 0
instead; buffer contents after a reported violation are unspecified); an index holding an atomic there
is refused with a located :class:`CompileError`. Outside loop conditions the kernel grows linearly
with its accesses.

The pass records in ``Function.attrs`` (which ``FunctionInfo.from_ir`` copies into the artifact):
``bounds_check`` = ``"1"``, ``bounds_user_args`` (the user's parameter count), ``bounds_lengths``
(for each slot of ``bounds_lens``, the index of its buffer parameter), ``bounds_index_bits`` (32 or 64: the
width of ``U``), ``bounds_accesses`` (the number of access sites) and per access id ``k``
``bounds_at_<k>`` (a flat ASCII JSON list ``[array, op, index type, length or -1 for a buffer, file, line,
col, source line]``, with a ninth entry ``n`` for a group's fit check, or ``0, major, minor, ld type`` for a
fragment load/store), which ``polykern.runtime.checked_launch`` reads to name a violation through
:func:`decode_metadata`: the one reader of these attributes, strict about their form (no nesting, no
other JSON) since an artifact is untrusted; its strings are escaped wherever they are printed.
"""
from __future__ import annotations

import copy
import json
import os
import re
from typing import Dict, List, Mapping, Optional, Tuple

from ..errors import CompileError, SourceLoc
from ..ir import nodes as ir
from ..ir.dynamic_shared import size_param
from ..ir.types import SCALAR_TYPES, ArrayType, BufferType, ScalarType, bool_, i32, u32, u64
from ..ir.vector import index_expr, lane_access
from .async_copy import copy_lowering
from .bounds_proof import PROVEN

__all__ = ["bounds_check", "ATTR", "ATTR_USER_ARGS", "ATTR_LENGTHS", "ATTR_ACCESSES", "ATTR_ACCESS", "ATTR_INDEX_BITS",
           "RECORD_WORDS",
           "Access", "Metadata", "decode_accesses", "decode_metadata", "decode_user_args"]

ATTR = "bounds_check"
ATTR_USER_ARGS = "bounds_user_args"
ATTR_LENGTHS = "bounds_lengths"
ATTR_ACCESSES = "bounds_accesses"
ATTR_ACCESS = "bounds_at_"  # + access id
ATTR_INDEX_BITS = "bounds_index_bits"
SOURCE_LINE_MAX = 200  # characters of the source line kept per access (attribute values are short text)
RECORD_WORDS = 5


class Access:
    """One checked access site (the attribute ``bounds_at_<id>``). ``group`` > 0: the check that a
    group's elements ``group*k .. group*k + group-1`` fit the type of its group index ``k`` (the record
    then holds ``k``); a ninth list entry, absent for element checks. ``fragment`` = ``(major, minor,
    ld type)`` for a fragment load/store touching ``offset + r * ld + c`` (``r < major``, ``c < minor``;
    the record then holds the offset and ``ld``): list entries 9 to 12, after a ``group`` of 0."""

    __slots__ = ("array", "op", "index_type", "length", "file", "line", "col", "source_line", "group", "fragment")

    def __init__(self, array: str, op: str, index_type: str, length: int, file: str, line: int, col: int,
                 source_line: str, group: int = 0, fragment: tuple = ()):
        self.array, self.op, self.index_type, self.length = array, op, index_type, length
        self.file, self.line, self.col, self.source_line = file, line, col, source_line
        self.group, self.fragment = group, fragment

    def to_list(self) -> list:
        out = [self.array, self.op, self.index_type, self.length, self.file, self.line, self.col, self.source_line]
        if self.fragment:
            return out + [0, *self.fragment]
        return out + [self.group] if self.group else out

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.col}" if self.line else "an unknown source line"


#: A ``bounds_at_<k>`` value: a flat JSON array of ASCII strings and integers, the only form the pass
#: writes (``json.dumps(..., separators=(",", ":"), ensure_ascii=True)``). Matched before it is decoded, so
#: a hostile artifact cannot nest (``[[[[...``: RecursionError) or smuggle other JSON values in.
_JSON_STR = r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
_JSON_INT = r"-?(?:0|[1-9][0-9]{0,19})"
_ENTRY_RE = re.compile(rf"\[(?:(?:{_JSON_STR}|{_JSON_INT})(?:,(?:{_JSON_STR}|{_JSON_INT}))*)?\]")
_UINT_RE = re.compile(r"0|[1-9][0-9]{0,19}")
#: The fields of an entry: 8 (an element), 9 (a group's fit check), 12 (a fragment load/store).
_STRS, _INTS = (0, 1, 2, 4, 7), (3, 5, 6)
_INDEX_TYPES = frozenset(n for n, t in SCALAR_TYPES.items() if t.is_int)  # an index's or ld's type name


def _uint(attrs: Mapping[str, str], key: str) -> int:
    value = attrs[key]
    if not _UINT_RE.fullmatch(value):
        raise ValueError(f"{key} is not a decimal integer")
    return int(value)


def _entry(value: str) -> Access:
    r = json.loads(value) if _ENTRY_RE.fullmatch(value) else None
    if (not isinstance(r, list) or len(r) not in (8, 9, 12) or not all(isinstance(r[k], str) for k in _STRS)
            or not all(type(r[k]) is int for k in _INTS) or r[3] < -1 or r[5] < 0 or r[6] < 0
            or r[2] not in _INDEX_TYPES):
        raise ValueError("malformed access entry")
    if len(r) == 9 and not r[8] > 0:
        raise ValueError("malformed access entry (group)")
    if len(r) == 12 and not (r[8] == 0 and all(type(x) is int and 1 <= x <= 64 for x in r[9:11])
                             and r[11] in _INDEX_TYPES):
        raise ValueError("malformed access entry (fragment)")
    return Access(*r[:9], fragment=tuple(r[9:]))


class Metadata:
    """What a checked kernel's attributes say (:func:`decode_metadata`); the one reader of them."""

    __slots__ = ("user_args", "lengths", "index_bits", "accesses")

    def __init__(self, user_args: int, lengths: List[int], index_bits: int, accesses: List[Access]):
        self.user_args, self.lengths, self.index_bits, self.accesses = user_args, lengths, index_bits, accesses


def decode_user_args(attrs: Mapping[str, str]) -> int:
    """The user's parameter count of a checked kernel; ``KeyError``/``ValueError`` if malformed."""
    return _uint(attrs, ATTR_USER_ARGS)


def decode_metadata(attrs: Mapping[str, str]) -> Metadata:
    """The checked-mode attributes of a kernel (from an artifact: untrusted), validated; ``KeyError`` or
    ``ValueError`` (a short text without the artifact's bytes) if malformed. Strings stay as decoded:
    whoever prints them escapes them (``polykern.kbin.messages.escape``)."""
    parts = attrs[ATTR_LENGTHS].split(",") if attrs[ATTR_LENGTHS] else []
    if not all(_UINT_RE.fullmatch(x) for x in parts):
        raise ValueError(f"{ATTR_LENGTHS} is not a list of decimal integers")
    lengths = [int(x) for x in parts]
    return Metadata(decode_user_args(attrs), lengths, _uint(attrs, ATTR_INDEX_BITS), decode_accesses(attrs))


def decode_accesses(attrs: Mapping[str, str]) -> List[Access]:
    """The access table of a checked kernel from its attributes; ``ValueError`` if malformed."""
    count = _uint(attrs, ATTR_ACCESSES)
    if count > len(attrs):
        raise ValueError(f"{ATTR_ACCESSES} = {count} does not match the attributes")
    out = []
    for k in range(count):
        key = f"{ATTR_ACCESS}{k}"
        if key not in attrs:
            raise ValueError(f"{key} is missing")
        try:
            out.append(_entry(attrs[key]))
        except ValueError as e:
            raise ValueError(f"{key}: {e}") from None
    return out


def _const(value, t: ScalarType) -> ir.Const:
    return ir.Const(value, t)


def _bin(op: str, a: ir.Expr, b: ir.Expr) -> ir.BinOp:
    return ir.BinOp(op, a, b)


def _cast(t: ScalarType, e: ir.Expr) -> ir.Expr:
    return e if e.type == t else ir.Cast(t, e)


def _zero(t: ScalarType) -> ir.Const:
    return _const(False if t.is_bool else 0.0 if t.is_float else 0, t)


def _nonneg(e: ir.Expr) -> ir.Expr:
    return _bin("ge", e, _zero(e.type))


def _both(a: Optional[ir.Expr], b: Optional[ir.Expr]) -> Optional[ir.Expr]:
    """``a and b`` of two guards, either of which may be None (no check needed)."""
    return b if a is None else a if b is None else _bin("land", a, b)


def _has_atomic(e: ir.Expr) -> bool:
    """Whether ``e`` (a user's expression, before guards are added) holds an atomic."""
    return any(isinstance(x, ir.Atomic) for x in ir.walk_expr(e))


class _Checker:
    def __init__(self, fn: ir.Function):
        self.fn = fn
        wide = any(t.is_int and t.bits == 64 for t in ir.used_types(fn) if isinstance(t, ScalarType))
        self.utype = u64 if wide else u32
        self.taken = {p.name for p in fn.params} | set(fn.locals) | set(fn.arrays)
        self.lengths: Dict[str, int] = {}  # buffer parameter -> its slot in the lengths buffer
        self.length_of: List[int] = []
        new_params = []
        for i, p in enumerate(fn.params):
            if isinstance(p.type, BufferType):
                self.lengths[p.name] = len(self.length_of)
                self.length_of.append(i)
        self.lens = None
        if self.length_of:
            self.lens = ir.Param(self.fresh("bounds_lens"), BufferType(self.utype, True))
            new_params.append(self.lens)
        self.err_name = self.fresh("bounds_err")
        new_params.append(ir.Param(self.err_name, BufferType(i32)))
        self.user_args = len(fn.params)
        fn.params = list(fn.params) + new_params
        self.table: List[Access] = []
        self.copies = copy_lowering(fn)

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
        length, size = self.length(base)
        if isinstance(t, ArrayType) and not t.dynamic and isinstance(index, ir.Const) and 0 <= int(index.value) < size:
            return None
        aid = self.site(base, op, index.type, size, loc)
        inb = _bin("lt", _cast(self.utype, copy.deepcopy(index)), length)
        if index.type.is_signed:  # not by the conversion alone: a negative index converts to 2**bits - |index|,
            inb = _bin("land", _nonneg(copy.deepcopy(index)), inb)  # below a (saturated) length >= that
        return _bin("lor", inb, self.record(aid, index))

    def fit_guard(self, base: ir.Var, k: ir.Expr, n: int, op: str, loc: Optional[SourceLoc]) -> Optional[ir.Expr]:
        """A bool expression: the elements ``n*k .. n*k + n-1`` of a group (pk.vload/pk.vstore,
        pk.copy_async) at group index ``k`` fit ``k``'s type, as the language requires, recording the
        first violation (with ``k``) when they do not; None when ``k`` is a constant whose group fits.
        Without it the lanes' indices would wrap back into the array and pass their own checks."""
        t = k.type
        lo, hi = -(-t.min_value() // n), (t.max_value() - n + 1) // n
        if isinstance(k, ir.Const) and lo <= int(k.value) <= hi:
            return None
        aid = self.site(base, op, t, self.length(base)[1], loc, group=n)
        fits = _bin("le", copy.deepcopy(k), _const(hi, t))
        if t.is_signed:
            fits = _bin("land", _bin("ge", copy.deepcopy(k), _const(lo, t)), fits)
        return _bin("lor", fits, self.record(aid, k))

    def length(self, base: ir.Var) -> Tuple[ir.Expr, int]:
        """The length of ``base`` as an expression of the check type, and as the access table records it
        (the size of a fixed array, -1 when it is known at launch only)."""
        t = base.type
        if isinstance(t, ArrayType) and t.dynamic:  # pk.shared_dynamic: its length is a parameter
            return _cast(self.utype, ir.Var(size_param(self.fn), i32)), -1
        if isinstance(t, ArrayType):
            return _const(t.size, self.utype), t.size
        lens = ir.Var(self.lens.name, self.lens.type)
        return ir.Load(lens, _const(self.lengths[base.name], i32)), -1

    def site(self, base: ir.Var, op: str, index_type, size: int, loc: Optional[SourceLoc], group: int = 0,
             fragment: tuple = ()) -> int:
        """A new access id, its entry in the table."""
        self.table.append(Access(base.name, op, str(index_type), size, os.path.basename(loc.file) if loc else "",
                                 loc.line if loc else 0, loc.col if loc else 0,
                                 (loc.source_line or "").strip()[:SOURCE_LINE_MAX] if loc else "", group, fragment))
        return len(self.table) - 1

    def record(self, aid: int, index: ir.Expr, extra: Optional[ir.Expr] = None) -> ir.Expr:
        """The recording arm of a guard: it stores ``aid + 1``, ``index``'s bits (as the check type) and
        ``extra``'s (a fragment's ld) in the error record if it is the first violation, and is always false."""
        base0, w0 = self._err(0)
        won = _bin("eq", ir.Atomic("cas", base0, w0, _const(aid + 1, i32), _const(0, i32)), _const(0, i32))
        wrote = self.record_bits(index, 1)
        if extra is not None:
            wrote = _bin("add", wrote, self.record_bits(extra, 3))
        # Old values are 0 (only the winner writes them), so the recording arm is always false.
        return _bin("land", won, _bin("eq", wrote, _const(-1, i32)))

    def record_bits(self, value: ir.Expr, word: int) -> ir.Expr:
        """Store ``value``'s bits as the check type into record words ``word`` (and ``word + 1``); gives
        the old contents (0) of those words, summed."""
        u = self.utype
        lo_base, w = self._err(word)
        wrote = ir.Atomic("xchg", lo_base, w, _cast(i32, _cast(u, copy.deepcopy(value))))
        if u.bits == 64:
            hi_base, w2 = self._err(word + 1)
            hi = _cast(i32, _bin("shr", _cast(u, copy.deepcopy(value)), _const(32, u)))
            wrote = _bin("add", wrote, ir.Atomic("xchg", hi_base, w2, hi))
        return wrote

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
        """``index * guard`` (loop conditions and bounds only): a bad access touches element 0 instead."""
        op = "read" if isinstance(e, ir.Load) else f"atomic_{e.op}"
        g = None if getattr(e, PROVEN, False) else self.guard(e.base, e.index, op, loc)
        if g is None:
            return e.index
        return _bin("mul", e.index, ir.Cast(e.index.type, g))

    # ------------------------------------------------------------ statements
    def temp(self, t: ScalarType, value: Optional[ir.Expr], out: List[ir.Stmt], loc) -> ir.Var:
        name = self.fresh("bounds_t")
        self.fn.locals[name] = t
        if value is not None:
            a = ir.Assign(name, value)
            a.loc = loc
            out.append(a)
        return ir.Var(name, t)

    def hold(self, e: ir.Expr, out: List[ir.Stmt], loc) -> ir.Expr:
        """``e`` evaluated once: itself if a variable or constant, else a temporary assigned in ``out``."""
        return e if isinstance(e, (ir.Var, ir.Const)) else self.temp(e.type, e, out, loc)

    def flat(self, e: ir.Expr, out: List[ir.Stmt], loc) -> ir.Expr:
        """Move the accesses of ``e`` into guarded statements appended to ``out``, in evaluation order
        (each index evaluated once, into a temporary); return what is left of ``e``. The right operand
        of ``land``/``lor`` keeps running only when needed: ``t = a; if t (not t): {...; t = b}``."""
        loc = e.loc or loc
        if isinstance(e, ir.BinOp) and e.op in ir.BINOPS_LOGIC:
            e.a = self.flat(e.a, out, loc)
            pre: List[ir.Stmt] = []
            e.b = self.flat(e.b, pre, loc)
            if not pre:
                return e
            t = self.temp(bool_, e.a, out, loc)
            test = ir.Var(t.name, bool_) if e.op == "land" else ir.UnaryOp("not", ir.Var(t.name, bool_))
            then = ir.Assign(t.name, e.b)
            w = ir.If(test, pre + [then], [])
            then.loc = w.loc = loc
            out.append(w)
            return ir.Var(t.name, bool_)
        if isinstance(e, ir.Call):
            e.args = [self.flat(a, out, loc) for a in e.args]
        for name in ("cond", "a", "b", "index", "compare", "value"):  # the order backends evaluate them
            sub = getattr(e, name, None)
            if isinstance(sub, ir.Expr):
                setattr(e, name, self.flat(sub, out, loc))
        if not isinstance(e, (ir.Load, ir.Atomic)):
            return e
        e.index = self.hold(e.index, out, loc)
        op = "read" if isinstance(e, ir.Load) else f"atomic_{e.op}"
        g = None if getattr(e, PROVEN, False) else self.guard(e.base, e.index, op, loc)
        if g is None:
            return e
        result = self.temp(e.type, None, out, loc)
        then, other = ir.Assign(result.name, e), ir.Assign(result.name, _zero(e.type))
        w = ir.If(g, [then], [other])
        then.loc = other.loc = w.loc = loc
        out.append(w)
        return ir.Var(result.name, e.type)

    def guarded(self, s: ir.Stmt, access, op: str, out: List[ir.Stmt]) -> None:
        """Run statement ``s`` (whose root access is ``access``) only when the access is in bounds, and
        for a lane of a group (``ir.vector``) only when the whole group fits its index type. A lane that
        loads runs ``t = base[i]`` under the guard, else ``t = 0``."""
        loc = access.loc or s.loc
        lane = lane_access(s)
        proven = getattr(access, PROVEN, False)  # passes/bounds_proof.py: in bounds, lane fits its type
        g_fit = (self.fit_guard(access.base, index_expr(lane), lane.n, op, loc) if lane is not None and not proven
                 else None)
        access.index = self.flat(access.index, out, loc)
        for name in ("compare", "value"):
            sub = getattr(access, name, None)
            if isinstance(sub, ir.Expr):
                setattr(access, name, self.flat(sub, out, loc))
        if proven:  # unguarded: the index stays in place (a group's lanes stay one vector access)
            out.append(s)
            return
        access.index = self.hold(access.index, out, loc)
        g = _both(g_fit, self.guard(access.base, access.index, op, loc))
        if g is None:
            out.append(s)
            return
        other: List[ir.Stmt] = []
        if isinstance(s, ir.Assign):
            other = [ir.Assign(s.name, _zero(s.value.type))]
            other[0].loc = s.loc
        w = ir.If(g, [s], other)
        w.loc = s.loc
        out.append(w)

    def copy(self, s: ir.CopyAsync, out: List[ir.Stmt]) -> None:
        """A pk.copy_async as its plain copy (passes/async_copy.py), run only when both groups fit their
        index type; each element then checked like any access."""
        loc = s.loc
        s.dst_k = self.hold(self.flat(s.dst_k, out, loc), out, loc)
        s.src_k = self.hold(self.flat(s.src_k, out, loc), out, loc)
        if getattr(s, PROVEN, False):  # passes/bounds_proof.py: both groups in bounds; lowered later
            out.append(s)
            return
        g = _both(self.fit_guard(s.dst, s.dst_k, s.count, "write", loc),
                  self.fit_guard(s.src, s.src_k, s.count, "read", loc))
        body = self.block(self.copies.copy(s))
        if g is None:
            out.extend(body)
            return
        w = ir.If(g, body, [])
        w.loc = loc
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
            if isinstance(s, ir.Assign) and lane_access(s) is not None:  # a pk.vload lane
                self.guarded(s, s.value, "read", out)
                continue
            if isinstance(s, ir.CopyAsync):
                self.copy(s, out)
                continue
            if isinstance(s, ir.Assign):
                s.value = self.flat(s.value, out, loc)
            elif isinstance(s, ir.ExprStmt):
                s.expr = self.flat(s.expr, out, loc)
            elif isinstance(s, ir.If):
                s.cond = self.flat(s.cond, out, loc)
                s.then, s.orelse = self.block(s.then), self.block(s.orelse)
            elif isinstance(s, ir.For):
                # start runs once, before the loop; stop runs before every iteration: guarded in place
                s.start, s.stop = self.flat(s.start, out, loc), self.expr(s.stop, loc)
                s.body = self.block(s.body)
            elif isinstance(s, ir.While):
                s.cond = self.expr(s.cond, loc)
                s.body = self.block(s.body)
            elif isinstance(s, ir.MatrixOp):
                s.args = [self.hold(self.flat(a, out, loc), out, loc) for a in s.args]
                g = self.matrix_guard(s, loc) if s.op in ("load", "store") else None
                if g is not None:  # the same in the whole subgroup (its operands are)
                    w = ir.If(g, [s], [])
                    w.loc = loc
                    out.append(w)
                    continue
            out.append(s)
        return out

    def matrix_guard(self, s: ir.MatrixOp, loc) -> Optional[ir.Expr]:
        """A fragment load/store touches ``off + r * ld + c`` for ``r < major``, ``c < minor`` (row-major:
        the fragment's rows and columns; column-major: its columns and rows), each operand in its own type,
        the sum exact (the CPU computes it in i64; the oracle in Python integers). The guard says that every
        one is in ``[0, length)``, with no arithmetic that can wrap: only conversions of non-negative values
        to the unsigned check type ``U`` (which is as wide as both operands), products by ``R = major - 1``
        of values at most ``max(U) // R``, and subtractions that cannot go below 0. With ``C = minor - 1``:

        - ``off >= 0`` and ``off + C < length`` (``C < length`` and ``off < length - C``);
        - ``ld >= 0``: ``off + R * ld + C < length``: ``R * ld <= length - C - 1 - off``;
        - ``ld < 0``: ``off + R * ld >= 0``: ``R * |ld| <= off`` (``|ld| = 0 - U(ld)``, exact in ``U``).

        The whole operation is skipped when any element is out of bounds; the record holds ``off`` and ``ld``."""
        off, ld = s.args
        major, minor = (s.ftype.rows, s.ftype.cols) if s.layout == "row" else (s.ftype.cols, s.ftype.rows)
        length, size = self.length(s.base)
        r, c = major - 1, minor - 1
        if isinstance(s.base.type, ArrayType) and not s.base.type.dynamic and isinstance(off, ir.Const) \
                and isinstance(ld, ir.Const):
            lo, hi = int(off.value) + min(0, r * int(ld.value)), int(off.value) + max(0, r * int(ld.value)) + c
            if 0 <= lo and hi < size:
                return None
        u = self.utype
        uo, ul = _cast(u, copy.deepcopy(off)), _cast(u, copy.deepcopy(ld))
        small = _const(u.max_value() // r, u)
        room = _bin("sub", _bin("sub", copy.deepcopy(length), _const(c + 1, u)), copy.deepcopy(uo))
        ok = _bin("land", _bin("lt", _const(c, u), copy.deepcopy(length)),
                  _bin("lt", copy.deepcopy(uo), _bin("sub", copy.deepcopy(length), _const(c, u))))
        span = _bin("land", _bin("le", ul, small), _bin("le", _bin("mul", copy.deepcopy(ul), _const(r, u)), room))
        if ld.type.is_signed:
            mag = _bin("sub", _const(0, u), copy.deepcopy(ul))
            back = _bin("land", _bin("le", mag, copy.deepcopy(small)),
                        _bin("le", _bin("mul", copy.deepcopy(mag), _const(r, u)), copy.deepcopy(uo)))
            span = _bin("lor", _bin("land", _nonneg(copy.deepcopy(ld)), span),
                        _bin("land", _bin("lt", copy.deepcopy(ld), _zero(ld.type)), back))
        ok = _bin("land", ok, span)
        if off.type.is_signed:
            ok = _bin("land", _nonneg(copy.deepcopy(off)), ok)
        aid = self.site(s.base, f"frag_{s.op}", off.type, size, loc, fragment=(major, minor, str(ld.type)))
        return _bin("lor", ok, self.record(aid, off, ld))


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
