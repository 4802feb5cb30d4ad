"""A fast structural copy of an IR function (``copy.deepcopy`` is ten times slower on large kernels).

Statements and expressions are copied; what IR nodes only refer to and never change (types, source
locations, strings, numbers) is shared. Iterative, so any expression depth is fine.
"""
from __future__ import annotations

import copy
import dataclasses

from ..ir import nodes as ir

_NODE = (ir.Expr, ir.Stmt, ir.Param)
_CHILD_FIELDS: dict = {}


def child_fields(cls):
    """The dataclass fields of IR node class ``cls`` that may hold child nodes (all but type and loc)."""
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = _CHILD_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.name not in ("type", "loc"))
    return names


def clone_function(fn: ir.Function) -> ir.Function:
    out = copy.copy(fn)
    out.locals, out.arrays = dict(fn.locals), dict(fn.arrays)
    memo: dict = {}
    out.params = [_clone(p, memo) for p in fn.params]
    out.body = [_clone(s, memo) for s in fn.body]
    return out


def _clone(root, memo):
    """Copy ``root`` and every node below it (a node reachable twice is copied once)."""
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        if id(node) in memo:
            continue
        new = memo[id(node)] = object.__new__(type(node))
        new.__dict__.update(node.__dict__)
        order.append(node)
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, _NODE):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, _NODE))
    for node in order:
        new = memo[id(node)]
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, _NODE):
                setattr(new, name, memo[id(value)])
            elif isinstance(value, list):
                setattr(new, name, [memo[id(v)] if isinstance(v, _NODE) else v for v in value])
    return memo[id(root)]
