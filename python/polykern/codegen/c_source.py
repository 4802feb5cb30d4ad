"""IR -> C-like source (CUDA C, OpenCL C, Metal Shading Language): one emitter, dialect hooks.

:class:`CDialect` holds everything that differs between the languages (type names, qualifiers and
address spaces, special registers, barrier, atomics, math names, literals, kernel signature, half
support); :class:`KernelEmitter` walks the IR once for every dialect. :func:`emit_source` turns a list
of kernels into one translation unit: a header comment, the dialect's prologue (includes, pragmas),
the helper functions the kernels need (in a deterministic order), then the kernels.

Semantics carried over from ``polykern.ir.nodes`` (and how C is made to honour them):

- integer ``div``/``floordiv``/``mod`` are C's ``/`` and ``%``, shifts C's ``<<`` and ``>>``, and a float
  -> int conversion C's truncating cast: the cases C leaves undefined (a divisor of 0, ``MIN / -1``, a
  shift by the width or more, a float out of the integer's range or NaN) are written on the IR before
  (passes/legalize_numerics.py, as the dialect's target kind declares in ``Capabilities.ints``); float
  ``floordiv`` is ``floor(a / b)``, float ``mod`` is ``fmod``;
- arithmetic on 8/16-bit integers is computed in ``int`` (C promotion) and cast back, so it wraps at
  the type's width; ``u16 * u16`` goes through ``unsigned int`` (no signed overflow); left shifts of
  signed values go through the unsigned type (a negative left operand is UB in C); signed 32/64-bit
  ``+ - *`` are computed in the unsigned type and converted back, so they wrap instead of being
  undefined behaviour that an optimizer may exploit;
- ``land``/``lor`` print as ``&&``/``||``, which short-circuit exactly as the IR requires;
- ``For`` prints as a C ``for`` whose condition re-evaluates ``stop`` like the IR's ``while``;
- f16 is either native (MSL ``half``) or *storage-only* (CUDA, OpenCL): values live in ``float``
  registers, memory holds 16-bit halves, and every f16 arithmetic result is rounded to half
  (``pk_f16``). f32 has enough precision that this equals correctly rounded half arithmetic.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import KernelTypeError, SourceLoc
from ..ir import nodes as ir
from ..ir.dynamic_shared import dynamic_array
from ..ir.vector import VecGroup, iter_groups
from ..ir.types import BufferType, ScalarType, bf16, f16, u32, u64
from .c_dialect import (ADD, ATOM, BIN_PREC, BIN_TOKEN, COND, EQ, LAND, LOR, REL, SHIFT, SPACE_PRIVATE, UNARY,
                        _CONFUSING, _WIDENING, CDialect, Code, TranslationUnit, float_literal_digits,
                        int_literal_digits, space_of)
from .c_dialect import SPACE_GLOBAL, SPACE_SHARED  # noqa: F401  (the dialect API, also reachable from here)
from .c_names import NameTable, kernel_symbol

__all__ = ["Code", "CDialect", "TranslationUnit", "KernelEmitter", "emit_source", "space_of",
           "float_literal_digits", "int_literal_digits", "ATOM", "UNARY", "SPACE_GLOBAL", "SPACE_SHARED",
           "SPACE_PRIVATE"]


class KernelEmitter:
    """Emits one kernel function of a translation unit."""

    def __init__(self, fn: ir.Function, dialect: CDialect, unit: TranslationUnit):
        self.fn, self.d, self.unit = fn, dialect, unit
        self.symbol = kernel_symbol(fn.name)
        hf = fn.hopper  # barrier sets, accumulators and tensor maps are named objects too (ir/hopper.py)
        objects = [*hf.mbarriers, *hf.accs, *hf.vecs, *hf.tensor_maps] if hf is not None else []
        self.names = NameTable([p.name for p in fn.params] + list(fn.locals) + list(fn.arrays) + objects)
        self.lines: List[str] = []
        self.depth = 1
        self.loc: Optional[SourceLoc] = fn.loc
        self.checked: set = set()
        self.subst: Dict[int, Code] = {}  # id(IR node) -> temporary holding its value
        self.temps: List[str] = []        # declarations of those temporaries
        self.guard = ""                    # CDialect.loop_guard's condition, "" for none

    # ---------------------------------------------------------------- helpers
    def fail(self, feature: str, reason: str, node=None) -> KernelTypeError:
        loc = getattr(node, "loc", None) or self.loc or self.fn.loc
        return self.d.refuse(feature, reason, loc)

    def check_type(self, t: ScalarType, node=None) -> None:
        if t in self.checked:
            return
        why = self.d.unsupported_type(t) or (self.d.bf16_refusal() if t == bf16 else None)
        if why is not None:
            raise self.fail(f"type {t} (in kernel '{self.fn.name}')", why, node)
        self.checked.add(t)
        self.unit.features.add(t.name)

    def line(self, text: str) -> None:
        self.lines.append(self.d.indent * self.depth + text)

    # ---------------------------------------------------------------- kernel
    def emit(self) -> List[str]:
        fn, d = self.fn, self.d
        for p in fn.params:
            self.check_type(p.type.elem if p.is_buffer else p.type)
        regs = sorted({(e.kind, e.dim) for e in ir.walk_all_exprs(fn.body) if isinstance(e, ir.SpecialReg)},
                      key=lambda r: (ir.SPECIAL_REGS.index(r[0]), r[1]))
        if ir.uses_subgroups(fn):  # every subgroup register (a dialect may need them as parameters)
            regs += [("subgroup_" + op, 0) for op in ir.SUBGROUP_REGS]
        decls, prologue = [], []
        for i, p in enumerate(fn.params):
            name = self.names[p.name]
            if not p.is_buffer:
                raw = f"pk_arg{i}"
                stmt = d.scalar_param_prologue(self.unit, name, raw, p.type)
                if stmt is not None:
                    decls.append(d.param_decl(raw, p, i))
                    prologue.append(stmt)
                    continue
            decls.append(d.param_decl(name, p, i))
        dyn = dynamic_array(fn)
        if dyn is not None and d.dynamic_shared_param(self.names[dyn[0]], dyn[1]) is not None:
            decls.append(d.dynamic_shared_param(self.names[dyn[0]], dyn[1]))
        decls += d.hidden_params(fn)
        head = d.signature_attributes(fn, d.kernel_signature(self.symbol, decls, regs))
        self.lines = [head + " {"]
        for s in prologue:
            self.line(s)
        guard = d.loop_guard(fn)
        if guard is not None:
            self.line(guard[0])
            self.guard = guard[1] + " && "
        for name, t in fn.locals.items():  # the IR promises zero-initialized locals
            self.check_type(t)
            self.line(f"{d.type_name(t)} {self.names[name]} = 0;")
        for name, arr in fn.arrays.items():
            self.check_type(arr.elem)
            if arr.dynamic:
                try:
                    decl = d.dynamic_shared_decl(self.names[name], arr)
                except KernelTypeError as err:
                    raise KernelTypeError(err.message, err.loc or self.fn.loc) from None
                if decl is not None:
                    self.line(decl)
                continue
            decl = d.array_decl(self.names[name], arr)
            if arr.scope != "shared":  # local arrays start zeroed too; shared ones cannot be initialized
                decl = decl[:-1] + " = {0};"
            self.line(decl)
        d.kernel_declarations(self)
        decl_at = len(self.lines)
        self.block(fn.body)
        self.lines[decl_at:decl_at] = [d.indent + t for t in self.temps]
        if decl_at + len(self.temps) > 1 and fn.body:
            self.lines.insert(decl_at + len(self.temps), "")
        self.lines.append("}")
        return self.lines

    # ---------------------------------------------------------------- statements
    def block(self, stmts: List[ir.Stmt]) -> None:
        for group, part in iter_groups(stmts):
            if group is not None and self.vector_access(group):
                continue
            for s in part:
                self.stmt(s)

    def vector_access(self, g: VecGroup) -> bool:
        """One vector load/store for a pk.vload/pk.vstore group (False: the dialect has no vector type
        for it; the caller emits the scalar statements)."""
        elem = g.base.type.elem
        vt = self.d.vector_type(elem, g.n)
        if vt is None:
            return False
        outer = self.loc
        self.loc = g.stmts[0].loc or outer
        try:
            self.check_type(elem, g.stmts[0])
            ptr = self.d.vector_pointer(vt, self.names[g.base.name], g.base.type.readonly)
            k = self.expr(g.index)
            if g.kind == "load":
                tmp = f"pk_e{len(self.temps)}"
                self.temps.append(f"{vt} {tmp};")
                self.line(f"{tmp} = {ptr}[{k}];")
                for j, dest in enumerate(g.dests):
                    lane = self.d.vector_lane(self.unit, f"{tmp}.{'xyzw'[j]}", elem)
                    self.line(f"{self.names[dest]} = {lane};")
            else:
                parts = [self.d.vector_part(self.unit, self.expr(v), elem) for v in g.values]
                self.line(f"{ptr}[{k}] = {self.d.vector_value(vt, parts)};")
        finally:
            self.subst.clear()
            self.loc = outer
        return True

    def stmt(self, s: ir.Stmt) -> None:
        outer = self.loc
        self.loc = s.loc or outer
        try:
            self.hoist(s)
            self._stmt(s)
        finally:
            self.subst.clear()
            self.loc = outer

    # C leaves the order in which operands are evaluated unspecified; the IR (like Python) evaluates
    # left to right. That is only observable when an atomic shares a statement with another memory
    # access, e.g. ``x[0] + atomic_add(x, 0, 1)``: then every memory access of the statement is moved,
    # up to the last atomic, in IR order, into a temporary
    # (``pk_e0 = x[0]; pk_e1 = atomicAdd(...); ... = pk_e0 + pk_e1;``).
    # Operands that may not be evaluated (right of && and ||, arms of ?:) stay where they are, and so
    # do loop conditions, which are evaluated on every iteration.
    @staticmethod
    def _effects(e: ir.Expr, out: List[ir.Expr]) -> None:
        if isinstance(e, ir.BinOp) and e.op in ir.BINOPS_LOGIC:
            KernelEmitter._effects(e.a, out)
            return
        if isinstance(e, ir.Select):
            KernelEmitter._effects(e.cond, out)
            return
        for c in e.children():
            KernelEmitter._effects(c, out)
        if isinstance(e, (ir.Load, ir.Atomic)):
            out.append(e)

    def effects(self, s: ir.Stmt) -> List[ir.Expr]:
        if isinstance(s, ir.Store):
            exprs = [s.value, s.index]  # Python evaluates the right-hand side first
        elif isinstance(s, (ir.Assign, ir.ExprStmt, ir.If)):
            exprs = ir.stmt_exprs(s)
        else:
            return []
        out: List[ir.Expr] = []
        for e in exprs:
            self._effects(e, out)
        last = max((i for i, e in enumerate(out) if isinstance(e, ir.Atomic)), default=-1)
        if len(out) < 2 or last < 0:
            return []
        # Once everything before it is a temporary, the last atomic may stay in place unless other
        # accesses follow it; those are evaluated after it in any order once it is a temporary.
        return out[:last] if last == len(out) - 1 else out[:last + 1]

    def hoist(self, s: ir.Stmt) -> None:
        for e in self.effects(s):
            code = self.expr(e)
            name = f"pk_e{len(self.temps)}"
            self.temps.append(f"{self.d.type_name(e.type)} {name};")
            self.line(f"{name} = {code};")
            self.subst[id(e)] = Code(name)

    def _stmt(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.Assign):
            self.line(f"{self.names[s.name]} = {self.expr(s.value)};")
        elif isinstance(s, ir.Store):
            t = s.base.type.elem
            self.check_type(t, s)
            self.line(self.d.store(self.unit, self.names[s.base.name], self.expr(s.index), self.expr(s.value),
                                   t, space_of(s.base.type)))
        elif isinstance(s, ir.ExprStmt):
            self.line(f"{self.expr(s.expr)};")
        elif isinstance(s, ir.If):
            self.if_chain(s, "if")
        elif isinstance(s, ir.For):
            v = self.names[s.var]
            t = self.fn.locals[s.var]
            cmp = "<" if s.step > 0 else ">"
            step = f"{v} += {self.d.literal(s.step, t)}" if s.step > 0 else f"{v} -= {self.d.literal(-s.step, t)}"
            if s.step in (1, -1) and t.bits >= 32:
                step = f"{v}++" if s.step > 0 else f"{v}--"
            elif t.bits < 32:  # keep the wrap-around of the IR type
                sign = "+" if s.step > 0 else "-"
                step = f"{v} = ({self.d.type_name(t)})({v} {sign} {abs(s.step)})"
            self.line(f"for ({v} = {self.expr(s.start)}; {self.guard}{v} {cmp} {self.expr(s.stop).at(ADD)}; {step}) {{")
            self.nested(s.body)
        elif isinstance(s, ir.While):
            cond = self.expr(s.cond)
            self.line(f"while ({self.guard}({cond})) {{" if self.guard else f"while ({cond}) {{")
            self.nested(s.body)
        elif isinstance(s, ir.Break):
            self.line("break;")
        elif isinstance(s, ir.Continue):
            self.line("continue;")
        elif isinstance(s, ir.Return):
            self.line("return;")
        elif isinstance(s, ir.Barrier):
            self.line(self.d.barrier())
        elif isinstance(s, ir.MatrixOp):
            self.d.matrix(self, s)
        elif isinstance(s, ir.ASYNC_COPY_STMTS):
            self.d.async_copy(self, s)
        elif isinstance(s, ir.HopperOp):
            self.d.hopper(self, s)
        elif isinstance(s, ir.Print):
            self.line(self.d.print_call(self, s))
        else:
            raise self.fail(f"statement {type(s).__name__}", "unknown to the C source emitter", s)

    def if_chain(self, s: ir.If, keyword: str) -> None:
        self.line(f"{keyword} ({self.expr(s.cond)}) {{")
        self.depth += 1
        self.block(s.then)
        self.depth -= 1
        if len(s.orelse) == 1 and isinstance(s.orelse[0], ir.If) and not self.effects(s.orelse[0]):
            nested = s.orelse[0]
            outer = self.loc
            self.loc = nested.loc or outer
            try:
                self.if_chain(nested, "} else if")  # closes this branch and opens the next
            finally:
                self.loc = outer
        elif s.orelse:
            self.line("} else {")
            self.nested(s.orelse)
        else:
            self.line("}")

    def nested(self, body: List[ir.Stmt]) -> None:
        self.depth += 1
        self.block(body)
        self.depth -= 1
        self.line("}")

    # ---------------------------------------------------------------- expressions
    def expr(self, e: ir.Expr) -> Code:
        hoisted = self.subst.get(id(e))
        if hoisted is not None:
            return hoisted
        outer = self.loc
        self.loc = e.loc or outer
        try:
            if isinstance(e.type, ScalarType):
                self.check_type(e.type, e)
            return self._expr(e)
        finally:
            self.loc = outer

    def _expr(self, e: ir.Expr) -> Code:
        d, unit = self.d, self.unit
        if isinstance(e, ir.Const):
            return d.literal(e.value, e.type)
        if isinstance(e, ir.Var):
            return Code(self.names[e.name])
        if isinstance(e, ir.BinOp):
            return self.binop(e)
        if isinstance(e, ir.UnaryOp):
            return self.unop(e)
        if isinstance(e, ir.Cast):
            return d.cast(unit, self.expr(e.a), e.a.type, e.to)
        if isinstance(e, ir.Bitcast):
            return d.bitcast(self.expr(e.a), e.a.type, e.to)
        if isinstance(e, ir.Select):
            c, a, b = self.expr(e.cond), self.expr(e.a), self.expr(e.b)
            return Code(f"{c.at(LOR)} ? {a.at(LOR)} : {b.at(COND)}", COND)
        if isinstance(e, ir.Load):
            return d.load(unit, self.names[e.base.name], self.expr(e.index), e.type, space_of(e.base.type))
        if isinstance(e, ir.Call):
            args = [self.expr(a) for a in e.args]
            return d.math(unit, e.func, e.type, args)
        if isinstance(e, ir.SpecialReg):
            return d.special_reg(e.kind, e.dim)
        if isinstance(e, ir.Atomic):
            return self.atomic(e)
        if isinstance(e, ir.Subgroup):
            return self.subgroup(e)
        if isinstance(e, ir.WgReg):  # a warpgroup register array (the dialect declares it: CUDA's hopper.py)
            return Code(f"{self.names[e.name]}[{self.expr(e.index)}]")
        raise self.fail(f"expression {type(e).__name__}", "unknown to the C source emitter", e)

    def subgroup(self, e: ir.Subgroup) -> Code:
        args = [self.expr(a) for a in e.args]
        try:
            return self.d.subgroup(self.unit, e.op, e.type, args)
        except KernelTypeError as err:
            if err.loc is None:  # dialects refuse without a location; point at the user's call
                raise KernelTypeError(err.message, e.loc or self.loc or self.fn.loc) from None
            raise

    def binop(self, e: ir.BinOp) -> Code:
        d, t, op = self.d, e.a.type, e.op
        a, b = self.expr(e.a), self.expr(e.b)
        if t.is_float and op == "mod":
            return d.fmod(self.unit, t, a, b)
        if t.is_float and op == "floordiv":
            return d.math(self.unit, "floor", t, [self.binop_code("div", t, a, b)])
        return self.binop_code(op, t, a, b)

    def binop_code(self, op: str, t: ScalarType, a: Code, b: Code) -> Code:
        d = self.d
        prec = BIN_PREC[op]
        if t.is_int and op == "shl" and (t.is_signed or t.bits < 32):
            ut = d.TYPE_NAMES["u32"] if t.bits < 32 else d.unsigned_of(t)
            return Code(f"({d.type_name(t)})(({ut}){a.at(UNARY)} << {b.at(SHIFT - 1)})", UNARY)
        if t.is_int and t.is_signed and t.bits >= 32 and op in ("add", "sub", "mul"):
            # The IR's integers wrap; C's signed overflow is undefined (and optimizers exploit it),
            # so signed int/long arithmetic is done in the unsigned type and converted back.
            ua, ub = self.unsigned_operand(a, t), self.unsigned_operand(b, t)
            inner = Code(f"{self.operand(ua, prec, False)} {BIN_TOKEN[op]} {self.operand(ub, prec, True)}", prec)
            return Code(f"({d.type_name(t)})({inner.text})", UNARY, wrapped=inner)
        if t.is_int and t.bits < 32 and op == "mul" and not t.is_signed and t.bits == 16:
            ut = d.TYPE_NAMES["u32"]
            return Code(f"({d.type_name(t)})(({ut}){a.at(UNARY)} * ({ut}){b.at(UNARY)})", UNARY)
        text = f"{self.operand(a, prec, False)} {BIN_TOKEN[op]} {self.operand(b, prec, True)}"
        if t.is_int and t.bits < 32 and op in _WIDENING:
            return Code(f"({d.type_name(t)})({text})", UNARY)
        if t == f16 and not d.half_native and op in ir.BINOPS_ARITH:
            return d.round_half(self.unit, Code(text, prec))
        return Code(text, prec)

    def unsigned_operand(self, c: Code, t: ScalarType) -> Code:
        """``c`` (of signed type ``t``) as an expression of the unsigned type of the same width."""
        if c.wrapped is not None:
            return c.wrapped
        ut = u64 if t.bits == 64 else u32
        literal = re.fullmatch(r"(-?\d+)(ll)?", c.text)
        if literal:
            return self.d.int_literal(int(literal.group(1)) % (1 << t.bits), ut)
        return Code(f"({self.d.unsigned_of(t)}){c.at(UNARY)}", UNARY)

    @staticmethod
    def operand(c: Code, prec: int, right: bool) -> str:
        if c.prec == ATOM or c.prec == UNARY:
            return c.text
        if c.prec > prec or (right and c.prec == prec):
            return f"({c.text})"
        if (c.prec in _CONFUSING or prec in _CONFUSING) and c.prec != prec:
            return f"({c.text})"
        if c.prec == LAND and prec == LOR:
            return f"({c.text})"
        if c.prec in (REL, EQ) and prec in (REL, EQ):
            return f"({c.text})"
        return c.text

    def unop(self, e: ir.UnaryOp) -> Code:
        d, t = self.d, e.type
        a = self.expr(e.a)
        inner = a.text if a.prec <= UNARY else f"({a.text})"
        if e.op == "not":
            return Code(f"!{inner}", UNARY)
        if e.op == "neg" and t.is_int and t.is_signed and t.bits >= 32:
            # -MIN overflows in C (undefined; PoCL gave -(-2**31) % 25 == 23): wrap as the IR says, 0 - x
            # computed in the unsigned type like every signed + - *.
            return self.binop_code("sub", t, self.d.int_literal(0, t), a)
        token = "-" if e.op == "neg" else "~"
        if inner.startswith(token):  # "- -x" / "--x" would not read as intended
            inner = f"({inner})"
        code = Code(f"{token}{inner}", UNARY)
        if t.is_int and t.bits < 32:
            code = Code(f"({d.type_name(t)})({code.text})", UNARY)
            return d.narrow_negate(self.unit, t, code) if e.op == "neg" and t.is_signed else code
        return code

    def atomic(self, e: ir.Atomic) -> Code:
        t = e.type
        space = space_of(e.base.type)
        if space == SPACE_PRIVATE:
            raise self.fail(f"atomic_{e.op} on the local array '{e.base.name}'",
                            "atomics need a Buffer or a shared array", e)
        if isinstance(e.base.type, BufferType) and e.base.type.readonly:
            raise self.fail(f"atomic_{e.op} on readonly Buffer '{e.base.name}'", "the buffer is readonly", e)
        index = self.expr(e.index)
        compare = self.expr(e.compare) if e.compare is not None else None
        value = self.expr(e.value)
        ptr = f"&{self.names[e.base.name]}[{index}]"
        try:
            return self.d.atomic(self.unit, e.op, t, space, ptr, value, compare)
        except KernelTypeError as err:
            if err.loc is None:  # dialects refuse without a location; point at the user's call
                raise KernelTypeError(err.message, e.loc or self.loc or self.fn.loc) from None
            raise


def emit_source(funcs: Sequence[ir.Function], dialect: CDialect, header: str = "") -> Tuple[str, Dict[str, str]]:
    """One translation unit for ``funcs``. Returns (source text, {kernel name: C symbol})."""
    unit = TranslationUnit(dialect)
    bodies, symbols = [], {}
    for fn in funcs:
        em = KernelEmitter(fn, dialect, unit)
        bodies.append(em.emit())
        symbols[fn.name] = em.symbol
    lines: List[str] = []
    if header:
        lines.extend("// " + h if h else "//" for h in header.split("\n"))
        lines.append("")
    pro = dialect.prologue(unit)
    if pro:
        lines.extend(pro)
        lines.append("")
    lines.extend(unit.helper_lines())
    for i, body in enumerate(bodies):
        if i:
            lines.append("")
        lines.extend(body)
    return "\n".join(lines) + "\n", symbols

