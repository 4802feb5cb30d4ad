"""Shifts, rotates and funnel shifts by a variable amount, kept out of LLVM's Hexagon rotate lowering.

The language takes shift amounts modulo the width (docs/language.md 7.1). LLVM's optimizer turns a
rotate or funnel shift written with shifts (masked or not) into ``llvm.fshl``/``llvm.fshr``, which
also take the amount modulo the width, and drops the ``& (width-1)``; where it cannot (a shift with
other uses), the instruction selector forms the same rotate/funnel node from ``or`` of two shifts.
LLVM's Hexagon backend (LLVM 22 in llvmlite 0.50) lowers those nodes wrongly:

- a variable-amount i32 one becomes ``asl(combine(a, b), k)`` and an i64 one ``asl(a, k) | lsr(b,
  64 - k)`` with ``k`` unreduced (the selector's demanded-bits simplification removes any mask, as
  the node means "modulo the width"), and Hexagon's register shifts read the low 7 bits of ``k`` as a
  *signed* amount: a u32 rotate of 0x12345678 by 36 gave 0x23456780, by 68 gave 0;
- an i64 rotate right / fshr by ``s`` becomes ``lsr(b, s) | asl(a, 64 - s)``: for ``s == 0``, 64
  reads as -64, and ``asl`` by -64 is an arithmetic shift right by 64: all ones when the top bit is
  set (u64 rotates by 0, 64, 128).

So after LLVM's optimizer and before code generation (:func:`opaque_shifts`):

- every i32/i64 ``shl``/``lshr``/``ashr`` by a variable amount becomes the Hexagon register shift
  intrinsic it selects to anyway (``llvm.hexagon.S2.{asl,lsr,asr}.r.{r,p}``), which the selector's
  generic combines do not look into, so no rotate node is formed from them (the amount is already
  reduced: passes/legalize_numerics.py masks it). Vectors of them go lane by lane: the
  selector scalarizes them and fused the lanes into i64 rotates. The cost: a shift feeding an add
  or or is no longer merged into Hexagon's accumulating forms (``r1 += asl(r0, r2)``);
- every ``llvm.fshl``/``llvm.fshr`` by a variable amount becomes code that reduces the amount itself
  and shifts with those intrinsics, nothing folding the reduction away. With ``s`` the amount
  modulo the width ``w``: i8/i16: ``c = (a << w) | b`` in i32, fshl = ``(c asl s) >> w``, fshr =
  ``c lsr s``; i32: ``c = combine(a, b)``, fshl = high word of ``c asl s``, fshr = low word of
  ``c lsr s``; i64: fshl = ``(a asl s) | (b lsr (64 - s))``, fshr = ``(b lsr s) | (a lsr (s - 64))``
  (a negative ``lsr`` amount shifts left; for ``s == 0`` both far amounts read as -64, a left shift
  by 64, which is 0); vectors lane by lane;
- a funnel shift by an integer literal keeps ``llvm.fsh*`` (``rol(r, #n)``), its literal reduced
  modulo the width (InstCombine already does that).

The replacements are calls of always-inline helpers that :func:`inline_helpers` inlines (LLVM's
always-inliner and global DCE only: nothing else runs, so nothing re-forms what was replaced).
i8/i16 shifts are left alone: they are promoted to i32 with their own masking, and no rotate node
is formed from them.
"""
from __future__ import annotations

import re
from typing import Dict, List, Tuple

from polykern.errors import CompileError

__all__ = ["HELPER_PREFIX", "opaque_shifts", "inline_helpers"]

HELPER_PREFIX = "pk.hexagon."
_FUNNEL = re.compile(r"@llvm\.(fsh[lr])\.((?:v(\d+))?i(8|16|32|64))\(")
_SHIFT = re.compile(r"^(\s*%[-\w.$]+ = )(shl|lshr|ashr)((?: nuw| nsw| exact)*) ((?:<(\d+) x )?i(32|64)>?) ([^\n]*)$",
                    re.M)
_LITERAL = re.compile(r"^i(\d+) (-?\d+)$")

_INTRINSICS = {  # Hexagon shift-by-register intrinsics (value type, i32 amount)
    f"{op}.r.{sfx}": ty for op in ("asl", "lsr", "asr") for sfx, ty in (("r", "i32"), ("p", "i64"))
}
_DECLS = {f"@llvm.hexagon.S2.{name}": f"declare {ty} @llvm.hexagon.S2.{name}({ty}, i32)\n" for name, ty in _INTRINSICS.items()}
_DECLS["@llvm.hexagon.A2.combinew"] = "declare i64 @llvm.hexagon.A2.combinew(i32, i32)\n"
_SHIFT_OPS = {"shl": "asl", "lshr": "lsr", "ashr": "asr"}


def _split_args(text: str, start: int) -> Tuple[List[str], int]:
    """The top-level comma-separated arguments of the call whose ``(`` is at ``start - 1``, and
    the index of its closing ``)``."""
    depth, args, cur = 0, [], start
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            if depth == 0:
                args.append(text[cur:i].strip())
                return args, i
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[cur:i].strip())
            cur = i + 1
    raise CompileError("hexagon: a funnel shift call in the optimized LLVM IR has no closing parenthesis",
                       log=text[max(0, start - 40):start + 200])


def _shift(name: str, dst: str, val: str, amount: str) -> str:
    ty = _INTRINSICS[name]
    return f"  {dst} = call {ty} @llvm.hexagon.S2.{name}({ty} {val}, i32 {amount})\n"


def _define(name: str, ty: str, params: str, body: str) -> str:
    return f"define internal {ty} @{HELPER_PREFIX}{name}({params}) alwaysinline nounwind {{\n{body}  ret {ty} %r\n}}\n"


def _plain_helper(op: str, bits: int) -> str:
    t = f"i{bits}"
    amount = "%k" if bits == 32 else "%k32"
    body = "" if bits == 32 else "  %k32 = trunc i64 %k to i32\n"
    body += _shift(f"{_SHIFT_OPS[op]}.r.{'r' if bits == 32 else 'p'}", "%r", "%a", amount)
    return _define(f"{op}.{t}", t, f"{t} %a, {t} %k", body)


def _funnel_helper(op: str, bits: int) -> str:
    t = f"i{bits}"
    body = f"  %s = and {t} %k, {bits - 1}\n"
    if bits == 64:
        body += "  %s32 = trunc i64 %s to i32\n"
        if op == "fshl":
            body += "  %f = sub i32 64, %s32\n" + _shift("asl.r.p", "%x", "%a", "%s32") + _shift("lsr.r.p", "%y", "%b", "%f")
        else:
            body += "  %f = sub i32 %s32, 64\n" + _shift("lsr.r.p", "%x", "%b", "%s32") + _shift("lsr.r.p", "%y", "%a", "%f")
        body += "  %r = or i64 %x, %y\n"
    else:
        wide, sfx, s = ("i64", "p", "%s") if bits == 32 else ("i32", "r", "%s32")
        if bits == 32:  # the register pair a:b
            body += "  %c = call i64 @llvm.hexagon.A2.combinew(i32 %a, i32 %b)\n"
        else:
            body += (f"  %s32 = zext {t} %s to i32\n  %ha = zext {t} %a to i32\n  %hb = zext {t} %b to i32\n"
                     f"  %hi = shl i32 %ha, {bits}\n  %c = or i32 %hi, %hb\n")
        if op == "fshl":
            body += _shift(f"asl.r.{sfx}", "%x", "%c", s) + f"  %y = lshr {wide} %x, {min(bits, 32)}\n"
        else:
            body += _shift(f"lsr.r.{sfx}", "%y", "%c", s)
        body += f"  %r = trunc {wide} %y to {t}\n"
    return _define(f"{op}.{t}", t, f"{t} %a, {t} %b, {t} %k", body)


def _vector_helper(op: str, lanes: int, bits: int) -> str:
    """``op`` lane by lane through the scalar helper (operands ``a, b, k`` of a funnel shift, ``a, k``
    of a plain shift)."""
    t, v = f"i{bits}", f"<{lanes} x i{bits}>"
    names = "ak" if op in _SHIFT_OPS else "abk"
    body, acc = [], "poison"
    for i in range(lanes):
        body += [f"  %{n}{i} = extractelement {v} %{n}, i32 {i}\n" for n in names]
        args = ", ".join(f"{t} %{n}{i}" for n in names)
        body.append(f"  %l{i} = call {t} @{HELPER_PREFIX}{op}.{t}({args})\n"
                    f"  {'%r' if i == lanes - 1 else f'%v{i}'} = insertelement {v} {acc}, {t} %l{i}, i32 {i}\n")
        acc = f"%v{i}"
    return _define(f"{op}.v{lanes}{t}", v, ", ".join(f"{v} %{n}" for n in names), "".join(body))


def _funnels(ll: str, helpers: Dict[Tuple[str, int, int], None]) -> str:
    out, pos = [], 0
    for m in _FUNNEL.finditer(ll):
        if ll.startswith("declare", ll.rfind("\n", 0, m.start()) + 1):
            continue
        op, tyname, lanes, bits = m.group(1), m.group(2), int(m.group(3) or 0), int(m.group(4))
        args, close = _split_args(ll, m.end())
        lit = _LITERAL.match(args[2]) if not lanes else None
        out.append(ll[pos:m.start()])
        if lit:
            args[2] = f"i{bits} {int(lit.group(2)) % bits}"
            out.append(f"@llvm.{op}.{tyname}(" + ", ".join(args) + ")")
        else:
            helpers[(op, lanes, bits)] = None
            if lanes:
                helpers[(op, 0, bits)] = None
            out.append(f"@{HELPER_PREFIX}{op}.{tyname}(" + ", ".join(args) + ")")
        pos = close + 1
    out.append(ll[pos:])
    return "".join(out)


def _plain_shifts(ll: str, helpers: Dict[Tuple[str, int, int], None]) -> str:
    def sub(m):
        op, ty, lanes, bits = m.group(2), m.group(4), int(m.group(5) or 0), int(m.group(6))
        operands, _ = _split_args(m.group(7) + ")", 0)
        if len(operands) != 2 or not operands[1].startswith("%"):  # a literal amount, or metadata
            return m.group(0)
        helpers[(op, lanes, bits)] = None
        if lanes:
            helpers[(op, 0, bits)] = None
        name = f"v{lanes}i{bits}" if lanes else ty
        return f"{m.group(1)}call {ty} @{HELPER_PREFIX}{op}.{name}({ty} {operands[0]}, {ty} {operands[1]})"

    return _SHIFT.sub(sub, ll)


def opaque_shifts(ll: str) -> str:
    """``ll`` (optimized LLVM IR text) with every variable-amount i32/i64 shift and funnel shift
    replaced by a call of an always-inline helper (see the module doc), and every literal funnel
    shift amount reduced modulo the width; unchanged when it has none. Run :func:`inline_helpers`
    on the result."""
    helpers: Dict[Tuple[str, int, int], None] = {}
    text = _plain_shifts(_funnels(ll, helpers) if "@llvm.fsh" in ll else ll, helpers)
    if not helpers:
        return text
    defs = "".join(_vector_helper(op, lanes, bits) if lanes else
                   (_plain_helper if op in _SHIFT_OPS else _funnel_helper)(op, bits) for op, lanes, bits in helpers)
    decls = "".join(d for name, d in _DECLS.items() if f"{name}(" in defs and f"{name}(" not in ll)
    return f"{text}\n{decls}{defs}"


def inline_helpers(ll: str, tm) -> str:
    """Inline the helpers :func:`opaque_shifts` added and drop their definitions."""
    if HELPER_PREFIX not in ll:
        return ll
    import llvmlite.binding as llvm

    from polykern.codegen.llvm_target import LLVM_LOCK

    with LLVM_LOCK:
        ctx = llvm.create_context()
        mod = llvm.parse_assembly(ll, context=ctx)
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
        mpm = llvm.create_new_module_pass_manager()
        mpm.add_always_inliner_pass()
        mpm.add_global_dead_code_eliminate_pass()
        mpm.run(mod, pb)
        mod.verify()
        return str(mod)
