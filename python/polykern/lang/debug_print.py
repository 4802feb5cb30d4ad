"""Translation of ``pk.debug_print(fmt, args...)`` (docs/language.md "Debugging") into ``ir.Print``.

The format is checked against the arguments here, with errors located at the format or the argument:
its subset (``ir.debug_print.parse``), the count of arguments, and each argument's kind (integer or
float) against its conversion. Each argument is converted to the type it prints in
(``ir.debug_print.arg_type``) and assigned to a temporary first, so the ``Print`` holds only variables
and constants: the bounds checks and proofs see the argument's loads as ordinary assignments.
"""
from __future__ import annotations

import ast
from typing import List

from ..ir import debug_print as D
from ..ir import nodes as ir
from ..ir.types import bool_, f32, i32, u32
from .typing_rules import is_weak, retype_literal

USAGE = 'pk.debug_print("i=%d x=%f\\n", i, x[i])'


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def statement(tr, call: ast.Call, node) -> List[ir.Stmt]:
    if call.keywords:
        raise tr.syntax_error(f"keyword arguments are not supported in kernel calls: {USAGE}", call)
    if not call.args:
        raise tr.type_error(f"pk.debug_print() takes a format string, then its arguments: {USAGE}", call)
    fmt_node, arg_nodes = call.args[0], call.args[1:]
    fmt = _format_text(tr, fmt_node)
    try:
        parts = D.parse(fmt)
    except D.FormatError as e:
        raise tr.type_error(f"pk.debug_print format: {e}", fmt_node) from None
    specs = D.specs(parts)
    if len(specs) != len(arg_nodes):
        raise tr.type_error(f"pk.debug_print format {fmt!r} has {len(specs)} conversion"
                            f"{'s' if len(specs) != 1 else ''} but {len(arg_nodes)} argument"
                            f"{'s' if len(arg_nodes) != 1 else ''} follow it", call)
    if len(arg_nodes) > D.MAX_ARGS:
        raise tr.type_error(f"pk.debug_print takes at most {D.MAX_ARGS} arguments, got {len(arg_nodes)}", call)
    out: List[ir.Stmt] = []
    args: List[ir.Expr] = []
    for k, (spec, a_node) in enumerate(zip(specs, arg_nodes), 1):
        e = tr.scalar_expr(a_node)
        out.extend(tr.pending)
        tr.pending = []
        if is_weak(e):  # a literal takes the conversion's type
            e = retype_literal(e, f32 if spec.is_float else (i32 if spec.conv in D.SIGNED else u32),
                               f"the {_ordinal(k)} argument of pk.debug_print")
        t = e.type
        want = D.arg_type(spec, i32 if t == bool_ else t)
        if want is None:
            kind = "a float" if spec.is_float else "an integer"
            hint = "f32(...)" if spec.is_float else "i32(...)"
            raise tr.type_error(f"pk.debug_print: conversion {spec.text} (the {_ordinal(k)}) prints {kind}, but "
                                f"its argument '{ast.unparse(a_node)}' is {t}; convert it, e.g. {hint}, or "
                                f"use a {'float' if t.is_float else 'integer'} conversion", a_node)
        if isinstance(e, ir.Const) and t == want:
            args.append(e)
            continue
        value = e if t == want else ir.Cast(want, e)
        value.loc = e.loc
        tmp = tr.new_temp(want, a_node)
        assign = ir.Assign(tmp, value)
        assign.loc = tr.loc(a_node)
        out.append(assign)
        args.append(ir.Var(tmp, want))
    s = ir.Print(fmt, args)
    s.loc = tr.loc(call)
    out.append(s)
    return out


def _format_text(tr, node) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, (ast.Name, ast.Attribute)):
        try:
            v = tr.static_value(node)
        except KeyError:
            v = None
        if isinstance(v, str):
            return v
    raise tr.type_error(f"the format of pk.debug_print must be a string constant (a literal or a Python str "
                        f"the kernel sees), got '{ast.unparse(node)}': {USAGE}", node)
