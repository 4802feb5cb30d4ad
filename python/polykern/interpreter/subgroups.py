"""Subgroup collectives in the oracle (docs/language.md "Subgroups").

The interpreter runs a collective (``t = pk.subgroup_add(v)``) like a barrier of one subgroup: every
work-item evaluates its operands and stops (a generator yielding a :class:`Request`); once every lane of
a subgroup has stopped, :func:`check_arrival` makes sure they all stopped at the same collective (the
control flow to it may differ between subgroups, not within one: passes/uniformity.py), :func:`resolve`
computes each lane's result from the subgroup's requests and the interpreter resumes the lanes with
their values. Subgroups are consecutive runs of ``size`` work-items in the group's linear order
(``local_id(0)`` fastest), the last one partial when the group size is not a multiple: the CPU
backend's scheme, and the linear mapping every GPU backend uses.

Reductions fold in lane order with the language's operations (``values``); a device may
add floats in another order, which ``numerics`` records (``subgroup_add`` may reassociate) and the
interpreter's inexact taint carries to every value a float ``subgroup_add`` fed. A shuffle from a lane
that does not exist (past the end of a partial subgroup) is unspecified: the program has no single
meaning there, so the oracle refuses it.
"""
from __future__ import annotations

import math
from typing import List, Sequence

from ..ir import nodes as ir
from .values import OracleError, binop, math_fn

__all__ = ["Request", "check_arrival", "resolve", "register_value", "linear_id"]


class Request:
    """One work-item's arrival at a collective: its operands (value, and the lane for shuffles)."""

    __slots__ = ("where", "node", "values", "unspecified")

    def __init__(self, where: str, node: ir.Subgroup, values: Sequence):
        self.where, self.node, self.values = where, node, list(values)
        self.unspecified = False  # set by resolve: no backend promises the result (a zero's sign)


def check_arrival(stops: Sequence, done: Sequence[bool], sgid: int) -> None:
    """Refuse a subgroup whose lanes did not all stop at one collective: ``stops[k]`` is what lane ``k``
    waits at (a Request, a barrier's location, a fragment request; None with ``done[k]``: finished)."""
    first = next(r for r in stops if isinstance(r, Request))
    for k, (r, fin) in enumerate(zip(stops, done)):
        if isinstance(r, Request) and r.node is first.node:
            continue
        other = ("finished" if fin else f"reached subgroup_{r.node.op}() at {r.where}" if isinstance(r, Request)
                 else f"waits at {getattr(r, 'where', r)}")
        raise OracleError(f"{first.where}: subgroup_{first.node.op}() is reached by some lanes of subgroup {sgid} "
                          f"of a group while its lane {k} {other}: a collective in control flow that varies "
                          "within a subgroup")


def resolve(requests: List[Request], size: int) -> List:
    """The result of each request; ``requests[i]`` comes from the group's work-item ``i`` (linear), all at
    one collective (check_arrival)."""
    out: List = [None] * len(requests)
    first = requests[0]
    op, t = first.node.op, first.node.type
    fold = _folder(op, t, first.where)
    for base in range(0, len(requests), size):
        lanes = requests[base:base + size]
        n = len(lanes)
        if op in ("shuffle", "shuffle_xor"):
            for k, r in enumerate(lanes):
                arg = r.values[1] & (size - 1)
                src = arg if op == "shuffle" else k ^ arg
                if src >= n:
                    raise OracleError(f"{r.where}: subgroup_{op} reads lane {src} of a subgroup of {n} "
                                      "work-items (a partial subgroup): the value is unspecified")
                out[base + k] = lanes[src].values[0]
            continue
        if op == "broadcast_first":
            value = lanes[0].values[0]
        else:
            value = lanes[0].values[0]
            for r in lanes[1:]:
                value = fold(value, r.values[0])
            if op in ("min", "max") and t.is_float and value == 0 and _both_zeros(lanes):
                for r in lanes:  # which zero the device keeps is its choice (C99 F.9.9.2)
                    r.unspecified = True
        for k in range(n):
            out[base + k] = value
    return out


def _both_zeros(lanes) -> bool:
    signs = {math.copysign(1.0, r.values[0]) for r in lanes if r.values[0] == 0}
    return len(signs) == 2


def _folder(op: str, t, where: str):
    if op == "add":
        return binop("add", t, where)
    if op in ("min", "max"):
        return math_fn(op, t, where)
    if op == "any":
        return lambda a, b: a or b
    if op == "all":
        return lambda a, b: a and b
    return None


def register_value(op: str, li: int, size: int) -> int:
    """subgroup_size / subgroup_local_id / subgroup_id of the group's linear work-item ``li``."""
    return {"size": size, "local_id": li % size, "id": li // size}[op]


def linear_id(lid3, block) -> int:
    return lid3[0] + block[0] * (lid3[1] + block[1] * lid3[2])

